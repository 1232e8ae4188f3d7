// How often the guard removes what the work needs, estimated from a stratified hand-labelled sample: the
// labels over-represent the proxy's flagged removals by design, so their raw rate is not the guard's. Each
// stratum's labelled rate is weighted by that stratum's share of what a replay really removes (post-
// stratification), by items or by removed characters.

export interface LabelledItem {
  /** Needed (or harmful) by its hand label. */
  hit: boolean;
  /** Removed characters. */
  chars: number;
}

export interface Stratum {
  name: string;
  /** What the replay removes in this stratum: items and their removed characters. */
  population: { items: number; chars: number };
  /** The labelled removals of this stratum. */
  labelled: readonly LabelledItem[];
}

export type Weighting = "items" | "chars";

export interface Interval {
  low: number;
  high: number;
}

export interface StratumRate {
  name: string;
  /** The stratum's share of the population (by the weighting). */
  share: number;
  /** Its labelled rate (by the weighting), with hits and labelled count. */
  rate: number;
  hits: number;
  labelled: number;
}

/** The labelled rate of one stratum: hit items ÷ items, or hit characters ÷ characters. */
function rateOf(items: readonly LabelledItem[], by: Weighting): number {
  if (by === "items") return items.filter((i) => i.hit).length / items.length;
  const all = items.reduce((n, i) => n + i.chars, 0);
  return all > 0 ? items.reduce((n, i) => n + (i.hit ? i.chars : 0), 0) / all : 0;
}

function shares(strata: readonly Stratum[], by: Weighting): number[] {
  const size = (s: Stratum) => (by === "items" ? s.population.items : s.population.chars);
  const total = strata.reduce((n, s) => n + size(s), 0);
  if (total <= 0) throw new Error("the population is empty: nothing was removed");
  for (const s of strata) {
    if (size(s) > 0 && s.labelled.length === 0)
      throw new Error(`stratum ${s.name} holds ${size(s)} removed ${by} but no labelled removal`);
  }
  return strata.map((s) => size(s) / total);
}

/** Each stratum's share and labelled rate. */
export function strataRates(strata: readonly Stratum[], by: Weighting): StratumRate[] {
  const w = shares(strata, by);
  return strata.map((s, i) => ({
    name: s.name,
    share: w[i] ?? 0,
    rate: s.labelled.length > 0 ? rateOf(s.labelled, by) : 0,
    hits: s.labelled.filter((x) => x.hit).length,
    labelled: s.labelled.length,
  }));
}

/** Σ over strata of (share of the population) × (labelled rate). */
export function weightedRate(strata: readonly Stratum[], by: Weighting): number {
  return strataRates(strata, by).reduce((n, s) => n + s.share * s.rate, 0);
}

/** The Wilson score interval of a proportion `p` observed on `n` (which may be fractional). */
export function wilsonOf(p: number, n: number, z = 1.96): Interval {
  if (n <= 0) return { low: 0, high: 1 };
  const z2 = z * z;
  const centre = (p + z2 / (2 * n)) / (1 + z2 / n);
  const half = (z / (1 + z2 / n)) * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n));
  return { low: Math.max(0, centre - half), high: Math.min(1, centre + half) };
}

/**
 * The 95% stratified Wilson interval of the item-weighted rate: the Wilson interval at the design's
 * effective sample size (the variance of a simple random sample with the same rate, over the stratified
 * estimate's variance), capped at the labelled count. A stratum whose labels are all alike adds no variance
 * of its own; the cap keeps the interval from claiming more than was read.
 */
export function stratifiedWilson(strata: readonly Stratum[], z = 1.96): Interval {
  const rates = strataRates(strata, "items");
  const p = rates.reduce((n, s) => n + s.share * s.rate, 0);
  const n = rates.reduce((k, s) => k + s.labelled, 0);
  const variance = rates.reduce(
    (v, s) => (s.labelled > 0 ? v + (s.share * s.share * s.rate * (1 - s.rate)) / s.labelled : v),
    0,
  );
  const effective = variance > 0 ? Math.min(n, (p * (1 - p)) / variance) : n;
  return wilsonOf(p, effective, z);
}

/**
 * A percentile bootstrap interval: the labelled removals of each stratum are drawn again with replacement
 * (`reps` times, with `random` in [0, 1)), the shares stay. It works for both weightings; a stratum whose
 * labels are all alike adds no spread, so it is narrow where hits are rare.
 */
export function stratifiedBootstrap(
  strata: readonly Stratum[],
  by: Weighting,
  random: () => number,
  reps = 10_000,
  level = 0.95,
): Interval {
  const w = shares(strata, by);
  const estimates: number[] = [];
  for (let r = 0; r < reps; r++) {
    let sum = 0;
    strata.forEach((s, i) => {
      const n = s.labelled.length;
      if (n === 0) return;
      const drawn: LabelledItem[] = [];
      for (let k = 0; k < n; k++) drawn.push(s.labelled[Math.floor(random() * n)] as LabelledItem);
      sum += (w[i] ?? 0) * rateOf(drawn, by);
    });
    estimates.push(sum);
  }
  estimates.sort((a, b) => a - b);
  const at = (q: number) => estimates[Math.min(reps - 1, Math.max(0, Math.floor(q * reps)))] ?? 0;
  return { low: at((1 - level) / 2), high: at(1 - (1 - level) / 2) };
}
