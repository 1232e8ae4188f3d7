// A prompt is never held by the guard. While a boundary waits for the classifier (the run-end pass, or
// the run's last turn_end waiting for a checkpoint), a prompt the user sends (Pi queues it as a steer or
// a follow-up) stops that wait: what was answered lands at once, the rest is recorded `aborted` and asked
// again at a later pass. A prompt already queued when a boundary starts to wait stops it from the start.

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
