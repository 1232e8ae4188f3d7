// When the classifier keeps failing (down, hanging, rate limited), asking it at every checkpoint would
// make each turn wait out the deadline, or send a stream of requests that all fail. After a few passes
// in a row without a single answer the guard stops asking for a while (it keeps everything meanwhile),
// then lets one pass through as a probe; each failed probe doubles the pause. A server that says when to
// come back (429 or 503 with retry-after) is believed, within a bound.

export interface BreakerOptions {
  /** Passes in a row without any answer before the guard stops asking. */
  failuresToOpen: number;
  /** The first pause; it doubles after each failed probe. */
  baseMs: number;
  /** The longest pause, also the most a retry-after is believed. */
  maxMs: number;
}

export const BREAKER_DEFAULTS: BreakerOptions = { failuresToOpen: 2, baseMs: 30_000, maxMs: 10 * 60_000 };

/** What one pass's classifier requests did. */
export interface PassReport {
  /** Requests sent (a pass that sent none says nothing about the classifier). */
  sent: number;
  /** Requests that came back with an answer. */
  answered: number;
  /** The pass was stopped from outside (abort, shutdown): not the classifier's fault. */
  aborted?: boolean;
  /** The last error, for the footer and the notice. */
  error?: string;
}

export type BreakerState =
  | { kind: "closed" }
  /** Not asking until `until` (epoch ms); `error` is the last failure seen. */
  | { kind: "open"; until: number; failures: number; error?: string };

export class Breaker {
  #options: BreakerOptions;
  #failures = 0;
  #pauseMs: number;
  #until = 0;
  #probing = false;
  #error: string | undefined;

  constructor(options: Partial<BreakerOptions> = {}) {
    this.#options = { ...BREAKER_DEFAULTS, ...options };
    this.#pauseMs = this.#options.baseMs;
  }

  /** Whether a pass may ask the classifier now. The first pass after a pause is the probe. */
  allow(now: number): boolean {
    if (this.#until === 0) return true;
    if (now < this.#until) return false;
    this.#probing = true;
    return true;
  }

  state(now: number): BreakerState {
    if (this.#until === 0 || now >= this.#until) return { kind: "closed" };
    return {
      kind: "open",
      until: this.#until,
      failures: this.#failures,
      ...(this.#error ? { error: this.#error } : {}),
    };
  }

  /** Returns true when this report opened (or re-opened) the breaker. */
  report(now: number, pass: PassReport): boolean {
    if (pass.sent === 0 || pass.aborted) return false;
    if (pass.answered > 0) {
      this.#failures = 0;
      this.#pauseMs = this.#options.baseMs;
      this.#until = 0;
      this.#probing = false;
      this.#error = undefined;
      return false;
    }
    this.#failures++;
    this.#error = pass.error;
    if (this.#probing) {
      this.#probing = false;
      this.#pauseMs = Math.min(this.#options.maxMs, this.#pauseMs * 2);
      this.#until = now + this.#pauseMs;
      return true;
    }
    if (this.#failures >= this.#options.failuresToOpen) {
      this.#until = now + this.#pauseMs;
      return true;
    }
    return false;
  }

  /** Forget every failure: the user changed the settings (a key, a model) and asks to try again now. */
  reset(): void {
    this.#failures = 0;
    this.#pauseMs = this.#options.baseMs;
    this.#until = 0;
    this.#probing = false;
    this.#error = undefined;
  }

  /** The server asked to wait (`retry-after`): no request before then, within maxMs. */
  holdOff(now: number, ms: number, error?: string): void {
    if (!(ms > 0)) return;
    const until = now + Math.min(ms, this.#options.maxMs);
    if (until <= this.#until) return;
    this.#until = until;
    this.#probing = false;
    if (error) this.#error = error;
  }
}

/**
 * A `retry-after` header in milliseconds: delta-seconds or an HTTP date (RFC 9110); undefined when it
 * is absent or unreadable. `retry-after-ms` (sent by some gateways) wins when present.
 */
export function retryAfterMs(
  header: string | null | undefined,
  headerMs: string | null | undefined,
  now: number,
): number | undefined {
  const ms = Number(headerMs);
  if (headerMs && Number.isFinite(ms) && ms > 0) return ms;
  if (!header) return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return seconds > 0 ? seconds * 1000 : undefined;
  const at = Date.parse(header);
  return Number.isFinite(at) && at > now ? at - now : undefined;
}
