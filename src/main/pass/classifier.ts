// Finds the configured classifier in Pi's model registry and adapts `classify()` to the queue's
// ClassifyFn. Pi's client resolves the credential per request; the retry is ours, so maxRetries is 0.
// `local/lexical` names the embedded offline scorer (core/classifier/lexical.ts) instead: no registry, no key.
import type { ClassifierApi, ClassifierModel, ClassifierResult } from "@earendil-works/pi-ai";
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import { sanitizeAnswers } from "../../core/classifier/answers.ts";
import { classifyLexical, isLocalModelRef } from "../../core/classifier/lexical.ts";
import { parseModelRef } from "../../core/shared/model-ref.ts";
import { redact } from "../../core/shared/redact.ts";
import type { ClassifierOutcome } from "../../core/shared/types.ts";
import { nextTurn } from "../platform/pace.ts";
import { classifierSecrets } from "../platform/secrets.ts";
import type { ClassifyFn } from "./classify-queue.ts";

type Registry = ExtensionContext["modelRegistry"];

export type ClassifierLookup =
  | { ok: true; model: ClassifierModel<ClassifierApi>; ref: string; local?: undefined }
  /** The embedded `local/lexical` scorer: no registry, no key, no network. */
  | { ok: true; local: true; ref: string }
  | { ok: false; problem: "bad-model" | "not-found" | "no-key"; ref: string; provider?: string };

export function findClassifier(registry: Registry, ref: string): ClassifierLookup {
  const parsed = parseModelRef(ref);
  if (!parsed) return { ok: false, problem: "bad-model", ref };
  if (isLocalModelRef(ref)) return { ok: true, local: true, ref };
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

/**
 * Calls through Pi's registry, which resolves the provider, auth and headers. `fetch`, when given,
 * carries the HTTP request (thread-fetch.ts runs it on a worker thread). An error's text is redacted
 * with every credential and header value of the classifier's requests, as Pi resolves them now.
 */
export function piClassify(
  registry: Registry,
  model: ClassifierModel<ClassifierApi>,
  fetch?: typeof globalThis.fetch,
): ClassifyFn {
  // No `timeoutMs` for pi-ai: the signal already aborts at the deadline, and pi-ai's own timeout would
  // keep a timer, a signal and their listeners alive for the whole deadline after each call has answered
  // (about 1.3 KiB a call, 1.6 MiB for a 1,200-request pass, on Pi's heap).
  return async (request, { signal }) => {
    let outcome: ClassifierOutcome;
    try {
      const result = await registry.classify(
        model,
        { state: request.state, questions: request.questions } as Parameters<Registry["classify"]>[1],
        { signal, maxRetries: 0, ...(fetch ? { fetch } : {}) },
      );
      outcome = toOutcome(result);
    } catch (error) {
      // classify() is documented never to reject; a throw is reported (redacted) like any other error.
      outcome = { status: "error", error: error instanceof Error ? error.message : String(error) };
    }
    if (outcome.error) outcome.error = redact(outcome.error, await classifierSecrets(registry, model));
    return outcome;
  };
}

/**
 * The embedded scorer as a ClassifyFn: answers at once and costs nothing. It scores on the calling
 * thread, so requests are scored one at a time, each in its own event-loop turn: the queue starts
 * several at once, and together they would hold the thread for the sum of their times.
 */
export function localClassify(): ClassifyFn {
  let chain: Promise<unknown> = Promise.resolve();
  return (request, { signal }) => {
    const run = chain.then(nextTurn).then((): ClassifierOutcome => {
      if (signal.aborted) return { status: "error", error: "aborted" };
      const began = performance.now();
      const answers = sanitizeAnswers(classifyLexical(request));
      return { status: "stop", answers, costUsd: 0, ms: Math.round(performance.now() - began) };
    });
    // swallow-ok: the chain only orders the calls; each caller gets its own outcome from `run`.
    chain = run.catch(() => undefined);
    return run;
  };
}

/** The classify function for a lookup that succeeded: Pi's registry, or the embedded scorer. */
export function classifierFor(
  registry: Registry,
  found: Extract<ClassifierLookup, { ok: true }>,
  fetch?: typeof globalThis.fetch,
): ClassifyFn {
  return found.local ? localClassify() : piClassify(registry, found.model, fetch);
}
