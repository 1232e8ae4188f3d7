// The library entry: the extension, a pass on a pool, the worker tasks, the replay, the settings and the
// shapes a classifier and a pass exchange. Every name here is documented in the README ("Use as a
// library"); test/unit/public-surface.test.ts holds the two to each other. Pi's runtime loads only when
// the extension or the replay is first called.
export {
  CONFIG_SCHEMA,
  DEFAULT_CONFIG,
  type GuardConfig,
  type NormalizedConfig,
  normalizeConfig,
} from "./core/shared/config.ts";
export type { ClassifierOutcome, ClassifierRequest, ContextEditDraft, GuardRecord } from "./core/shared/types.ts";
export { default } from "./main/lazy-extension.ts";
export type { ClassifyFn, ClassifyOptions } from "./main/pass/classify-queue.ts";
export {
  type PassOutcome,
  PassPipeline,
  type PassPipelineParts,
  type PassRequest,
} from "./main/pass/pass-pipeline.ts";
export type { PassResult } from "./main/pass/run-pass.ts";
export { createTaskRunner, type PoolBackend, type PoolOptions, type TaskRunner } from "./main/platform/pool.ts";
export { createThreadFetch, type ThreadFetch } from "./main/platform/thread-fetch.ts";
export {
  type ChosenClassifier,
  chooseClassifier,
  findSessionFiles,
  type ReplayFilesOptions,
  type ReplayFilesResult,
  replayFiles,
  writeReport,
} from "./main/replay/replay-api.ts";
export { PassWorkerError } from "./workers/pass/failures.ts";
export type { PassMessage, PassReply } from "./workers/pass/protocol.ts";
export * as tasks from "./workers/tasks.ts";
