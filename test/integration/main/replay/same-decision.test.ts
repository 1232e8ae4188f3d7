// The live guard and the replay weigh an edit with the same numbers. A real session is replayed; at every
// boundary the cache view the replay handed its pass must be the one the extension computes from the same
// projection with Pi's own model for the request (ctx.model: the registry entry, found here through a
// ModelRegistry of Pi's, not the replay's price book), and at the end it must agree with the cache
// behaviour and prices the report shows for that model.
import { join } from "node:path";
import { InMemoryCredentialStore } from "@earendil-works/pi-ai";
import { ModelRegistry, ModelRuntime } from "@earendil-works/pi-coding-agent";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { breakEvenFamily } from "../../../../src/core/cache/cache-behaviour.ts";
import { LOCAL_MODEL_REF } from "../../../../src/core/classifier/lexical.ts";
import type { SessionMetrics } from "../../../../src/core/replay/replay-metrics.ts";
import { DEFAULT_CONFIG } from "../../../../src/core/shared/config.ts";
import { localClassify } from "../../../../src/main/pass/classifier.ts";
import {
  assistantMessages,
  hostCacheView,
  PassPipeline,
  type PassRequest,
} from "../../../../src/main/pass/pass-pipeline.ts";
import { createTaskRunner, type TaskRunner } from "../../../../src/main/platform/pool.ts";
import { LOCAL_NOTE, replayFiles } from "../../../../src/main/replay/command.ts";

const FIXTURES = join(import.meta.dirname, "../../../..", "test", "fixtures", "sessions");
const classifier = { ref: LOCAL_MODEL_REF, note: LOCAL_NOTE, classify: localClassify() };

let runner: TaskRunner;
let registry: ModelRegistry;
beforeAll(async () => {
  runner = await createTaskRunner({ backend: "piscina", minThreads: 1, maxThreads: 1 });
  const runtime = await ModelRuntime.create({
    credentials: new InMemoryCredentialStore(),
    modelsPath: null,
    refreshOnCreate: false,
  });
  registry = new ModelRegistry(runtime);
});
afterAll(async () => {
  await runner.destroy();
});

/** Replays one session and returns its metrics and every pass request the replay made. */
async function replayWithRequests(file: string): Promise<{ session: SessionMetrics; requests: PassRequest[] }> {
  const requests: PassRequest[] = [];
  const original = PassPipeline.prototype.pass;
  const spy = vi.spyOn(PassPipeline.prototype, "pass").mockImplementation(function (this: PassPipeline, request) {
    requests.push(request);
    return original.call(this, request);
  });
  try {
    const result = await replayFiles([join(FIXTURES, file)], { classifier, config: DEFAULT_CONFIG, runner });
    return { session: result.report.sessions[0] as SessionMetrics, requests };
  } finally {
    spy.mockRestore();
  }
}

describe("the extension's break-even inputs are the replay's at each boundary", () => {
  for (const [file, family] of [
    ["badlogic__pi-mono__large-session.jsonl", "anthropic"],
    // No cache token in any request: learned "none" (Pi's code alone would say automatic caching).
    ["castai__kimchi-dev__session.jsonl", "none"],
  ] as const) {
    it(file, async () => {
      const { session, requests } = await replayWithRequests(file);
      expect(requests.length).toBeGreaterThan(0);
      for (const r of requests) {
        const last = assistantMessages(r.context).at(-1) as { provider?: string; model?: string };
        const ctxModel = last?.provider && last.model ? registry.find(last.provider, last.model) : undefined;
        const model = ctxModel ?? { api: "openai-completions", provider: last?.provider, id: last?.model };
        const extension = hostCacheView(r.context, model);
        expect({ family: r.family, prices: r.prices, pins: r.pins }).toEqual({
          family: extension.family,
          prices: extension.prices,
          pins: extension.pins,
        });
      }
      // The last boundary decides with the behaviour and prices the report shows for the model.
      const last = requests.at(-1) as PassRequest;
      const shown = session.money?.models.find((m) => m.requests > 0 && m.model.endsWith(`/${lastModel(last)}`));
      expect(last.family).toBe(family);
      expect(breakEvenFamily(shown?.behaviour ?? "automatic")).toBe(family);
      if (shown?.prices) {
        expect(last.prices?.cacheRead).toBeCloseTo(shown.prices.cacheRead, 9);
        expect(last.prices?.cacheWrite).toBeCloseTo(shown.prices.cacheWrite, 9);
      }
    });
  }
});

function lastModel(r: PassRequest): string {
  return String((assistantMessages(r.context).at(-1) as { model?: string })?.model);
}
