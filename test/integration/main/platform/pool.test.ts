import { afterAll, describe, expect, it } from "vitest";
import { DEFAULT_CONFIG } from "../../../../src/core/shared/config.ts";
import type { ClassifierRequest, SnapEntry } from "../../../../src/core/shared/types.ts";
import { runPass } from "../../../../src/main/pass/library-run-pass.ts";
import {
  createTaskRunner,
  type PoolBackend,
  type TaskRunner,
  TaskTimeoutError,
} from "../../../../src/main/platform/pool.ts";
import { PassWorkerError, unwrapFailure } from "../../../../src/workers/pass/failures.ts";
import { packedCount, unpackValue } from "../../../../src/workers/pass/packed-values.ts";
import type { MessageOf, PassKind, PassReply } from "../../../../src/workers/pass/protocol.ts";
import { dropAll } from "../../../kit/answers.ts";
import { FAULT_TASKS } from "../../../kit/fault-tasks.ts";
import { assistantEntry, toolCall, toolResultEntry, userEntry } from "../../../kit/snap.ts";

const runners: TaskRunner[] = [];
afterAll(async () => {
  await Promise.all(runners.map((r) => r.destroy()));
});

function session(): SnapEntry[] {
  const big = Array.from(
    { length: 400 },
    (_, i) => `src/file${i % 20}.ts:${i + 1}:  const value${i} = compute(${i});`,
  ).join("\n");
  return [
    userEntry("u1", "where is compute used?"),
    assistantEntry("a1", "", [toolCall("c1", "bash", { command: "rg -n compute" })]),
    toolResultEntry("t1", "c1", "bash", big),
    assistantEntry("a2", "compute is used in src/file3.ts"),
  ];
}

/** One message of a pass through the runner's "pass" task, typed by the protocol. */
const send = <K extends PassKind>(runner: TaskRunner, message: MessageOf<K>) =>
  runner.run("pass", message) as Promise<PassReply<K>>;

describe.each<PoolBackend>(["piscina", "tinypool", "inline"])("task runner (%s)", (backend) => {
  it("runs the plan task and returns the same plan as inline", async () => {
    const runner = await createTaskRunner({ backend, maxThreads: 1 });
    runners.push(runner);
    const entries = session();
    const ids = entries.map((e) => e.id);
    expect(await send(runner, { kind: "settings", version: 1, settings: DEFAULT_CONFIG })).toBe(true);
    const out = await send(runner, {
      kind: "plan",
      sync: { fresh: entries, order: { keep: 0, tail: ids, version: 1 } },
      settings: 1,
      passId: "p1",
    });
    if (!("plan" in out) || out.plan.status !== "run") throw new Error(`unexpected ${JSON.stringify(out)}`);
    expect(out.plan.requestCount).toBeGreaterThan(0);
    const firstTwo = unwrapFailure(await send(runner, { kind: "requests", passId: "p1", from: 0, to: 2 }));
    expect(packedCount(firstTwo)).toBe(Math.min(2, out.plan.requestCount));
    expect(Object.keys(unpackValue<ClassifierRequest>(firstTwo, 0).questions)).toContain("keep_whole");
    // The worker kept the entries: ids alone are enough for the next pass.
    const again = await send(runner, {
      kind: "plan",
      sync: { storeId: out.storeId, base: 1, fresh: [], order: { keep: ids.length, tail: [], version: 2 } },
      settings: 1,
      passId: "p2",
    });
    expect("plan" in again && again.plan.status).toBe("run");
    // A store that does not know the ids asks for them.
    const unknown = await send(runner, {
      kind: "plan",
      sync: { storeId: out.storeId, base: 2, fresh: [], order: { keep: 0, tail: ["zz1"], version: 3 } },
      settings: 1,
      passId: "p3",
    });
    expect(unknown).toMatchObject({ missing: ["zz1"] });
    // finish renders from what the worker held for the pass.
    const fin = unwrapFailure(await send(runner, { kind: "finish", passId: "p2", outcomes: [] }));
    expect(fin.results[0]).toMatchObject({ entryId: "t1", outcome: "kept", reason: "timeout" });
    // A pass the worker no longer holds comes back as a coded failure, not as a message to match.
    const lost = await send(runner, { kind: "finish", passId: "p2", outcomes: [] });
    expect(lost).toMatchObject({ failure: "pass-lost" });
    expect(() => unwrapFailure(lost)).toThrow(PassWorkerError);
    expect(await runner.run("ping", undefined as never)).toBe("pong");
  });
});

describe("piscina pool faults", () => {
  it("rejects an aborted task and keeps working afterwards", async () => {
    const runner = await createTaskRunner({ backend: "piscina", maxThreads: 1 });
    runners.push(runner);
    const controller = new AbortController();
    const evil = `${"a".repeat(30)}!`;
    const pending = runner.run(
      "recall",
      { text: evil, pattern: "(a+)+$", timeoutMs: 60_000 },
      { signal: controller.signal },
    );
    setTimeout(() => controller.abort(), 100);
    await expect(pending).rejects.toThrow();
    expect(await runner.run("ping", undefined as never)).toBe("pong");
  });

  it("refuses work after destroy", async () => {
    const runner = await createTaskRunner({ backend: "piscina", maxThreads: 1 });
    await runner.destroy();
    await expect(runner.run("ping", undefined as never)).rejects.toThrow(/shut down/);
  });
});

describe("a pass and the pool's size", () => {
  const pass = (runner: TaskRunner) =>
    runPass(session(), { runner, classify: dropAll, config: DEFAULT_CONFIG, modelRef: "t/t" }, { phase: "run-end" });

  it("the default pool (one thread) runs a whole pass, as the library example does", async () => {
    const runner = await createTaskRunner({ backend: "piscina" });
    runners.push(runner);
    const out = await pass(runner);
    expect(out.status).toBe("done");
  });

  it.each([2, 4])("a pool of %i threads runs whole passes, several at once", async (n) => {
    const runner = await createTaskRunner({ backend: "piscina", minThreads: n, maxThreads: n });
    runners.push(runner);
    // Without a thread of the pass's own, these would spread their tasks over the threads.
    const outs = await Promise.all([pass(runner), pass(runner), pass(runner)]);
    for (const out of outs) {
      expect(out.status).toBe("done");
      expect(out.status === "done" && out.edits).toHaveLength(1);
    }
  });

  it("a pool of several threads lends a pass one thread of its own, and only one", async () => {
    const runner = await createTaskRunner({ backend: "piscina", maxThreads: 3 });
    runners.push(runner);
    const single = runner.oneThread?.();
    expect(single).toBeDefined();
    expect(single).not.toBe(runner);
    expect(runner.oneThread?.()).toBe(single);
    expect(single?.oneThread?.()).toBe(single);
    const one = await createTaskRunner({ backend: "piscina", maxThreads: 1 });
    runners.push(one);
    expect(one.oneThread?.()).toBe(one);
  });
});

describe("one thread, tasks in order of need", () => {
  const run = (runner: TaskRunner, input: { ms: number; tag: string }, options?: Parameters<TaskRunner["run"]>[2]) =>
    (runner.run as (n: string, i: unknown, o?: unknown) => Promise<string>)("busy", input, options);

  it("a background task waits behind every task sent before it runs, whenever those were sent", async () => {
    const runner = await createTaskRunner({ minThreads: 1, maxThreads: 1, taskModule: FAULT_TASKS });
    runners.push(runner);
    const done: string[] = [];
    const note = (p: Promise<string>) => p.then((tag) => done.push(tag));
    const first = note(run(runner, { ms: 300, tag: "pass-1" }));
    const behind = note(run(runner, { ms: 10, tag: "pricing" }, { background: true }));
    const second = note(run(runner, { ms: 10, tag: "pass-2" }));
    await Promise.all([first, behind, second]);
    expect(done).toEqual(["pass-1", "pass-2", "pricing"]);
  });

  it("a task's time limit counts from when the thread takes it, not while it waits", async () => {
    const runner = await createTaskRunner({ minThreads: 1, maxThreads: 1, taskModule: FAULT_TASKS });
    runners.push(runner);
    const long = run(runner, { ms: 3000, tag: "long" });
    // Queued behind three seconds of work, with a two-second limit of its own.
    const quick = run(runner, { ms: 0, tag: "quick" }, { timeoutMs: 2000 });
    expect(await long).toBe("long");
    expect(await quick).toBe("quick");
    // A task that does outlive its limit is stopped with a typed error, and the thread is replaced.
    await expect(run(runner, { ms: 60_000, tag: "stuck" }, { timeoutMs: 200 })).rejects.toBeInstanceOf(
      TaskTimeoutError,
    );
    expect(await run(runner, { ms: 0, tag: "after" })).toBe("after");
  });
});
