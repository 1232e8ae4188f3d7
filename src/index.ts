// Library entry: a session's passes (PassPipeline, or one pass with runPass), the pool that runs them
// (createTaskRunner), the worker tasks as plain functions, the classifier queue, the HTTP thread for
// classifier requests (createThreadFetch) and the pure core. Thread plumbing stays internal.
// The Pi extension itself is `pi-context-guard/extension` (src/main/index.ts).
export * from "./core/cache/cache-behaviour.ts";
export * from "./core/classifier/answers.ts";
export * from "./core/distill/chunk.ts";
export * from "./core/distill/decide.ts";
export * from "./core/distill/finish.ts";
export * from "./core/distill/interpret.ts";
export * from "./core/distill/plan.ts";
export * from "./core/distill/render.ts";
export * from "./core/distill/request.ts";
export * from "./core/distill/run.ts";
export * from "./core/recall/recall.ts";
export * from "./core/records/record.ts";
export * from "./core/records/stats.ts";
export * from "./core/shared/config.ts";
export * from "./core/shared/text.ts";
export * from "./core/shared/types.ts";
export {
  type ClassifyFn,
  type ClassifyOptions,
  classifyAll,
  type QueueOptions,
  type QueueResult,
} from "./main/pass/classify-queue.ts";
export { type RunEndDeps, runPass } from "./main/pass/library-run-pass.ts";
export {
  assistantMessages,
  cacheFamily,
  cacheView,
  hostCacheView,
  type PassOutcome,
  /** @deprecated The same class as PassPipeline. */
  PassPipeline as GuardSession,
  PassPipeline,
  /** @deprecated The same type as PassPipelineParts. */
  type PassPipelineParts as GuardSessionParts,
  type PassPipelineParts,
  type PassRequest,
} from "./main/pass/pass-pipeline.ts";
export { PassWorker, type PassWorkerOptions } from "./main/pass/pass-worker.ts";
export type {
  PassDeps,
  PassOptions,
  PassResult,
  /** @deprecated The same type as PassResult. */
  PassResult as RunEndResult,
} from "./main/pass/run-pass.ts";
export { type ProjectedLike, readContent, SnapshotBuilder } from "./main/pass/snapshot.ts";
export { type Validation, validateEdits, validateEditsPaced } from "./main/pass/validate.ts";
export { createTaskRunner, type PoolBackend, type PoolOptions, type TaskRunner } from "./main/platform/pool.ts";
export { createThreadFetch, type ThreadFetch } from "./main/platform/thread-fetch.ts";
export { PassWorkerError } from "./workers/pass/failures.ts";
export type {
  PassMessage,
  PassReplies,
  PassReply,
  PlanSummary,
  WorkerFailure,
  WorkerFailureCode,
} from "./workers/pass/protocol.ts";
export * as tasks from "./workers/tasks.ts";
