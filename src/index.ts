// Library entry: a whole pass (runPass), the worker tasks, the pool that runs them, the classifier queue,
// the HTTP thread for classifier requests (createThreadFetch) and the pure core.
// The Pi extension itself is `pi-context-guard/extension` (src/main/index.ts).
export * from "./core/answers.ts";
export * from "./core/chunk.ts";
export * from "./core/config.ts";
export * from "./core/decide.ts";
export * from "./core/interpret.ts";
export * from "./core/pass.ts";
export * from "./core/recall.ts";
export * from "./core/record.ts";
export * from "./core/render.ts";
export * from "./core/request.ts";
export * from "./core/run.ts";
export * from "./core/stats.ts";
export * from "./core/text.ts";
export * from "./core/types.ts";
export {
  type ClassifyFn,
  type ClassifyOptions,
  classifyAll,
  type QueueOptions,
  type QueueResult,
} from "./main/classify-queue.ts";
export {
  createTaskRunner,
  type PoolBackend,
  type PoolOptions,
  type TaskInput,
  type TaskName,
  type TaskOutput,
  type TaskRunner,
  taskModulePath,
} from "./main/pool.ts";
export {
  distillRunEnd,
  type PassOptions,
  type RunEndDeps,
  type RunEndResult,
  runPass,
  warmWorker,
} from "./main/run-end.ts";
export { type ProjectedLike, readContent, SnapshotBuilder } from "./main/snapshot.ts";
export { createThreadFetch, type ThreadFetch } from "./main/thread-fetch.ts";
export { type Validation, validateEdits, validateEditsPaced } from "./main/validate.ts";
export { WorkerMirror } from "./main/worker-mirror.ts";
export { type PackedValues, packedCount, packValues, unpackValue } from "./workers/packed-values.ts";
export * as tasks from "./workers/tasks.ts";
