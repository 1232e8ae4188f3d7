// Finds the configured classifier in Pi's model registry and adapts `classify()` to the queue's
// ClassifyFn. Pi's client resolves the credential per request; the retry is ours, so maxRetries is 0.
import type { ClassifierApi, ClassifierModel, ClassifierResult } from "@earendil-works/pi-ai";
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import { sanitizeAnswers } from "../core/answers.ts";
import { parseModelRef } from "../core/config.ts";
import type { ClassifierOutcome } from "../core/types.ts";
import type { ClassifyFn } from "./classify-queue.ts";

type Registry = ExtensionContext["modelRegistry"];

export type ClassifierLookup =
  | { ok: true; model: ClassifierModel<ClassifierApi>; ref: string }
  | { ok: false; problem: "bad-model" | "not-found" | "no-key"; ref: string; provider?: string };

export function findClassifier(registry: Registry, ref: string): ClassifierLookup {
  const parsed = parseModelRef(ref);
  if (!parsed) return { ok: false, problem: "bad-model", ref };
  const model = registry.findOfType("classifier", parsed.provider, parsed.id);
  if (!model) return { ok: false, problem: "not-found", ref, provider: parsed.provider };
  const auth = registry.getProviderAuthStatus(parsed.provider);
  if (!auth.configured) return { ok: false, problem: "no-key", ref, provider: parsed.provider };
  return { ok: true, model: model as ClassifierModel<ClassifierApi>, ref };
}

export function toOutcome(result: ClassifierResult): ClassifierOutcome {
  const inputTokens = result.usage?.input;
  const costUsd = result.usage?.cost?.total;
  const usage = {
    ...(typeof inputTokens === "number" ? { inputTokens } : {}),
    ...(typeof costUsd === "number" ? { costUsd } : {}),
  };
  if (result.stopReason !== "stop") {
    return { status: "error", error: result.errorMessage ?? result.stopReason, ...usage };
  }
  return { status: "stop", answers: sanitizeAnswers(result.answers), ...usage };
}

export function piClassify(registry: Registry, model: ClassifierModel<ClassifierApi>): ClassifyFn {
  return async (request, { signal, timeoutMs }) => {
    const result = await registry.classify(
      model,
      { state: request.state, questions: request.questions } as Parameters<Registry["classify"]>[1],
      { signal, timeoutMs, maxRetries: 0 },
    );
    return toOutcome(result);
  };
}
