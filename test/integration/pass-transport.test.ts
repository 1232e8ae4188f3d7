// How a pass moves data between threads: a large first pass sends the session in slices before the plan,
// and the classifier requests come back from the worker a window at a time as the queue starts them.
import { describe, expect, it } from "vitest";
import type { FinishOutput } from "../../src/core/distill/finish.ts";
import { DEFAULT_CONFIG } from "../../src/core/shared/config.ts";
import type { SnapEntry } from "../../src/core/shared/types.ts";
import type { ClassifyFn } from "../../src/main/pass/classify-queue.ts";
import { runPass } from "../../src/main/pass/library-run-pass.ts";
import { PassWorker, SYNC_SLICE_CHARS } from "../../src/main/pass/pass-worker.ts";
import type { PassResult } from "../../src/main/pass/run-pass.ts";
import { WorkerMirror } from "../../src/main/pass/worker-mirror.ts";
import { createTaskRunner, type TaskRunner } from "../../src/main/platform/pool.ts";
import { FINISH_PART_CHARS } from "../../src/workers/pass/pass-handler.ts";
import type { PassMessage, SyncInput } from "../../src/workers/pass/protocol.ts";
import { chunkKeeper, keepNothing } from "../kit/answers.ts";
import { assistantEntry, toolCall, toolResultEntry, userEntry } from "../kit/snap.ts";

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

/** The message kind of a pass task, else the task's name. */
const kindOf = (name: string, input: unknown): string => (name === "pass" ? (input as PassMessage).kind : name);

/** Characters of entry text a sync message carries (entries and pieces). */
function syncChars(sync: SyncInput): number {
  let n = 0;
  for (const e of sync.fresh) n += e.text.length + (e.rawText?.length ?? 0);
  for (const p of sync.pieces ?? []) n += p.part.length;
  return n;
}

function counting(inner: TaskRunner): TaskRunner & { calls: Record<string, number>; largest: Record<string, number> } {
  const calls: Record<string, number> = {};
  const largest: Record<string, number> = {};
  const note = (name: string, chars: number) => {
    largest[name] = Math.max(largest[name] ?? 0, chars);
  };
  return {
    calls,
    largest,
    backend: inner.backend,
    destroy: () => inner.destroy(),
    run: async (name, input, options) => {
      const kind = kindOf(name, input);
      calls[kind] = (calls[kind] ?? 0) + 1;
      if (kind === "sync" || kind === "plan") note(kind, syncChars((input as { sync: SyncInput }).sync));
      const out = await inner.run(name, input, options);
      if (kind === "finish" || kind === "finishPart") {
        const { drafts } = out as FinishOutput;
        note(
          "answer",
          drafts.reduce((k, d) => k + (d.replacement?.content[0]?.text.length ?? 0), 0),
        );
      }
      return out;
    },
  };
}

/** Keeps every other chunk: half of each output stays. */
const keepEveryOther = chunkKeeper((n) => n % 2 !== 0);

/**
 * The same pass through the pool (its task traffic counted) and inline, on fresh mirrors; `check` sees
 * both results.
 */
async function pooledAndInline(
  entries: SnapEntry[],
  classify: ClassifyFn,
  check: (
    runner: ReturnType<typeof counting>,
    pooled: Extract<PassResult, { status: "done" }>,
    direct: Extract<PassResult, { status: "done" }>,
  ) => void,
): Promise<void> {
  const runner = counting(await createTaskRunner({ backend: "piscina", maxThreads: 1 }));
  const inline = await createTaskRunner({ backend: "inline" });
  try {
    const deps = { classify, config: DEFAULT_CONFIG, modelRef: "x/y" };
    const pooled = await runPass(entries, { ...deps, runner, mirror: new WorkerMirror() }, { phase: "run-end" });
    const direct = await runPass(
      entries,
      { ...deps, runner: inline, mirror: new WorkerMirror() },
      { phase: "run-end" },
    );
    if (pooled.status !== "done" || direct.status !== "done") throw new Error("no pass");
    check(runner, pooled, direct);
  } finally {
    await runner.destroy();
    await inline.destroy();
  }
}

describe("pass deadline", () => {
  it("keeps back a share of the planning time for what follows the classifier", async () => {
    const inline = await createTaskRunner({ backend: "inline" });
    // A plan that takes at least 400 ms (a large cold session).
    const slowPlan: TaskRunner = {
      backend: "inline",
      destroy: () => inline.destroy(),
      run: async (name, input, options) => {
        if (kindOf(name, input) === "plan") await new Promise((r) => setTimeout(r, 400));
        return inline.run(name, input, options);
      },
    };
    const budgets: number[] = [];
    const hang: ClassifyFn = (_request, { timeoutMs }) => {
      budgets.push(timeoutMs);
      return new Promise(() => {});
    };
    try {
      const config = { ...DEFAULT_CONFIG, timeoutMs: 2000 };
      const result = await runPass(
        session(2, 20_000),
        { runner: slowPlan, classify: hang, config, modelRef: "x/y" },
        { phase: "run-end" },
      );
      expect(result.status).toBe("done");
      expect(budgets.length).toBeGreaterThan(0);
      // 2,000 ms − at least 400 ms of planning − 30% of that kept back for the finish.
      expect(Math.max(...budgets)).toBeLessThanOrEqual(2000 - 400 - 120);
    } finally {
      await inline.destroy();
    }
  });
});

describe("pass transport", () => {
  it("sends a text larger than a slice in pieces, and the plan equals the inline one", async () => {
    await pooledAndInline(session(1, 3_500_000), keepNothing, (runner, pooled, direct) => {
      expect(runner.calls.sync).toBeGreaterThanOrEqual(4);
      expect(runner.largest.sync).toBeLessThanOrEqual(SYNC_SLICE_CHARS);
      expect(pooled.edits).toEqual(direct.edits);
      expect(pooled.record.results).toEqual(direct.record.results);
    });
  });

  it("sends many outcomes ahead in slices, brings a large result back in parts, and matches inline", async () => {
    await pooledAndInline(session(60, 60_000), keepEveryOther, (runner, pooled, direct) => {
      expect(runner.calls.finishPart).toBeGreaterThanOrEqual(1);
      // Outcomes beyond a hundred went ahead of finish, a hundred per message.
      expect(pooled.record.requests).toBeGreaterThan(100);
      expect(runner.calls.outcomes).toBe(Math.ceil(pooled.record.requests / 100));
      expect(runner.largest.answer).toBeLessThan(FINISH_PART_CHARS + 60_000);
      expect(pooled.edits).toEqual(direct.edits);
      expect(pooled.edits.length).toBe(60);
      expect(pooled.record.results).toEqual(direct.record.results);
    });
  });

  it("asks for the next window of requests ahead of the queue, and lets a taken window go", async () => {
    const inline = await createTaskRunner({ backend: "inline" });
    const log: string[] = [];
    const runner: TaskRunner = {
      backend: "inline",
      destroy: () => inline.destroy(),
      run: (name, input, options) => {
        if (kindOf(name, input) === "requests") log.push(`window ${(input as { from: number }).from}`);
        return inline.run(name, input, options);
      },
    };
    // Every request fails once, after its whole window has been taken: the retry has to fetch it again.
    const failedOnce = new Set<string>();
    const classify: ClassifyFn = async (request, options) => {
      log.push("call");
      const key = JSON.stringify(request.questions);
      await new Promise((r) => setTimeout(r, 20));
      if (!failedOnce.has(key)) {
        failedOnce.add(key);
        return { status: "error", error: "flaky" };
      }
      return keepNothing(request, options);
    };
    try {
      const config = { ...DEFAULT_CONFIG, concurrency: 3 };
      const result = await runPass(
        session(20, 8_000),
        { runner, classify, config, modelRef: "x/y" },
        { phase: "run-end" },
      );
      if (result.status !== "done") throw new Error(result.reason);
      const windows = log.filter((e) => e.startsWith("window"));
      expect(result.record.requests).toBeGreaterThan(6);
      // The second window was asked for before the first call started.
      expect(log.slice(0, log.indexOf("call"))).toEqual(["window 0", "window 3"]);
      // Each window went once for the first attempts and once more for the retries.
      expect(windows.filter((w) => w === "window 0")).toHaveLength(2);
      expect(result.edits).toHaveLength(20);
    } finally {
      await inline.destroy();
    }
  });

  it("warms the worker ahead of the first pass: the pass then sends only the order and what is new", async () => {
    const runner = counting(await createTaskRunner({ backend: "piscina", maxThreads: 1 }));
    const inline = await createTaskRunner({ backend: "inline" });
    try {
      const entries = session(60, 30_000); // about 1.3M characters: three messages ahead
      const mirror = new WorkerMirror();
      const sent = await new PassWorker(runner, { mirror }).warm(entries);
      expect(sent).toBe(entries.length);
      expect(runner.calls.sync).toBeGreaterThanOrEqual(3);
      expect(runner.largest.sync).toBeLessThan(SYNC_SLICE_CHARS + 30_000);
      // Nothing left to send: a second warm-up is a no-op.
      expect(await new PassWorker(runner, { mirror }).warm(entries)).toBe(0);
      const syncs = runner.calls.sync;
      const deps = { classify: keepEveryOther, config: DEFAULT_CONFIG, modelRef: "x/y" };
      const grown = [...entries, assistantEntry("z2", "and one more note")];
      const warm = await runPass(grown, { ...deps, runner, mirror }, { phase: "run-end" });
      const cold = await runPass(grown, { ...deps, runner: inline, mirror: new WorkerMirror() }, { phase: "run-end" });
      if (warm.status !== "done" || cold.status !== "done") throw new Error("no pass");
      expect(runner.calls.sync).toBe(syncs);
      // The plan's message carried the one new entry, not the session.
      expect(runner.largest.plan).toBeLessThan(1_000);
      expect(warm.edits).toEqual(cold.edits);
      expect(warm.record.results).toEqual(cold.record.results);
    } finally {
      await runner.destroy();
      await inline.destroy();
    }
  });

  it("stops warming when its signal aborts, and the first pass sends the rest", async () => {
    const runner = counting(await createTaskRunner({ backend: "piscina", maxThreads: 1 }));
    try {
      const entries = session(60, 30_000);
      const mirror = new WorkerMirror();
      const stop = new AbortController();
      stop.abort();
      await expect(new PassWorker(runner, { mirror }).warm(entries, stop.signal)).rejects.toThrow();
      expect(runner.calls.sync ?? 0).toBe(0);
      const result = await runPass(
        entries,
        { runner, mirror, classify: keepNothing, config: DEFAULT_CONFIG, modelRef: "x/y" },
        { phase: "run-end" },
      );
      expect(result.status).toBe("done");
      expect(runner.calls.sync).toBeGreaterThanOrEqual(2);
    } finally {
      await runner.destroy();
    }
  });

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
      expect(runner.largest.sync).toBeLessThan(SYNC_SLICE_CHARS + 60_000);
      // What went ahead came in full slices; the plan's own message carries less than one.
      expect(runner.largest.plan).toBeLessThan(SYNC_SLICE_CHARS);
      // The next pass over the same session sends nothing ahead of the plan.
      const syncs = runner.calls.sync;
      const again = await runPass(entries, deps, { phase: "run-end" });
      expect(again.status).toBe("done");
      expect(runner.calls.sync).toBe(syncs);
      expect(runner.calls.plan).toBe(2);
    } finally {
      await runner.destroy();
    }
  });
});
