// PassWorker, the only code on Pi's thread that talks to the pass worker: whole passes on real Piscina
// pools of 1, 2 and 4 threads (every classifier call made, every edit returned), several sessions at
// once on one pool, and each way a message can fail arriving as a PassWorkerError with its code.
import { afterAll, describe, expect, it } from "vitest";
import { DEFAULT_CONFIG } from "../../../../src/core/shared/config.ts";
import type { ClassifierRequest, SnapEntry } from "../../../../src/core/shared/types.ts";
import type { ClassifyFn } from "../../../../src/main/pass/classify-queue.ts";
import { runPass } from "../../../../src/main/pass/library-run-pass.ts";
import { PassWorker } from "../../../../src/main/pass/pass-worker.ts";
import { createTaskRunner, type TaskRunner } from "../../../../src/main/platform/pool.ts";
import { PassWorkerError } from "../../../../src/workers/pass/failures.ts";
import { dropAll } from "../../../kit/answers.ts";
import { assistantEntry, grepRun } from "../../../kit/snap.ts";

const runners: TaskRunner[] = [];
afterAll(async () => {
  await Promise.all(runners.map((r) => r.destroy()));
});

async function pool(threads: number): Promise<TaskRunner> {
  const runner = await createTaskRunner({ backend: "piscina", minThreads: threads, maxThreads: threads });
  runners.push(runner);
  return runner;
}

/** A run with `outputs` grep outputs, each large enough to be judged. */
const session = (tag: string, outputs: number) => grepRun(tag, outputs);

/** dropAll, counting the requests it answered. */
function counted(): { classify: ClassifyFn; seen: ClassifierRequest[] } {
  const seen: ClassifierRequest[] = [];
  return {
    seen,
    classify: (request, options) => {
      seen.push(request);
      return dropAll(request, options);
    },
  };
}

const config = { ...DEFAULT_CONFIG, concurrency: 2 };

/** One pass through a session's PassWorker; the inline result is the reference. */
async function passOn(worker: PassWorker, runner: TaskRunner, entries: SnapEntry[]) {
  const { classify, seen } = counted();
  const result = await runPass(entries, { runner, worker, classify, config, modelRef: "t/t" }, { phase: "run-end" });
  return { result, seen };
}

describe("PassWorker on pools of any size", () => {
  let reference: Awaited<ReturnType<typeof passOn>> | undefined;
  const entries = session("s", 6);

  it.each([1, 2, 4])("a pool of %i thread(s) runs whole passes, as inline does", async (threads) => {
    if (!reference) {
      const inline = await createTaskRunner({ backend: "inline" });
      runners.push(inline);
      reference = await passOn(new PassWorker(inline), inline, entries);
    }
    const ref = reference.result;
    if (ref.status !== "done") throw new Error("the inline pass did not run");
    const runner = await pool(threads);
    const worker = new PassWorker(runner);
    // Requests come in windows of two: the pass makes several requests and finish messages on one thread.
    const first = await passOn(worker, runner, entries);
    if (first.result.status !== "done") throw new Error(first.result.reason);
    expect(first.seen.length).toBe(reference.seen.length);
    expect(first.result.record.requests).toBe(first.seen.length);
    expect(first.result.classifier.answered).toBe(first.seen.length);
    expect(first.result.edits).toHaveLength(6);
    expect(first.result.edits).toEqual(ref.edits);
    expect(first.result.record.results).toEqual(ref.record.results);
    // The next pass finds the worker warm: it sends no entry again and still makes every call.
    const grown = [...entries, assistantEntry("z2-s", "one more note")];
    const second = await passOn(worker, runner, grown);
    expect(second.result.status).toBe("done");
    expect(second.seen.length).toBe(reference.seen.length);
  });

  it.each([2, 4])("several sessions on one pool of %i threads each run their passes", async (threads) => {
    const runner = await pool(threads);
    const sessions = ["a", "b", "c"].map((tag) => ({ worker: new PassWorker(runner), entries: session(tag, 3) }));
    for (let round = 0; round < 2; round++) {
      const outs = await Promise.all(sessions.map((s) => passOn(s.worker, runner, s.entries)));
      for (const out of outs) {
        if (out.result.status !== "done") throw new Error(out.result.reason);
        expect(out.result.edits).toHaveLength(3);
        expect(out.result.classifier.answered).toBe(out.seen.length);
        expect(out.seen.length).toBeGreaterThan(0);
      }
    }
  });

  it("warms a thread and a session ahead of the first pass", async () => {
    const runner = await pool(2);
    const worker = new PassWorker(runner);
    await worker.ping();
    const entries = session("warm", 2);
    expect(await worker.warm(entries)).toBe(entries.length);
    expect(await worker.warm(entries)).toBe(0);
    const out = await passOn(worker, runner, entries);
    expect(out.result.status).toBe("done");
  });
});

/** A runner over two one-thread pools that sends each task to the other one, and offers no oneThread. */
function alternating(a: TaskRunner, b: TaskRunner): TaskRunner {
  let n = 0;
  return {
    backend: a.backend,
    run: ((name: never, input: never, options: never) => (n++ % 2 === 0 ? a : b).run(name, input, options)) as never,
    destroy: async () => {},
  };
}

/** A runner whose every task meets `behave` instead of a worker. */
function fake(behave: (signal: AbortSignal | undefined) => Promise<unknown>): TaskRunner {
  return {
    backend: "inline",
    run: ((_name: never, _input: never, options?: { signal?: AbortSignal }) => behave(options?.signal)) as never,
    destroy: async () => {},
  };
}

async function codeOf(promise: Promise<unknown>): Promise<{ code: string; message: string; cause?: unknown }> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(PassWorkerError);
    const e = error as PassWorkerError;
    return { code: e.code, message: e.message, cause: e.cause };
  }
  throw new Error("the promise did not reject");
}

describe("PassWorker failures carry codes", () => {
  it("pass-lost: a runner that spreads a pass over threads (and cannot lend it one) fails typed", async () => {
    const runner = alternating(await pool(1), await pool(1));
    const worker = new PassWorker(runner);
    const out = await codeOf(
      runPass(session("lost", 2), { runner, worker, classify: dropAll, config, modelRef: "t/t" }, { phase: "run-end" }),
    );
    expect(out.code).toBe("pass-lost");
  });

  it("timeout: a message that outlives the limit is stopped (its signal aborted)", async () => {
    let aborted = false;
    const stuck = fake(
      (signal) =>
        new Promise((_, reject) => {
          signal?.addEventListener("abort", () => {
            aborted = true;
            reject(new Error("The task has been aborted"));
          });
        }),
    );
    const out = await codeOf(new PassWorker(stuck, { timeoutMs: 50 }).ping());
    expect(out.code).toBe("timeout");
    expect(out.message).toMatch(/took longer than 50 ms and was stopped/);
    expect(aborted).toBe(true);
  });

  it("worker-failed: a task that throws, or a thread that dies, keeps its message and cause", async () => {
    const boom = new Error("worker exited with code: 3");
    const out = await codeOf(new PassWorker(fake(() => Promise.reject(boom))).ping());
    expect(out).toEqual({ code: "worker-failed", message: "worker exited with code: 3", cause: boom });
  });

  it("bad-message and pass-lost reported by the worker keep their own codes", async () => {
    const reported = fake(() => Promise.resolve({ failure: "pass-lost", message: "gone" }));
    expect((await codeOf(new PassWorker(reported).ping())).code).toBe("pass-lost");
    const odd = fake(() => Promise.resolve({ failure: "bad-message", message: "what?" }));
    expect((await codeOf(new PassWorker(odd).ping())).code).toBe("bad-message");
  });
});
