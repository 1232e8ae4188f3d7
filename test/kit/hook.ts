// An agent_before_settle pass through the extension's own PassPipeline (the object the hook calls), with
// the real pi-ai System One client pointed at the loopback classifier: Pi's projection → PassPipeline.pass
// (paced snapshot, plan in the pool, classifier requests through the queue, finish in the pool, paced
// validation) → the returned entries. Only the UI calls and telemetry of the hook are left out.
import type { ClassifierContext, ClassifierModel } from "@earendil-works/pi-ai";
import { classify } from "@earendil-works/pi-ai/api/typesafe-system-one";
import { DEFAULT_CONFIG, type GuardConfig } from "../../src/core/shared/config.ts";
import type { ContextEditDraft, CustomDraft, GuardRecord, SnapEntry } from "../../src/core/shared/types.ts";
import { toOutcome } from "../../src/main/pass/classifier.ts";
import type { ClassifyFn } from "../../src/main/pass/classify-queue.ts";
import { PassPipeline } from "../../src/main/pass/pass-pipeline.ts";
import type { ProjectedLike, SnapshotBuilder } from "../../src/main/pass/snapshot.ts";
import type { WorkerMirror } from "../../src/main/pass/worker-mirror.ts";
import { createTaskRunner, type PoolBackend, type TaskRunner } from "../../src/main/platform/pool.ts";
import { createThreadFetch, type ThreadFetch } from "../../src/main/platform/thread-fetch.ts";
import type { PassMessage, SyncInput } from "../../src/workers/pass/protocol.ts";

export const MODEL_REF = "openrouter/~typesafe/jev-latest";

/** The catalog entry Pi would hand to the extension, pointed at the loopback server. */
export function loopbackModel(baseUrl: string): ClassifierModel<"typesafe-system-one"> {
  return {
    type: "classifier",
    id: "~typesafe/jev-latest",
    name: "Jev (loopback)",
    api: "typesafe-system-one",
    provider: "openrouter",
    baseUrl,
    input: ["text"],
    cost: { input: 0.042, output: 0, cacheRead: 0, cacheWrite: 0 },
    contextWindow: 262144,
  };
}

/** piClassify (src/main/pass/classifier.ts) without Pi's registry: same options, same toOutcome mapping. */
export function loopbackClassify(baseUrl: string, fetch?: typeof globalThis.fetch): ClassifyFn {
  const model = loopbackModel(baseUrl);
  return async (request, { signal }) => {
    const context = { state: request.state, questions: request.questions } as ClassifierContext;
    const result = await classify(model, context, {
      apiKey: "k",
      signal,
      maxRetries: 0,
      ...(fetch ? { fetch } : {}),
    });
    return toOutcome(result);
  };
}

/**
 * The extension's HTTP thread for classifier requests, started and up: until it is, requests would go
 * out from the main thread, and the measurement would mix the two.
 */
export async function startedThreadFetch(): Promise<ThreadFetch> {
  const http = createThreadFetch();
  http.start();
  for (let i = 0; i < 1000 && !http.ready; i++) {
    if (http.unavailable) throw new Error(http.unavailable);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  if (!http.ready) throw new Error("the HTTP thread did not start");
  return http;
}

export function benchConfig(overrides: Partial<GuardConfig> = {}): GuardConfig {
  return { ...DEFAULT_CONFIG, excludeTools: [...DEFAULT_CONFIG.excludeTools], ...overrides };
}

/** What one pass sent and got back, read from the task traffic (counted after the hook returns). */
export interface Traffic {
  planCalls: number;
  fresh: SnapEntry[];
  /** Characters of large texts sent as pieces ahead of their entries. */
  pieceChars: number;
  orderLength: number;
  /** Every sync payload posted (sync tasks and the plan's), by reference. */
  messages: SyncInput[];
}

const noTraffic = (): Traffic => ({ planCalls: 0, fresh: [], pieceChars: 0, orderLength: 0, messages: [] });

/** Records the plan task's sync payload by reference; the wrapper itself does no work per entry. */
class CountingRunner implements TaskRunner {
  readonly inner: TaskRunner;
  traffic: Traffic = noTraffic();
  constructor(inner: TaskRunner) {
    this.inner = inner;
  }
  get backend() {
    return this.inner.backend;
  }
  run: TaskRunner["run"] = (name, input, options) => {
    const message = name === "pass" ? (input as PassMessage) : undefined;
    if (message?.kind === "sync" || message?.kind === "plan") {
      // A large pass sends entries ahead of the plan in slices, and huge texts in pieces.
      const sync: SyncInput = message.sync;
      for (const e of sync.fresh) this.traffic.fresh.push(e);
      for (const p of sync.pieces ?? []) this.traffic.pieceChars += p.part.length;
      this.traffic.messages.push(sync);
      if (message.kind === "plan") {
        this.traffic.planCalls++;
        this.traffic.orderLength = sync.order?.tail.length ?? 0;
      }
    }
    return this.inner.run(name, input, options);
  };
  destroy() {
    return this.inner.destroy();
  }
}

/** What the hook runs in the benchmarks: the extension's PassPipeline on one pass runner (counted here). */
export class HookAdapter {
  readonly runner: CountingRunner;
  pipeline: PassPipeline;
  /** The session's stop signal (index.ts aborts it at shutdown). */
  readonly stop = new AbortController();
  constructor(runner: TaskRunner) {
    this.runner = new CountingRunner(runner);
    this.pipeline = new PassPipeline({ config: DEFAULT_CONFIG, runner: this.runner });
  }
  get snapshots(): SnapshotBuilder {
    return this.pipeline.snapshots;
  }
  get mirror(): WorkerMirror {
    return this.pipeline.worker.mirror;
  }
  /** The session ended: the worker drops its copy, as the extension's session_shutdown does. */
  async release(): Promise<void> {
    await this.pipeline.worker.release();
  }
  /** A session whose first pass starts from nothing: empty snapshot cache, nothing known to be sent. */
  resetCold(): void {
    this.pipeline = new PassPipeline({ config: this.pipeline.config, runner: this.runner });
  }
}

export interface HookResult {
  status: "skipped" | "done" | "failed";
  reason?: string;
  edits: ContextEditDraft[];
  record?: CustomDraft;
  /** Classifier calls started (the record's `requests`). */
  requests: number;
  timedOut: boolean;
  /** Time spent in the classifier queue (the record's `ms`): the rest of the hook is pipeline. */
  classifierMs: number;
  /** What the hook returns to Pi (entries appended on settle). */
  returned?: unknown[];
}

/** One agent_before_settle through PassPipeline.pass (the hook's UI calls and telemetry left out). */
export async function runHook(
  session: HookAdapter,
  context: ProjectedLike[],
  classifyFn: ClassifyFn,
  config: GuardConfig,
): Promise<HookResult> {
  session.runner.traffic = noTraffic();
  try {
    session.pipeline.config = config;
    const { result } = await session.pipeline.pass({
      phase: "run-end",
      context,
      classify: classifyFn,
      modelRef: MODEL_REF,
      // The generated sessions' main model speaks anthropic-messages.
      family: "anthropic",
      signal: AbortSignal.any([session.stop.signal]),
      onJudging: () => {},
    });
    if (result.status === "skipped")
      return { status: "skipped", reason: result.reason, edits: [], requests: 0, timedOut: false, classifierMs: 0 };
    const record: GuardRecord = result.record;
    return {
      status: "done",
      edits: result.edits,
      record: result.recordDraft,
      requests: record.requests,
      timedOut: record.timedOut,
      classifierMs: record.ms,
      returned: [...result.edits, result.recordDraft],
    };
  } catch (error) {
    const reason = (error as Error).message;
    return { status: "failed", reason, edits: [], requests: 0, timedOut: false, classifierMs: 0 };
  }
}

/** The pass runner index.ts creates (one warm thread), warmed with a ping. */
export async function passRunner(backend: PoolBackend): Promise<TaskRunner> {
  const runner = await createTaskRunner({ backend, minThreads: 1, maxThreads: 1 });
  await runner.run("ping", undefined as never);
  return runner;
}
