// The notices a pass gives: a failure (once: a fault that persists would say the same at every turn),
// and the circuit breaker opening, with what failed and when the classifier is asked again.
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import { warn } from "../platform/warn.ts";

/** The notice when a pass opened the breaker. */
function breakerNotice(opened: { until: number; failures: number }, why: string | undefined, now: number): string {
  const wait = Math.max(1, Math.round((opened.until - now) / 1000));
  return (
    `the classifier did not answer ${opened.failures} passes in a row` +
    `${why ? ` (${why.slice(0, 160)})` : ""}; everything is kept, and it is asked again in ${wait} s`
  );
}

export class PassNotices {
  /** The last failure notice shown. */
  #lastFailure: string | undefined;

  /** A pass failed and changed nothing; said unless it is the last failure again, or `quiet`. */
  failed(ctx: ExtensionContext, error: unknown, quiet: boolean): void {
    const message = `the pass failed, nothing was changed (${(error as Error).message})`;
    if (!quiet && message !== this.#lastFailure) warn(ctx, message);
    this.#lastFailure = message;
  }

  /** A pass ran: the next failure is said again. */
  ran(): void {
    this.#lastFailure = undefined;
  }

  /** Says that the breaker opened, when this pass made it. */
  opened(
    ctx: ExtensionContext,
    opened: { until: number; failures: number } | undefined,
    why: string | undefined,
    now: number,
  ): void {
    if (opened) warn(ctx, breakerNotice(opened, why, now));
  }
}
