// How far the needed-later proxy can be trusted: its likely-needed tier measured on the held-out half of
// the hand-labelled removals in test/fixtures/labelled-removals.json (the half no rule was tuned on). The
// ratchet test (test/unit/core/replay/proxy-quality.test.ts) fails when the measured counts differ from
// these, so what the replay prints is always what was measured.

export interface ProxyQuality {
  /** Held-out labelled removals, and how many of them were needed. */
  labelled: number;
  needed: number;
  /** Held-out removals the tier flags, and how many of those were needed. */
  flagged: number;
  flaggedNeeded: number;
  /** Of the removals the tier flags, the share that was needed. */
  precision: number;
  /** Of the needed removals, the share the tier flags. */
  recall: number;
}

const HELD_OUT = { labelled: 282, needed: 27, flagged: 45, flaggedNeeded: 21 };

export const PROXY_QUALITY: Readonly<ProxyQuality> = Object.freeze({
  ...HELD_OUT,
  precision: HELD_OUT.flaggedNeeded / HELD_OUT.flagged,
  recall: HELD_OUT.flaggedNeeded / HELD_OUT.needed,
});

/** The 95% Wilson score interval of a proportion of `hits` in `n` ([0, 1] when n is 0). */
export function wilson(hits: number, n: number, z = 1.96): { low: number; high: number } {
  if (n <= 0) return { low: 0, high: 1 };
  const p = hits / n;
  const z2 = z * z;
  const centre = (p + z2 / (2 * n)) / (1 + z2 / n);
  const half = (z / (1 + z2 / n)) * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n));
  return { low: Math.max(0, centre - half), high: Math.min(1, centre + half) };
}

export interface Confusion {
  truePositives: number;
  falsePositives: number;
  falseNegatives: number;
  trueNegatives: number;
  precision: number;
  recall: number;
}

/** Precision and recall of the flags against the labels (same order); 0 when undefined. */
export function confusion(flagged: readonly boolean[], needed: readonly boolean[]): Confusion {
  if (flagged.length !== needed.length) throw new Error(`${flagged.length} flags for ${needed.length} labels`);
  let tp = 0;
  let fp = 0;
  let fn = 0;
  let tn = 0;
  flagged.forEach((f, i) => {
    if (f && needed[i]) tp++;
    else if (f) fp++;
    else if (needed[i]) fn++;
    else tn++;
  });
  return {
    truePositives: tp,
    falsePositives: fp,
    falseNegatives: fn,
    trueNegatives: tn,
    precision: tp + fp > 0 ? tp / (tp + fp) : 0,
    recall: tp + fn > 0 ? tp / (tp + fn) : 0,
  };
}

/**
 * How many removed items were really needed, estimated from the flagged ones: the flagged that are right
 * (precision) plus the needed ones the tier misses (recall).
 */
export function expectedNeeded(flagged: number, quality: Pick<ProxyQuality, "precision" | "recall"> = PROXY_QUALITY) {
  const n = quality.recall > 0 ? (flagged * quality.precision) / quality.recall : flagged;
  return Math.round(n * 10) / 10;
}
