// How often the guard removes what the work needs, as the replay quotes it: the held-out labelled removals
// weighted by each stratum's share of what a replay of the real sessions removes (weighted-rate.ts). Both
// sides are recorded by `node bench/harm-rate.ts` (docs/replay.md); test/unit/core/replay/removal-rates.test.ts
// fails when the held-out counts differ from these, so the printed figure is the measured one.
import { type Interval, type Stratum, stratifiedWilson, weightedRate } from "./weighted-rate.ts";

interface StratumRecord {
  /** Items today's replay removes in the stratum (the needed-later proxy flags them likely needed, or not). */
  removed: number;
  /** Held-out labelled removals in it, the needed ones, and the needed ones whose stub does not carry the use. */
  labelled: number;
  needed: number;
  harmful: number;
}

export const REMOVAL_STRATA: Readonly<{
  date: string;
  sessions: number;
  flagged: StratumRecord;
  notFlagged: StratumRecord;
}> = Object.freeze({
  date: "3 December 2026",
  sessions: 15,
  flagged: { removed: 14, labelled: 36, needed: 19, harmful: 14 },
  notFlagged: { removed: 224, labelled: 104, needed: 2, harmful: 2 },
});

export interface RemovalRate extends Interval {
  rate: number;
}

function rateOf(hits: (s: StratumRecord) => number, record = REMOVAL_STRATA): RemovalRate {
  const strata: Stratum[] = [record.flagged, record.notFlagged].map((s, i) => ({
    name: i === 0 ? "flagged" : "not flagged",
    population: { items: s.removed, chars: 0 },
    labelled: Array.from({ length: s.labelled }, (_, k) => ({ hit: k < hits(s), chars: 0 })),
  }));
  return { rate: weightedRate(strata, "items"), ...stratifiedWilson(strata) };
}

export interface RemovalRates {
  needed: RemovalRate;
  /** Needed, and the stub did not carry what was used. */
  harmful: RemovalRate;
}

/** The share of removed items that were needed, and of those whose stub did not carry what was used. */
export function removalRates(record = REMOVAL_STRATA): RemovalRates {
  return { needed: rateOf((s) => s.needed, record), harmful: rateOf((s) => s.harmful, record) };
}

const pct = (x: number) => `${(x * 100).toFixed(1)}%`;

/** One sentence for the summary, beside the proxy's measured quality. */
export function removalRatesSentence(record = REMOVAL_STRATA): string {
  const { needed, harmful } = removalRates(record);
  return (
    `Weighted to what the guard removed in ${record.sessions} real sessions (${record.date}), ${pct(needed.rate)} of ` +
    `removed items were needed later (95% CI ${pct(needed.low)}–${pct(needed.high)}) and ${pct(harmful.rate)} needed ` +
    `more than their stub lists (95% CI ${pct(harmful.low)}–${pct(harmful.high)})`
  );
}
