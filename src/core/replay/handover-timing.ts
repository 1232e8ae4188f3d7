// When a run-end pass that was handed over (it outlived the settle budget) would have ended, on the
// session's clock, and so whether its drafts reach the next run's first request. The recording has no
// classifier latency: the replay takes one per wave of requests (the queue sends `concurrency` at once).

/**
 * Default latency of one wave of classifier requests: the upper end of what Jev was measured to add to a
 * settle (the spec's latency section), so that the default errs against the guard.
 */
export const DEFAULT_WAVE_MS = 1_200;

/** Waves of classifier calls a pass made: its calls (retries included) through `concurrency` slots. */
export function wavesOf(calls: number, concurrency: number): number {
  if (!(calls > 0)) return 0;
  return Math.ceil(calls / Math.max(1, Math.floor(concurrency)));
}

export interface HandoverTiming {
  /** What the run end waits before handing over. */
  settleBudgetMs: number;
  /** The pass's deadline: no classifier call outlives it. */
  timeoutMs: number;
  /** Waves of classifier calls the pass made (wavesOf). */
  waves: number;
  /** Latency of one wave. */
  waveMs: number;
  /**
   * How long the next prompt waits for a pass that has sent all its calls before its first request
   * (0: it does not wait).
   */
  promptWaitMs?: number;
}

/**
 * When the handed-over pass ends, in ms after the run end: the budget spent waiting, then its waves,
 * at most its deadline. Counting the waves after the budget, not from the run end, errs against it.
 */
export function handedOverEndMs(t: HandoverTiming): number {
  return Math.min(t.timeoutMs, t.settleBudgetMs + t.waves * t.waveMs);
}

/** The pass's classifier calls fit in the budget: the run end waits for it, nothing is handed over. */
export function endsWithinBudget(t: HandoverTiming): boolean {
  return t.waves * t.waveMs <= t.settleBudgetMs;
}

/**
 * Whether a handed-over pass's drafts reach the next run's first request, which goes `gapMs` after the
 * run end (the next prompt's time): the pass ended by then, or it had sent its last calls and ended
 * within the prompt's wait.
 */
export function landsBeforeNextRequest(gapMs: number, t: HandoverTiming): boolean {
  if (endsWithinBudget(t)) return true;
  const end = handedOverEndMs(t);
  if (gapMs >= end) return true;
  const wait = Math.max(0, t.promptWaitMs ?? 0);
  if (wait === 0) return false;
  // The last wave must have been sent when the prompt comes: a wait is for answers, not for requests.
  const lastSent = Math.min(t.timeoutMs, t.settleBudgetMs + (t.waves - 1) * t.waveMs);
  return gapMs >= lastSent && gapMs + wait >= end;
}
