// How a pass moves data between threads: a large first pass sends the session in slices before the plan,
// and the classifier requests come back from the worker a window at a time as the queue starts them.
import { describe, expect, it } from "vitest";
import { DEFAULT_CONFIG } from "../src/core/config.ts";
import type { ClassifierOutcome, SnapEntry } from "../src/core/types.ts";
import type { ClassifyFn } from "../src/main/classify-queue.ts";
import { createTaskRunner, type TaskRunner } from "../src/main/pool.ts";
import { runPass } from "../src/main/run-end.ts";
import { WorkerMirror } from "../src/main/worker-mirror.ts";
import { assistantEntry, toolCall, toolResultEntry, userEntry } from "./support/snap.ts";

/** A run with `n` grep outputs of `size` characters each. */
function session(n: number, size: number): SnapEntry[] {
  const out: SnapEntry[] = [userEntry("u", "where is hot_symbol used?")];
  for (let i = 0; i < n; i++) {
    const lines = Array.from(
      { length: Math.ceil(size / 40) },
      (_, l) => `src/f${i}_${l % 9}.ts:${l + 1}:${l === 3 ? "hot_symbol()" : "cold()"} padding`,
    );
    out.push(assistantEntry(`a${i}`, "", [toolCall(`c${i}`, "bash", { command: `rg ${i}` })]));
    out.push(toolResultEntry(`t${i}`, `c${i}`, "bash", lines.join("\n")));
  }
  out.push(assistantEntry("z", "hot_symbol is used in src/f0_3.ts"));
  return out;
}

function counting(inner: TaskRunner): TaskRunner & { calls: Record<string, number> } {
  const calls: Record<string, number> = {};
  return {
    calls,
    backend: inner.backend,
    destroy: () => inner.destroy(),
    run: (name, input, options) => {
      calls[name] = (calls[name] ?? 0) + 1;
      return inner.run(name, input, options);
    },
  };
}

const keepNothing: ClassifyFn = async (request) => {
  const answers: NonNullable<ClassifierOutcome["answers"]> = {
    keep_whole: { type: "bool", probability: 0.05 },
    focus: { type: "choice", choice: "none", probabilities: { none: 0.9 } },
  };
  for (const id of Object.keys(request.questions))
    if (id.startsWith("chunk_")) answers[id] = { type: "bool", probability: 0.05 };
  return { status: "stop", answers };
};

describe("pass transport", () => {
  it("sends a large first sync in slices and fetches requests in windows of `concurrency`", async () => {
    const runner = counting(await createTaskRunner({ backend: "piscina", maxThreads: 1 }));
    try {
      const entries = session(60, 60_000); // about 2.6M characters: two slices and the rest with the plan
      const mirror = new WorkerMirror();
      const deps = { runner, classify: keepNothing, config: DEFAULT_CONFIG, modelRef: "x/y", mirror };
      const result = await runPass(entries, deps, { phase: "run-end" });
      if (result.status !== "done") throw new Error(result.reason);
      expect(runner.calls.sync).toBeGreaterThanOrEqual(2);
      expect(runner.calls.plan).toBe(1);
      expect(result.record.requests).toBeGreaterThan(DEFAULT_CONFIG.concurrency);
      expect(runner.calls.requests).toBe(Math.ceil(result.record.requests / DEFAULT_CONFIG.concurrency));
      expect(result.edits).toHaveLength(60);
      // The next pass over the same session sends nothing ahead of the plan.
      const again = await runPass(entries, deps, { phase: "run-end" });
      expect(again.status).toBe("done");
      expect(runner.calls.sync).toBeGreaterThanOrEqual(2);
      expect(runner.calls.plan).toBe(2);
    } finally {
      await runner.destroy();
    }
  });
});
