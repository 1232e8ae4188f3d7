// How often the guard removes what the work needs, as the replay quotes it. Every item a replay of the real
// sessions removes with the default settings was read by hand against the later conversation, each label for
// the exact point and extent of its removal (the census of test/fixtures/labelled-removals.md), so the held-out
// half of those labels is a random half of the removals and its rate needs no weighting. `node
// bench/harm-rate.ts --census FILE` records the list (test/fixtures/removal-census.json) and prints the counts;
// test/unit/core/replay/removal-rates.test.ts fails when a listed removal has no label or the counts differ
// from these. No test replays the sessions: after a change to what the guard removes, rerun the census.
import { wilson } from "./proxy-quality.ts";

export interface CensusRecord {
  date: string;
  sessions: number;
  /** Items the replay removes, each counted once. */
  removed: number;
  /** Held-out labels among them, the needed ones, and the needed ones whose stub does not carry the use. */
  labelled: number;
  needed: number;
  harmful: number;
}

export const REMOVAL_CENSUS: Readonly<CensusRecord> = Object.freeze({
  date: "3 December 2026",
  sessions: 15,
  removed: 238,
  labelled: 116,
  needed: 6,
  harmful: 6,
});

export interface RemovalRate {
  rate: number;
  low: number;
  high: number;
}

function rateOf(hits: number, n: number): RemovalRate {
  return { rate: n > 0 ? hits / n : 0, ...wilson(hits, n) };
}

export interface RemovalRates {
  needed: RemovalRate;
  /** Needed, and the stub did not carry what was used. */
  harmful: RemovalRate;
}

/** The share of removed items that were needed, and of those whose stub did not carry what was used. */
export function removalRates(record: CensusRecord = REMOVAL_CENSUS): RemovalRates {
  return { needed: rateOf(record.needed, record.labelled), harmful: rateOf(record.harmful, record.labelled) };
}

const pct = (x: number) => `${(x * 100).toFixed(1)}%`;

/** One sentence for the summary, beside the proxy's measured quality. */
export function removalRatesSentence(record: CensusRecord = REMOVAL_CENSUS): string {
  const { needed, harmful } = removalRates(record);
  return (
    `Of the ${record.removed} items the guard removed in ${record.sessions} real sessions (${record.date}), each read ` +
    `by hand, ${record.needed} of the ${record.labelled} held out were needed later: ${pct(needed.rate)} (95% CI ` +
    `${pct(needed.low)}–${pct(needed.high)}); ${pct(harmful.rate)} needed more than their stub lists (95% CI ` +
    `${pct(harmful.low)}–${pct(harmful.high)})`
  );
}
