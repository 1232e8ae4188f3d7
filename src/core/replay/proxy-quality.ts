// How far the needed-later proxy can be trusted: its likely-needed tier measured on the hand-labelled
// removals in test/fixtures/labelled-removals.json. The ratchet test
// (test/unit/core/replay/proxy-quality.test.ts) fails when the measured figures fall below these, and
// asks for them to be raised when they improve, so what the replay prints is always what was measured.

export interface ProxyQuality {
  /** Labelled removals, and how many of them were needed. */
  labelled: number;
  needed: number;
  /** Of the removals the tier flags, the share that was needed. */
  precision: number;
  /** Of the needed removals, the share the tier flags. */
  recall: number;
}

export const PROXY_QUALITY: Readonly<ProxyQuality> = Object.freeze({
  labelled: 77,
  needed: 10,
  precision: 0.8,
  recall: 0.8,
});

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
