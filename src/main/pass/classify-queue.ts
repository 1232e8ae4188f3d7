// Sends a pass's classifier requests through one limiter under one deadline. Every request is raced
// against the deadline, so a classifier that hangs or ignores the abort cannot hold up settling; an
// answer that arrives late is dropped. Whatever did not answer comes back as `timeout` or `error`,
// which the pass treats as "keep".
import PQueue from "p-queue";
import type { ClassifierOutcome, ClassifierRequest } from "../../core/shared/types.ts";
import { callback } from "../platform/callbacks.ts";
import { nextTurn } from "../platform/pace.ts";
import { traceSwallowed } from "../platform/swallowed.ts";

export interface ClassifyOptions {
  signal: AbortSignal;
  /** Time left until the pass's deadline. */
  timeoutMs: number;
}

export type ClassifyFn = (request: ClassifierRequest, options: ClassifyOptions) => Promise<ClassifierOutcome>;

export interface QueueOptions {
  concurrency: number;
  timeoutMs: number;
  /** Aborts the whole batch (e.g. the agent's signal). */
  signal?: AbortSignal;
  /** Attempts per request; the classifier client itself must not retry. */
  attempts?: number;
  /**
   * Failed calls in a row, before any answer, after which no further request is started: a classifier
   * that answers every call with an error would otherwise get every request of the pass, twice.
   */
  failFast?: number;
  /** Filled in as the queue runs, for a caller that stops waiting before it ends (a hand-over). */
  progress?: QueueProgress;
}

/** What a running queue has settled so far. */
export interface QueueProgress {
  /** Outcomes no later attempt will change, by request index. */
  final: Map<number, ClassifierOutcome>;
  /** Classifier calls started, retries included. */
  sent: number;
}

/** Failed calls in a row (before any answer) after which a pass stops sending. */
export const FAIL_FAST_CALLS = 4;

export interface QueueResult {
  outcomes: ClassifierOutcome[];
  timedOut: boolean;
  /** Classifier calls started, retries included. */
  sent: number;
  /** Requests that came back with an answer. */
  answered: number;
  /** The parent signal stopped the batch (not the deadline, not the classifier). */
  aborted: boolean;
  /** The pass stopped sending after FAIL_FAST_CALLS failures in a row. */
  gaveUp: boolean;
  /** The last error a call returned, if any. */
  lastError?: string;
  ms: number;
}

/** What a wait resolves to when the pass stopped waiting (deadline, parent abort, or the end). */
const STOPPED = Symbol("stopped");

/**
 * The value of `work`, or STOPPED as soon as `signal` aborts. The listener goes when `work` settles:
 * racing against a promise that lives as long as the pass would keep every call's request and answer
 * reachable from it until the pass ends, and promote them into the old generation on the way.
 */
function untilStopped<T>(work: Promise<T> | T, signal: AbortSignal): Promise<T | typeof STOPPED> {
  if (signal.aborted) return Promise.resolve(STOPPED);
  return new Promise((resolve, reject) => {
    const stop = () => resolve(STOPPED);
    signal.addEventListener("abort", stop, { once: true });
    Promise.resolve(work).then(
      (value) => {
        signal.removeEventListener("abort", stop);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener("abort", stop);
        reject(error);
      },
    );
  });
}

/** The requests themselves, or a count and a loader that fetches each one when its turn comes. */
export type RequestSource =
  | readonly ClassifierRequest[]
  | { count: number; get(index: number): Promise<ClassifierRequest> };

export async function classifyAll(
  requests: RequestSource,
  classify: ClassifyFn,
  options: QueueOptions,
): Promise<QueueResult> {
  const started = performance.now();
  const count = Array.isArray(requests) ? requests.length : (requests as { count: number }).count;
  const load = (index: number): Promise<ClassifierRequest> | ClassifierRequest =>
    Array.isArray(requests)
      ? (requests[index] as ClassifierRequest)
      : (requests as { get(i: number): Promise<ClassifierRequest> }).get(index);
  const outcomes: ClassifierOutcome[] = Array.from({ length: count }, () => ({ status: "timeout" }));
  if (count === 0) return { outcomes, timedOut: false, sent: 0, answered: 0, aborted: false, gaveUp: false, ms: 0 };
  const deadlineAt = started + options.timeoutMs;
  const attempts = Math.max(1, options.attempts ?? 2);
  // Aborted at the deadline, when the parent aborts, and at the end: every wait below ends with it.
  const controller = new AbortController();
  const timer = setTimeout(
    callback("queue-deadline", () => controller.abort(new Error("classifier deadline passed"))),
    options.timeoutMs,
  );
  const onParentAbort = callback("queue-abort", () => controller.abort(options.signal?.reason));
  options.signal?.addEventListener("abort", onParentAbort, { once: true });
  let closed = false;
  let sent = 0;
  let answered = 0;
  let failedInRow = 0;
  let gaveUp = false;
  let lastError: string | undefined;
  const failFast = options.failFast ?? FAIL_FAST_CALLS;
  const settled = new Array<boolean>(count).fill(false);
  const queue = new PQueue({ concurrency: options.concurrency });
  // pi-ai builds and serializes each request body on the main thread before it is sent: calls started
  // together (a window of requests arriving from the worker, a wave of answers freeing their slots)
  // would block the event loop for their sum, so each call starts in an event-loop turn of its own.
  let gate = Promise.resolve();
  const ownTurn = (): Promise<void> => {
    const turn = gate.then(nextTurn);
    gate = turn;
    return turn;
  };

  /** What an outside stop left unanswered is `aborted`, not a timeout: it was not the classifier's doing. */
  const markAborted = () => {
    for (let i = 0; i < count; i++) if (!settled[i]) outcomes[i] = { status: "aborted" };
  };

  const runOne = async (index: number) => {
    for (let attempt = 1; attempt <= attempts; attempt++) {
      const left = deadlineAt - performance.now();
      if (closed || left <= 0 || controller.signal.aborted) return;
      if (gaveUp) {
        if (!settled[index]) {
          outcomes[index] = { status: "error", error: `not sent: the classifier failed ${failFast} calls in a row` };
          settled[index] = true;
        }
        return;
      }
      let began = performance.now();
      let outcome: ClassifierOutcome | typeof STOPPED;
      // Each call waits on a signal of its own, relayed from the pass's while the call runs: a thousand
      // listeners on the pass's one would all be dispatched in one block when the pass ends.
      const own = new AbortController();
      const relay = () => own.abort(controller.signal.reason);
      controller.signal.addEventListener("abort", relay, { once: true });
      try {
        const request = await untilStopped(load(index), own.signal);
        if (request === STOPPED || closed) return;
        if ((await untilStopped(ownTurn(), own.signal)) === STOPPED || closed) return;
        began = performance.now();
        sent++;
        if (options.progress) options.progress.sent++;
        const call = classify(request, {
          signal: own.signal,
          timeoutMs: Math.ceil(Math.max(1, deadlineAt - performance.now())),
        });
        outcome = await untilStopped(call, own.signal);
      } catch (error) {
        outcome = { status: "error", error: error instanceof Error ? error.message : String(error) };
      } finally {
        controller.signal.removeEventListener("abort", relay);
      }
      // A call still running when the pass stopped waiting is cancelled; one that answered has nothing
      // left to cancel.
      if (outcome === STOPPED) own.abort(controller.signal.reason ?? new Error("classifier call abandoned"));
      // A client that gave up on its own timer at the deadline lost the same race: that is a timeout.
      if (outcome === STOPPED || closed || (outcome.status !== "stop" && performance.now() >= deadlineAt)) return;
      outcomes[index] = { ...outcome, ms: outcome.ms ?? Math.round(performance.now() - began) };
      settled[index] = true;
      if (outcome.status === "stop") {
        answered++;
        failedInRow = 0;
        return;
      }
      lastError = outcome.error ?? outcome.status;
      if (answered === 0 && ++failedInRow >= failFast) gaveUp = true;
    }
  };

  try {
    options.signal?.throwIfAborted();
    const progress = options.progress;
    const task = (i: number) => async () => {
      await runOne(i);
      if (progress && settled[i]) progress.final.set(i, outcomes[i] as ClassifierOutcome);
    };
    const all = queue.addAll(Array.from({ length: count }, (_, i) => task(i)));
    const winner = await untilStopped(all, controller.signal);
    const aborted = options.signal?.aborted === true;
    if (aborted) markAborted();
    return {
      outcomes,
      timedOut: winner === STOPPED ? !aborted : performance.now() >= deadlineAt,
      sent,
      answered,
      aborted,
      gaveUp,
      ...(lastError !== undefined ? { lastError } : {}),
      ms: Math.round(performance.now() - started),
    };
  } catch (error) {
    // Aborted (the signal, or the deadline's controller): every unanswered request counts as aborted.
    // Anything else is a fault of the queue's own, and leaves a trace.
    if (!options.signal?.aborted && !controller.signal.aborted) traceSwallowed("classify-queue", error);
    markAborted();
    return {
      outcomes,
      timedOut: false,
      sent,
      answered,
      aborted: true,
      gaveUp,
      ...(lastError !== undefined ? { lastError } : {}),
      ms: Math.round(performance.now() - started),
    };
  } finally {
    closed = true;
    queue.clear();
    clearTimeout(timer);
    options.signal?.removeEventListener("abort", onParentAbort);
    controller.abort(new Error("classifier queue closed"));
  }
}
