// Failures of the pass worker as codes. A failure the worker reports travels as data with its code (an
// Error thrown in a worker arrives as a plain Error: its class and extra fields do not survive the
// trip); a failure of the thread itself (a crash, a task stopped at the time limit) gets its code on
// Pi's side, in PassWorker, from what it knows rather than from the error's text.

import type { ReportedCode, WorkerFailure, WorkerFailureCode } from "./protocol.ts";

const MESSAGES: Record<ReportedCode, string> = {
  "pass-lost": "the pass worker was replaced during the pass; nothing is changed",
  "bad-message": "the pass worker received a message it does not know; nothing is changed",
  "settings-missing": "the pass worker does not hold the session's settings; nothing is changed",
};

export const workerFailure = (code: ReportedCode): WorkerFailure => ({ failure: code, message: MESSAGES[code] });

export function isWorkerFailure(value: unknown): value is WorkerFailure {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as WorkerFailure).failure === "string" &&
    Object.hasOwn(MESSAGES, (value as WorkerFailure).failure)
  );
}

/** A failure of the pass worker on Pi's thread, with its code. */
export class PassWorkerError extends Error {
  override name = "PassWorkerError";
  readonly code: WorkerFailureCode;
  constructor(code: WorkerFailureCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
  }
}

/** The task's value, or a PassWorkerError for a failure the worker reported. */
export function unwrapFailure<T>(value: T | WorkerFailure): T {
  if (isWorkerFailure(value)) throw new PassWorkerError(value.failure, value.message);
  return value;
}
