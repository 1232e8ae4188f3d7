// Library entry: a whole pass (runPass), the worker tasks, the pool that runs them, the classifier queue,
// the HTTP thread for classifier requests (createThreadFetch) and the pure core.
// The Pi extension itself is `pi-context-guard/extension` (src/main/index.ts).
export * from "./core/classifier/answers.ts";
export * from "./core/distill/chunk.ts";
export * from "./core/distill/decide.ts";
export * from "./core/distill/interpret.ts";
export * from "./core/distill/pass.ts";
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
export {
  distillRunEnd,
  type PassOptions,
  type RunEndDeps,
  type RunEndResult,
  runPass,
  warmWorker,
} from "./main/pass/run-end.ts";
export { type ProjectedLike, readContent, SnapshotBuilder } from "./main/pass/snapshot.ts";
export { type Validation, validateEdits, validateEditsPaced } from "./main/pass/validate.ts";
export { WorkerMirror } from "./main/pass/worker-mirror.ts";
export {
  createTaskRunner,
  type PoolBackend,
  type PoolOptions,
  type TaskInput,
  type TaskName,
  type TaskOutput,
  type TaskRunner,
  taskModulePath,
} from "./main/platform/pool.ts";
export { createThreadFetch, type ThreadFetch } from "./main/platform/thread-fetch.ts";
export { type PackedValues, packedCount, packValues, unpackValue } from "./workers/pass/packed-values.ts";
export * as tasks from "./workers/tasks.ts";
