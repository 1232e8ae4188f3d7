// The worker pool behind every CPU-heavy step. One switch (`backend`) runs the same task functions in a
// Piscina pool (the product), a Tinypool pool (the benchmark's comparison) or inline on the calling
// thread (library use and the benchmark's baseline).
import { fileURLToPath, pathToFileURL } from "node:url";
import type { ResourceLimits } from "node:worker_threads";
import type * as Tasks from "../../workers/tasks.ts";
import { callback } from "./callbacks.ts";
import { traceSwallowed } from "./swallowed.ts";
import { workerExecArgv } from "./worker-flags.ts";

/** The pool's tasks: every message of a pass goes through "pass" (workers/pass/protocol.ts). */
export type TaskName = "pass" | "recall" | "saved" | "ping";
type TaskFn<K extends TaskName> = (typeof Tasks)[K];
export type TaskInput<K extends TaskName> = Parameters<TaskFn<K>>[0];
export type TaskOutput<K extends TaskName> = ReturnType<TaskFn<K>>;

export type PoolBackend = "piscina" | "tinypool" | "inline";

export interface RunOptions {
  signal?: AbortSignal;
  /**
   * Most time the task may run once a thread has taken it (waiting for one does not count): past it the
   * task is stopped, its thread replaced, and it fails with a TaskTimeoutError.
   */
  timeoutMs?: number;
  /** Runs only when no other task waits: work no pass should queue behind (the footer's dollars). */
  background?: boolean;
}

/** A task that ran longer than its `timeoutMs` and was stopped. */
export class TaskTimeoutError extends Error {
  constructor(ms: number, options?: ErrorOptions) {
    super(`a worker task took longer than ${ms} ms and was stopped`, options);
    this.name = "TaskTimeoutError";
  }
}

export interface TaskRunner {
  readonly backend: PoolBackend;
  /** It stops a task past its `timeoutMs` itself (the runners createTaskRunner makes do). */
  readonly timesTasks?: boolean;
  run<K extends TaskName>(name: K, input: TaskInput<K>, options?: RunOptions): Promise<TaskOutput<K>>;
  /**
   * A runner whose tasks all reach the same thread, for work that keeps state between tasks (a pass).
   * This runner itself when it has one thread (or none: inline); otherwise a one-thread pool of its own,
   * started on first use and shut down with this one. A runner without it is used as it is.
   */
  oneThread?(): TaskRunner;
  /** Why its threads do not start, until a task has run on one (the footer and `/guard` say it). */
  readonly failure?: Error | undefined;
  destroy(): Promise<void>;
}

export interface PoolOptions {
  backend?: PoolBackend;
  /** Threads kept alive while idle. The pass pool keeps one warm so a pass never pays a cold start. */
  minThreads?: number;
  maxThreads?: number;
  idleTimeoutMs?: number;
  /** Test-only: another task module (it must export the real tasks too), e.g. one with injected faults. */
  taskModule?: string;
  /** Memory limits per worker thread (piscina and tinypool). */
  resourceLimits?: ResourceLimits;
}

/** The task module next to this one: `.ts` when running from a checkout, `.js` from the built package. */
function taskModulePath(): string {
  const ext = import.meta.url.endsWith(".ts") ? ".ts" : ".js";
  return fileURLToPath(new URL(`../../workers/tasks${ext}`, import.meta.url));
}

// Node prints an ExperimentalWarning when it strips types from a checkout's .ts worker; Pi's TUI owns
// the terminal, so keep the worker quiet. Piscina loads a task module with require() first and falls
// back to import(): with require(esm) off, the module loads through the ESM loader, which a worker
// stopped mid-load (a timeout, a pool shut down) leaves cleanly. A Node without the flag gets none.
// Pi's own flags go along, but not those a worker refuses (worker-flags.ts): one would stop every worker.
const ESM_LOADER_ONLY = "--no-experimental-require-module";
let workerArgv: readonly string[] | undefined;
export function workerFlags(): string[] {
  workerArgv ??= workerExecArgv([
    ...process.execArgv,
    "--disable-warning=ExperimentalWarning",
    ...(process.allowedNodeEnvironmentFlags.has(ESM_LOADER_ONLY) ? [ESM_LOADER_ONLY] : []),
  ]);
  return [...workerArgv];
}

class InlineRunner implements TaskRunner {
  readonly backend = "inline" as const;
  #tasks: Promise<typeof Tasks> | undefined;
  #module: string | undefined;
  constructor(taskModule?: string) {
    this.#module = taskModule;
  }
  async run<K extends TaskName>(name: K, input: TaskInput<K>, options?: RunOptions): Promise<TaskOutput<K>> {
    options?.signal?.throwIfAborted();
    this.#tasks ??= this.#module ? import(pathToFileURL(this.#module).href) : import("../../workers/tasks.ts");
    const tasks = await this.#tasks;
    const fn = tasks[name] as (input: TaskInput<K>) => TaskOutput<K>;
    return fn(input);
  }
  oneThread(): TaskRunner {
    return this;
  }
  async destroy() {}
}

interface PoolLike {
  run(task: unknown, options: { name: string; signal?: AbortSignal }): Promise<unknown>;
  destroy(): Promise<void>;
  on(event: "error", listener: (error: Error) => void): unknown;
}

type MakePool = (threads: { minThreads: number; maxThreads: number }) => PoolLike;

/** A task waiting for a thread. */
interface Waiting {
  name: string;
  input: unknown;
  options: RunOptions | undefined;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

class ThreadRunner implements TaskRunner {
  readonly backend: PoolBackend;
  readonly timesTasks = true;
  #make: MakePool;
  #threads: { minThreads: number; maxThreads: number };
  #pool: PoolLike | undefined;
  #failed = new WeakMap<PoolLike, Error>();
  #failure: Error | undefined;
  #ran = false;
  #destroyed = false;
  #single: ThreadRunner | undefined;
  /**
   * Tasks wait here rather than in the pool, so that the time limit counts from when a thread takes a
   * task and a background task never holds up one sent after it.
   */
  readonly #waiting: Waiting[] = [];
  readonly #waitingBehind: Waiting[] = [];
  #running = 0;

  constructor(backend: PoolBackend, make: MakePool, threads: { minThreads: number; maxThreads: number }) {
    this.backend = backend;
    this.#make = make;
    this.#threads = threads;
    try {
      this.#pool = this.#start();
    } catch (error) {
      // Said through `failure`; the next task tries again.
      traceSwallowed("pool.start", error);
    }
  }
  get failure(): Error | undefined {
    return this.#failure;
  }
  /**
   * A pool whose worker fails outside a task (e.g. its module does not load) emits "error": unhandled,
   * that would crash Pi, and tasks queued for a worker that never starts would wait forever. Such a
   * pool is dropped (its tasks reject) and the next task starts a new one.
   */
  #start(): PoolLike {
    let pool: PoolLike;
    try {
      pool = this.#make(this.#threads);
    } catch (error) {
      // E.g. a Node flag no worker takes: no thread can start, and no task will run until that changes.
      this.#failure = error as Error;
      throw new Error(`the worker pool could not start: ${(error as Error).message}`, { cause: error });
    }
    pool.on(
      "error",
      callback("pool-error", (error: Error) => {
        // A worker stopped by the runner's own shutdown: the pool is going anyway, and a second destroy
        // while the first runs can leave a replacement thread behind.
        if (this.#destroyed) return;
        this.#failed.set(pool, error);
        if (!this.#ran) this.#failure = error;
        if (this.#pool === pool) this.#pool = undefined;
        pool.destroy().catch((failure: unknown) => traceSwallowed("pool.destroy-failed", failure));
      }),
    );
    return pool;
  }
  run<K extends TaskName>(name: K, input: TaskInput<K>, options?: RunOptions): Promise<TaskOutput<K>> {
    if (this.#destroyed) return Promise.reject(new Error("the worker pool is shut down"));
    return new Promise((resolve, reject) => {
      const task: Waiting = { name, input, options, resolve: resolve as (v: unknown) => void, reject };
      (options?.background ? this.#waitingBehind : this.#waiting).push(task);
      this.#next();
    });
  }
  /** Hands waiting tasks to free threads, foreground first. */
  #next(): void {
    while (this.#running < this.#threads.maxThreads) {
      const task = this.#waiting.shift() ?? this.#waitingBehind.shift();
      if (!task) return;
      if (task.options?.signal?.aborted) {
        task.reject(task.options.signal.reason ?? new Error("aborted"));
        continue;
      }
      this.#running++;
      this.#dispatch(task).finally(() => {
        this.#running--;
        this.#next();
      });
    }
  }
  async #dispatch(task: Waiting): Promise<void> {
    const { signal, timeoutMs } = task.options ?? {};
    const limit = new AbortController();
    const timer =
      timeoutMs === undefined
        ? undefined
        : setTimeout(
            callback("worker-timer", () => limit.abort()),
            timeoutMs,
          );
    const stop = signal ? AbortSignal.any([signal, limit.signal]) : limit.signal;
    try {
      if (this.#destroyed) throw new Error("the worker pool is shut down");
      this.#pool ??= this.#start();
      const pool = this.#pool;
      try {
        task.resolve(await pool.run(task.input, { name: task.name, signal: stop }));
        this.#ran = true;
        this.#failure = undefined;
      } catch (error) {
        if (limit.signal.aborted) throw new TaskTimeoutError(timeoutMs ?? 0, { cause: error });
        // A task of a pool that failed was rejected by its teardown: say why the pool went down.
        const failed = this.#failed.get(pool);
        if (failed) throw new Error(`the worker pool failed: ${failed.message}`, { cause: error });
        throw error;
      }
    } catch (error) {
      task.reject(error);
    } finally {
      if (timer) clearTimeout(timer);
    }
  }
  oneThread(): TaskRunner {
    if (this.#threads.maxThreads <= 1) return this;
    if (this.#destroyed) throw new Error("the worker pool is shut down");
    this.#single ??= new ThreadRunner(this.backend, this.#make, {
      minThreads: Math.min(1, this.#threads.minThreads),
      maxThreads: 1,
    });
    return this.#single;
  }
  async destroy() {
    if (this.#destroyed) return;
    this.#destroyed = true;
    const shut = new Error("the worker pool is shut down");
    for (const task of [...this.#waiting.splice(0), ...this.#waitingBehind.splice(0)]) task.reject(shut);
    await Promise.all([this.#pool?.destroy(), this.#single?.destroy()]);
  }
}

/**
 * The worker pool a PassPipeline (or runPass) runs its passes on: Piscina by default, one thread, which
 * starts on the first task. A pool of more threads serves stateless tasks (recall) on all of them and
 * lends each pass one thread (oneThread). Call `destroy()` when done with it.
 */
export async function createTaskRunner(options: PoolOptions = {}): Promise<TaskRunner> {
  const backend = options.backend ?? "piscina";
  if (backend === "inline") return new InlineRunner(options.taskModule);
  const filename = options.taskModule ?? taskModulePath();
  const resourceLimits = options.resourceLimits ? { resourceLimits: options.resourceLimits } : {};
  // One thread unless asked: a pass keeps its state (the session's copy, the plan, the requests) on one
  // thread, so a pass on a larger pool runs on a one-thread pool of its own (oneThread).
  const maxThreads = options.maxThreads ?? 1;
  const threads = { minThreads: Math.min(options.minThreads ?? 0, maxThreads), maxThreads };
  const idleTimeout = options.idleTimeoutMs ?? 30_000;
  const common = { filename, idleTimeout, execArgv: workerFlags(), ...resourceLimits };
  if (backend === "tinypool") {
    const { Tinypool } = await import("tinypool");
    const make: MakePool = (t) => new Tinypool({ ...common, ...t }) as unknown as PoolLike;
    return new ThreadRunner("tinypool", make, threads);
  }
  const { Piscina } = await import("piscina");
  const make: MakePool = (t) => new Piscina({ ...common, ...t }) as unknown as PoolLike;
  return new ThreadRunner("piscina", make, threads);
}
