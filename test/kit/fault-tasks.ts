// A test-only worker task module: every real task of src/workers/tasks.ts, plus tasks that fail the way a
// worker can fail in the field. Load it with `createTaskRunner({ taskModule: FAULT_TASKS })` and run a
// fault by name (the pool selects tasks by export name), e.g. through `faultyRunner` below.
import { fileURLToPath } from "node:url";

export * from "../../src/workers/tasks.ts";

/** Absolute path of this module, for `createTaskRunner({ taskModule })`. */
export const FAULT_TASKS = fileURLToPath(import.meta.url);

/** Throws inside the task: the pool rejects the task, the worker survives. */
export function faultThrow(): never {
  throw new Error("injected fault: the task threw");
}

/** Ends the worker thread mid-task (process.exit in a worker stops only that thread). */
export function faultExit(): never {
  process.exit(3);
}

/** Never returns: only an abort (which terminates the worker) ends it. */
export function faultSpin(): never {
  for (;;) {
    // busy: a pathological input in a real task would look like this
  }
}

/** Allocates until the worker's heap limit (`resourceLimits`) is reached: the worker dies with ERR_WORKER_OUT_OF_MEMORY. */
export function faultOom(input?: { text?: string }): number {
  const keep: unknown[] = [];
  const seed = input?.text ?? "x";
  for (let i = 0; ; i++) {
    // Distinct strings and arrays so nothing is shared: the heap only grows.
    keep.push(new Array(100_000).fill(`${seed.length}:${i}`), `${seed.slice(0, 64)}${i}`.repeat(1000));
  }
}

/** Answers, then throws outside any task: the worker dies with no task running. */
export function faultThrowLater(): string {
  setTimeout(() => {
    throw new Error("injected fault: an error after the task finished");
  }, 10);
  return "ok";
}

/** Answers, then leaves a rejected promise without a handler (fatal in a worker thread by default). */
export function faultRejectLater(): string {
  setTimeout(() => {
    void Promise.reject(new Error("injected fault: an unhandled rejection in the worker"));
  }, 10);
  return "ok";
}

/** Keeps the thread busy for `ms`, then answers `tag` (the order tasks ran in shows in what they answered). */
export function busy(input: { ms: number; tag: string }): string {
  const end = performance.now() + input.ms;
  while (performance.now() < end) {
    // busy, as a long pricing slice or a large plan would be
  }
  return input.tag;
}
