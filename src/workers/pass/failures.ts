// Failures that cross from the pass worker to Pi's thread as data with a code, so the main side can tell
// them apart without matching message text (an Error thrown in a worker arrives as a plain Error: its
// class and extra fields do not survive the trip).

export type WorkerFailureCode =
  /** The worker holds no state for this pass: it was replaced (crash, restart), or the task reached another thread. */
  "pass-lost";

export interface WorkerFailure {
  failure: WorkerFailureCode;
  message: string;
}

const MESSAGES: Record<WorkerFailureCode, string> = {
  "pass-lost": "the pass worker was replaced during the pass; nothing is changed",
};

export const workerFailure = (code: WorkerFailureCode): WorkerFailure => ({ failure: code, message: MESSAGES[code] });

export function isWorkerFailure(value: unknown): value is WorkerFailure {
  return typeof value === "object" && value !== null && typeof (value as WorkerFailure).failure === "string";
}

/** A worker failure on Pi's thread, with its code. */
export class PassWorkerError extends Error {
  override name = "PassWorkerError";
  readonly code: WorkerFailureCode;
  constructor(failure: WorkerFailure) {
    super(failure.message);
    this.code = failure.failure;
  }
}

/** The task's value, or a PassWorkerError for a coded failure. */
export function unwrapFailure<T>(value: T | WorkerFailure): T {
  if (isWorkerFailure(value)) throw new PassWorkerError(value);
  return value;
}
