// Code that runs outside an awaited promise (event listeners, timers, worker and stream events, work
// started in the background) has nobody to hand an exception to: thrown there, it ends Pi's process.
// Every such site goes through `callback()`, which catches and reports instead. The fault-injection
// test (test/e2e/callback-faults.test.ts) arms one site at a time with CONTEXT_GUARD_INJECT_FAULT and
// checks that Pi lives, finishes its run and writes a valid session.
import { traceSwallowed } from "./swallowed.ts";

/** Every site that runs outside an awaited promise. */
export const CALLBACK_SITES = [
  /** thread-fetch: the HTTP thread's answers. */
  "http-message",
  /** thread-fetch: the HTTP thread failed or exited. */
  "http-lost",
  /** thread-fetch: a request's signal aborted. */
  "http-abort",
  /** classify-queue: the pass's deadline timer. */
  "queue-deadline",
  /** classify-queue: the parent signal (abort, shutdown) relayed to the pass. */
  "queue-abort",
  /** run-end: the time limit of one worker task. */
  "worker-timer",
  /** pool: a worker that fails outside a task. */
  "pool-error",
  /** telemetry: the background write of queued lines. */
  "telemetry-write",
  /** session-guard: a footer redraw. */
  "status-redraw",
  /** warm-up.ts: the snapshot built in the background after session_start. */
  "snapshot-warm",
  /** warm-up.ts: the session sent to the pass worker in the background when a run starts. */
  "worker-warm",
  /** background-pass.ts: the pass that runs behind the agent (a checkpoint, a handed-over rest). */
  "checkpoint",
  /** routing-deadline: the end of a boundary's wait for its batch. */
  "routing-deadline",
  /** routing-deadline: a batch that answered after the deadline, kept for the next boundary. */
  "routing-late",
  /** interrupts: SIGTERM / SIGHUP. */
  "exit-signal",
  /** interrupts: RPC input read while a pass runs. */
  "rpc-input",
] as const;

export type CallbackSite = (typeof CALLBACK_SITES)[number];

/** Thrown at an armed site by the fault-injection test; never in normal use. */
class InjectedFault extends Error {
  override name = "InjectedFault";
}

let reporter: (message: string) => void = (message) => process.stderr.write(`context-guard: ${message}\n`);
const reported = new Set<string>();

/** Where caught callback errors are reported (the session's warning channel). */
export function setCallbackReporter(report: (message: string) => void): void {
  reporter = report;
}

/** Throws InjectedFault when the test armed this site; otherwise nothing. */
function faultPoint(site: CallbackSite): void {
  if (process.env.CONTEXT_GUARD_INJECT_FAULT === site) throw new InjectedFault(`injected fault at ${site}`);
}

/** Reports an error caught at a site, once per site and message. */
function reportCallbackError(site: CallbackSite, error: unknown): void {
  const message = `internal error in ${site}, ignored: ${error instanceof Error ? error.message : String(error)}`;
  if (reported.has(message)) return;
  reported.add(message);
  try {
    reporter(message);
  } catch (failure) {
    // Reporting must not throw either.
    traceSwallowed("callbacks.reporter", failure);
  }
}

/** `fn` as a listener that can never throw into the event loop. */
export function callback<A extends unknown[]>(site: CallbackSite, fn: (...args: A) => void): (...args: A) => void {
  return (...args: A) => {
    try {
      faultPoint(site);
      fn(...args);
    } catch (error) {
      reportCallbackError(site, error);
    }
  };
}

/** Background work whose failure is reported, never left as an unhandled rejection. */
export function background(site: CallbackSite, work: () => Promise<unknown>): Promise<void> {
  return Promise.resolve()
    .then(() => {
      faultPoint(site);
      return work();
    })
    .then(
      () => undefined,
      (error: unknown) => reportCallbackError(site, error),
    );
}
