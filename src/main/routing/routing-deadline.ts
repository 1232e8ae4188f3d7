// The routing deadline: a turn waits at most `routingTimeoutMs` for its batch. Past it the previous
// set stands, and the batch that answers late is held for the next turn (only the newest one, and
// never one older than what was applied already).
import { background, callback } from "../platform/callbacks.ts";
import type { BatchResult } from "./routing-batch.ts";

export interface Settled {
  /** The batch to apply now, if any. */
  applied?: BatchResult;
  source: "fresh" | "late" | "none";
  deadlinePassed: boolean;
}

/** Resolves to undefined after `ms`; `clear` stops the timer. */
function deadline(ms: number): { expired: Promise<undefined>; clear(): void } {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<undefined>((resolve) => {
    timer = setTimeout(
      callback("routing-deadline", () => resolve(undefined)),
      ms,
    );
  });
  return { expired, clear: () => clearTimeout(timer) };
}

export class LateBatches {
  #gen = 0;
  #appliedGen = 0;
  #late: BatchResult | undefined;

  /** The generation of the next batch. */
  next(): number {
    return ++this.#gen;
  }

  /** Forgets a held late batch (routing went static, or the state was restored). */
  drop(): void {
    this.#late = undefined;
  }

  /** Waits for `batch` up to `ms`; on time it is applied, else an earlier late batch is, if any. */
  async settle(batch: Promise<BatchResult>, gen: number, ms: number): Promise<Settled> {
    const timer = deadline(ms);
    const fresh = await Promise.race([batch, timer.expired]);
    timer.clear();
    let out: Settled;
    if (fresh) {
      out = { applied: fresh, source: "fresh", deadlinePassed: false };
      this.#late = undefined;
    } else {
      const late = this.#late && this.#late.gen < gen ? this.#late : undefined;
      out = late ? { applied: late, source: "late", deadlinePassed: true } : { source: "none", deadlinePassed: true };
      this.#late = undefined;
      void background("routing-late", async () => {
        const answered = await batch;
        if (answered.gen > this.#appliedGen && (!this.#late || this.#late.gen < answered.gen)) this.#late = answered;
      });
    }
    if (out.applied) this.#appliedGen = Math.max(this.#appliedGen, out.applied.gen);
    return out;
  }
}
