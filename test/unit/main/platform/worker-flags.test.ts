// Issue 42: a Node flag on Pi's command line that worker threads refuse (`--expose-gc`,
// `--max-old-space-size=…`) must not stop the pool; and a pool that cannot start says why.
import { Worker } from "node:worker_threads";
import { afterAll, describe, expect, it } from "vitest";
import { createTaskRunner, type TaskRunner } from "../../../../src/main/platform/pool.ts";
import { flagGroups, workerAccepts, workerExecArgv } from "../../../../src/main/platform/worker-flags.ts";

const runners: TaskRunner[] = [];
afterAll(async () => {
  await Promise.all(runners.map((r) => r.destroy()));
});

/** Runs `code` in a real worker started with `execArgv`; resolves with what it posts. */
function runWorker(execArgv: string[], code: string): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const w = new Worker(code, { eval: true, execArgv });
    w.once("message", (m) => {
      resolve(m);
      void w.terminate();
    });
    w.once("error", reject);
  });
}

describe("the flags a worker is started with", () => {
  const pis = ["--expose-gc", "--conditions", "dev", "--max-old-space-size=4096", "--stack-size=2000"];

  it("groups a flag with the separate values after it", () => {
    expect(flagGroups(pis)).toEqual([
      ["--expose-gc"],
      ["--conditions", "dev"],
      ["--max-old-space-size=4096"],
      ["--stack-size=2000"],
    ]);
  });

  it("drops exactly the flags a real Worker refuses, keeping the rest and their order", () => {
    for (const refused of ["--expose-gc", "--max-old-space-size=4096", "--stack-size=2000"]) {
      expect(workerAccepts([refused])).toBe(false);
      expect(() => new Worker("", { eval: true, execArgv: [refused] })).toThrow(
        expect.objectContaining({ code: "ERR_WORKER_INVALID_EXEC_ARGV" }),
      );
    }
    expect(workerExecArgv([...pis, "--disable-warning=ExperimentalWarning"])).toEqual([
      "--conditions",
      "dev",
      "--disable-warning=ExperimentalWarning",
    ]);
    // Nothing refused: the list as it is.
    expect(workerExecArgv(["--conditions=dev", "--no-warnings"])).toEqual(["--conditions=dev", "--no-warnings"]);
  });

  it("a worker starts with what is left, and the flags kept reach it", async () => {
    const argv = workerExecArgv(pis);
    const seen = await runWorker(
      argv,
      "require('node:worker_threads').parentPort.postMessage([process.execArgv, typeof globalThis.gc])",
    );
    expect(seen).toEqual([["--conditions", "dev"], "undefined"]);
  });
});

describe("a pool that cannot start", () => {
  it("rejects its tasks with why, and keeps the reason for the footer and /guard", async () => {
    // Options Piscina refuses: its constructor throws, as it does when Worker refuses a flag.
    const runner = await createTaskRunner({ minThreads: 1, idleTimeoutMs: -1 });
    runners.push(runner);
    expect(runner.failure?.message).toMatch(/idleTimeout/);
    await expect(runner.run("ping", undefined as never)).rejects.toThrow(
      /^the worker pool could not start: .*idleTimeout/,
    );
    expect(runner.failure?.message).toMatch(/idleTimeout/);
  });

  it("a pool that starts has no failure", async () => {
    const runner = await createTaskRunner({ minThreads: 1 });
    runners.push(runner);
    await runner.run("ping", undefined as never);
    expect(runner.failure).toBeUndefined();
  });
});
