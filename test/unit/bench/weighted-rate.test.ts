import { describe, expect, it } from "vitest";
import {
  type LabelledItem,
  type Stratum,
  strataRates,
  stratifiedBootstrap,
  stratifiedWilson,
  weightedRate,
  wilsonOf,
} from "../../../bench/lib/weighted-rate.ts";
import { wilson } from "../../../src/core/replay/proxy-quality.ts";
import { mulberry32 } from "../../kit/prng.ts";

const items = (hits: number, misses: number, chars = 100): LabelledItem[] => [
  ...Array.from({ length: hits }, () => ({ hit: true, chars })),
  ...Array.from({ length: misses }, () => ({ hit: false, chars })),
];

// A sample that over-represents the flagged stratum: half its labels are flagged, a tenth of the removals are.
const strata: Stratum[] = [
  { name: "flagged", population: { items: 10, chars: 5000 }, labelled: items(10, 10) },
  { name: "not flagged", population: { items: 90, chars: 5000 }, labelled: items(1, 19) },
];

describe("weightedRate", () => {
  it("weights each stratum's labelled rate by its share of the removals, not of the labels", () => {
    // 10% × 50% + 90% × 5%, where the raw labelled rate is 11 of 40.
    expect(weightedRate(strata, "items")).toBeCloseTo(0.095, 10);
    expect(strataRates(strata, "items").map((s) => s.share)).toEqual([0.1, 0.9]);
  });

  it("weights by removed characters: a stratum's share of them and its needed characters", () => {
    const byChars: Stratum[] = [
      { name: "a", population: { items: 1, chars: 9000 }, labelled: [...items(1, 0, 900), ...items(0, 1, 100)] },
      { name: "b", population: { items: 9, chars: 1000 }, labelled: items(0, 5) },
    ];
    expect(weightedRate(byChars, "chars")).toBeCloseTo(0.9 * 0.9, 10);
    expect(weightedRate(byChars, "items")).toBeCloseTo(0.1 * 0.5, 10);
  });

  it("refuses a stratum that removed items but has no label, and an empty population", () => {
    const unlabelled: Stratum[] = [strata[0] as Stratum, { ...(strata[1] as Stratum), labelled: [] }];
    expect(() => weightedRate(unlabelled, "items")).toThrow(/not flagged holds 90 removed items but no labelled/);
    const empty = strata.map((s) => ({ ...s, population: { items: 0, chars: 0 } }));
    expect(() => weightedRate(empty, "items")).toThrow(/nothing was removed/);
  });

  it("ignores a stratum with no removals and no labels", () => {
    const none: Stratum = { name: "none", population: { items: 0, chars: 0 }, labelled: [] };
    expect(weightedRate([...strata, none], "items")).toBeCloseTo(0.095, 10);
  });
});

describe("stratifiedWilson", () => {
  it("is the plain Wilson interval when there is one stratum", () => {
    const one: Stratum[] = [{ name: "all", population: { items: 50, chars: 1 }, labelled: items(5, 35) }];
    expect(stratifiedWilson(one)).toEqual(wilson(5, 40));
  });

  it("holds the weighted rate, and stays open above when every label of the largest stratum is alike", () => {
    const i = stratifiedWilson(strata);
    expect(i.low).toBeLessThan(0.095);
    expect(i.high).toBeGreaterThan(0.095);
    const zero: Stratum[] = [strata[0] as Stratum, { ...(strata[1] as Stratum), labelled: items(0, 20) }];
    const z = stratifiedWilson(zero);
    expect(weightedRate(zero, "items")).toBeCloseTo(0.05, 10);
    // Capped at the 40 labels read: no narrower than a simple sample of that size.
    expect(z.high).toBeGreaterThanOrEqual(wilsonOf(0.05, 40).high - 1e-12);
  });
});

describe("stratifiedBootstrap", () => {
  it("brackets the estimate, is reproducible with a seed, and is a point when no label varies", () => {
    const a = stratifiedBootstrap(strata, "items", mulberry32(1), 2000);
    const b = stratifiedBootstrap(strata, "items", mulberry32(1), 2000);
    expect(a).toEqual(b);
    expect(a.low).toBeLessThan(0.095);
    expect(a.high).toBeGreaterThan(0.095);
    const fixed: Stratum[] = [{ name: "all", population: { items: 5, chars: 5 }, labelled: items(2, 0) }];
    expect(stratifiedBootstrap(fixed, "chars", mulberry32(2), 100)).toEqual({ low: 1, high: 1 });
  });
});
