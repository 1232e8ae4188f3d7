// The library's `runPass` (src/index.ts): a pass on a pass worker, or, as callers wrote it before PassDeps
// took one shape, on a pool with an optional mirror and task time limit (a pass worker is made for them).
import type { SnapEntry } from "../../core/shared/types.ts";
import type { TaskRunner } from "../platform/pool.ts";
import { PassWorker } from "./pass-worker.ts";
import { type PassDeps, type PassOptions, type PassResult, runPass as runPassOn } from "./run-pass.ts";
import type { WorkerMirror } from "./worker-mirror.ts";

/** @deprecated Pass a `worker` (PassDeps); a pool, mirror and time limit are read only when it is absent. */
export type RunEndDeps =
  | PassDeps
  | (Omit<PassDeps, "worker"> & {
      runner: TaskRunner;
      worker?: PassWorker;
      mirror?: WorkerMirror;
      workerTimeoutMs?: number;
    });

/** A pass of either phase (run-pass.ts), on `deps.worker` or on a pass worker made on `deps.runner`. */
export function runPass(entries: SnapEntry[], deps: RunEndDeps, options: PassOptions): Promise<PassResult> {
  if (deps.worker) return runPassOn(entries, { ...deps, worker: deps.worker }, options);
  const { runner, mirror, workerTimeoutMs, ...rest } = deps as Extract<RunEndDeps, { runner: TaskRunner }>;
  const worker = new PassWorker(runner, {
    ...(mirror ? { mirror } : {}),
    ...(workerTimeoutMs !== undefined ? { timeoutMs: workerTimeoutMs } : {}),
  });
  return runPassOn(entries, { ...rest, worker }, options);
}
