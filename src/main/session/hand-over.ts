// A prompt is never held by the guard. While a boundary waits for the classifier (the run-end pass, or
// the run's last turn_end waiting for a checkpoint), a prompt the user sends (Pi queues it as a steer or
// a follow-up) stops that wait: what was answered lands at once. The rest of a run-end pass goes on in the
// background and lands at a later boundary, like a checkpoint (restResult); a checkpoint waited for stops
// asking, and its rest is recorded `aborted` and asked again at a later pass. A prompt already queued when
// a boundary starts to wait stops it from the start.
import type { Judged } from "../pass/background-checkpoint.ts";
import type { ClassifierStats, PassRest } from "../pass/handed-over.ts";

/**
 * The rest of a handed-over pass as a background checkpoint's result. What the classifier did in the
 * whole pass is reported once it is known; a failure lands nothing (the first part recorded the waiting
 * items `aborted`, so a later pass asks them again).
 */
export async function restResult(
  rest: Promise<PassRest>,
  on: { report(classifier: ClassifierStats): void; failed(error: unknown): void; ended(): void },
): Promise<Judged | undefined> {
  try {
    const { edits, record, classifier } = await rest;
    on.report(classifier);
    return { edits, record };
  } catch (error) {
    on.failed(error);
    return undefined;
  } finally {
    on.ended();
  }
}

export class HandOver {
  /** The stop of what holds the current boundary, while one does. */
  #holding: AbortController | undefined;
  /** A steer or follow-up was sent and no turn has started since (it waits for this run's boundaries). */
  #queued = false;
  /** A prompt is waiting for the boundary to hand over (the footer says so, for the moments it takes). */
  waiting = false;

  /** Runs `work` as what holds the boundary; `stop` is aborted when a prompt comes. */
  async hold<T>(stop: AbortController | undefined, work: () => Promise<T>, done: () => void): Promise<T> {
    this.#holding = stop;
    if (this.#queued) stop?.abort(new Error("a prompt is waiting"));
    try {
      return await work();
    } finally {
      this.#holding = undefined;
      if (this.waiting) {
        this.waiting = false;
        done();
      }
    }
  }

  /** input: returns whether a held boundary was stopped for this prompt. */
  input(streamingBehavior: "steer" | "followUp" | undefined): boolean {
    if (!streamingBehavior) return false;
    this.#queued = true;
    const holding = this.#holding;
    if (!holding || holding.signal.aborted) return false;
    holding.abort(new Error("a prompt is waiting"));
    this.waiting = true;
    return true;
  }

  /** turn_start: a queued prompt has been taken up. */
  turnStarted(): void {
    this.#queued = false;
  }
}
