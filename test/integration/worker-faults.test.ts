import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CONFIG, type GuardConfig } from "../../src/core/shared/config.ts";
import type { SnapEntry } from "../../src/core/shared/types.ts";
import { runPass } from "../../src/main/pass/library-run-pass.ts";
import type { PassResult } from "../../src/main/pass/run-pass.ts";
import { WorkerMirror } from "../../src/main/pass/worker-mirror.ts";
import { createTaskRunner, type PoolBackend, type TaskName, type TaskRunner } from "../../src/main/platform/pool.ts";
import type { PassMessage } from "../../src/workers/pass/protocol.ts";
import { dropAll } from "../kit/answers.ts";
import { FAULT_TASKS } from "../kit/fault-tasks.ts";
import { failOnUnhandledRejections } from "../kit/no-unhandled.ts";
import { threads } from "../kit/threads.ts";

/** A session whose run has one large grep output. */
function session(tag: string): SnapEntry[] {
  const big = Array.from(
    { length: 400 },
    (_, i) => `src/${tag}${i % 20}.ts:${i + 1}:  const v${i} = compute(${i});`,
  ).join("\n");
  return [
    { id: `u-${tag}`, type: "message", role: "user", visible: true, text: "where is compute used?", images: 0 },
    {
      id: `a-${tag}`,
      type: "message",
      role: "assistant",
      visible: true,
      text: "",
      images: 0,
      toolCalls: [{ id: `c-${tag}`, name: "bash", args: { command: "rg -n compute" } }],
    },
    {
      id: `t-${tag}`,
      type: "message",
      role: "toolResult",
      visible: true,
      text: big,
      images: 0,
      toolCallId: `c-${tag}`,
      toolName: "bash",
      isError: false,
    },
    { id: `z-${tag}`, type: "message", role: "assistant", visible: true, text: "compute is used widely", images: 0 },
  ];
}

/** Runs `fault` instead of the real task for the given message of a pass. */
function faulty(inner: TaskRunner, step: "plan" | "finish", fault: string): TaskRunner {
  return {
    backend: inner.backend,
    run: ((name: TaskName, input: unknown, options: unknown) =>
      (inner.run as (n: string, i: unknown, o: unknown) => Promise<unknown>)(
        name === "pass" && (input as PassMessage).kind === step ? fault : name,
        input,
        options,
      )) as TaskRunner["run"],
    destroy: () => inner.destroy(),
  };
}

/** Settles within `ms` (a pending promise fails the test instead of hanging it). */
async function settled<T>(promise: Promise<T>, ms: number): Promise<PromiseSettledResult<T>> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<"pending">((resolve) => {
    timer = setTimeout(() => resolve("pending"), ms);
  });
  const out = await Promise.race([
    promise.then(
      (value): PromiseSettledResult<T> => ({ status: "fulfilled", value }),
      (reason: unknown): PromiseSettledResult<T> => ({ status: "rejected", reason }),
    ),
    limit,
  ]);
  clearTimeout(timer);
  if (out === "pending") throw new Error(`still pending after ${ms} ms`);
  return out;
}

// A far classifier deadline: a replaced worker loading its modules on a busy machine must not turn the
// next pass into "timeout, everything kept".
const config: GuardConfig = { ...DEFAULT_CONFIG, timeoutMs: 30_000 };
let baseline = 0;

failOnUnhandledRejections();
beforeAll(() => {
  baseline = threads();
});

const FAULTS = [
  { fault: "faultThrow", expect: /injected fault: the task threw/ },
  { fault: "faultExit", expect: /worker exited with code: 3/ },
  // A stuck task is stopped by the pass's worker time limit (500 ms here, 30 s in the product).
  { fault: "faultSpin", expect: /took longer than 500 ms and was stopped/ },
  { fault: "faultOom", expect: /out of memory|memory limit/i },
];

// The product's pool. (Tinypool, the benchmark's comparison, does not reject a task whose worker calls
// process.exit; there only the pass's worker time limit ends it.)
describe.each<PoolBackend>(["piscina"])("worker faults in a pass (%s)", (backend) => {
  let runner: TaskRunner;
  const mirror = new WorkerMirror();
  let n = 0;
  beforeAll(async () => {
    runner = await createTaskRunner({
      backend,
      minThreads: 1,
      maxThreads: 1,
      taskModule: FAULT_TASKS,
      resourceLimits: { maxOldGenerationSizeMb: 64, maxYoungGenerationSizeMb: 16 },
    });
  });
  afterAll(async () => {
    await runner.destroy();
  });

  const pass = (r: TaskRunner, entries: SnapEntry[], workerTimeoutMs = 10_000): Promise<PassResult> =>
    runPass(
      entries,
      { runner: r, classify: dropAll, config, modelRef: "t/t", mirror, workerTimeoutMs },
      {
        phase: "run-end",
      },
    );

  it("a healthy pass distills (the baseline)", async () => {
    const out = await pass(runner, session(`h${n++}`));
    expect(out).toMatchObject({ status: "done" });
    expect(out.status === "done" && out.edits).toHaveLength(1);
  });

  for (const step of ["plan", "finish"] as const) {
    it.each(FAULTS)(`${step}: $fault → the pass rejects, the next pass works`, async ({ fault, expect: message }) => {
      const limit = fault === "faultSpin" ? 500 : 10_000;
      const result = await settled(pass(faulty(runner, step, fault), session(`f${n++}`), limit), 15_000);
      expect(result.status).toBe("rejected");
      expect(String((result as PromiseRejectedResult).reason?.message)).toMatch(message);
      // The same runner and mirror: the worker was replaced, the mirror must resend what it lost.
      const next = await settled(pass(runner, session(`n${n++}`)), 15_000);
      expect(next.status).toBe("fulfilled");
      const value = (next as PromiseFulfilledResult<PassResult>).value;
      expect(value.status).toBe("done");
      expect(value.status === "done" && value.edits).toHaveLength(1);
    });
  }

  it("an oversized input that exhausts the worker's heap fails only that task", async () => {
    const huge = { text: "y".repeat(8 * 1024 * 1024) };
    const run = (runner.run as (n: string, i: unknown) => Promise<unknown>)("faultOom", huge);
    const result = await settled(run, 15_000);
    expect(result.status).toBe("rejected");
    expect(await runner.run("ping", undefined as never)).toBe("pong");
  });
});

describe("worker pool life cycle", () => {
  it("a worker that cannot load its module neither crashes the process nor leaves a task pending", async () => {
    const runner = await createTaskRunner({ minThreads: 1, maxThreads: 1, taskModule: "/nonexistent/tasks.ts" });
    try {
      for (let i = 0; i < 2; i++) {
        const result = await settled(runner.run("ping", undefined as never), 10_000);
        expect(result.status).toBe("rejected");
        expect(String((result as PromiseRejectedResult).reason?.message)).toMatch(/Cannot find module/);
      }
    } finally {
      await runner.destroy();
    }
  });

  it("destroying the pool while a task runs rejects the task at once and stops the thread", async () => {
    const runner = await createTaskRunner({ minThreads: 1, maxThreads: 1, taskModule: FAULT_TASKS });
    const spinning = settled((runner.run as (n: string, i: unknown) => Promise<unknown>)("faultSpin", {}), 5000);
    await new Promise((r) => setTimeout(r, 200));
    await runner.destroy();
    const result = await spinning;
    expect(result.status).toBe("rejected");
    await expect(runner.run("ping", undefined as never)).rejects.toThrow(/shut down/);
  });

  it("the inline runner takes the task module too", async () => {
    const runner = await createTaskRunner({ backend: "inline", taskModule: FAULT_TASKS });
    await expect((runner.run as (n: string, i: unknown) => Promise<unknown>)("faultThrow", {})).rejects.toThrow(
      /injected fault/,
    );
    expect(await runner.run("ping", undefined as never)).toBe("pong");
  });

  it("leaves no worker thread behind", async () => {
    // Every runner of this file is destroyed by now (the describe blocks' afterAll ran before this file's).
    await new Promise((r) => setTimeout(r, 100));
    expect(threads()).toBeLessThanOrEqual(baseline);
  });
});
