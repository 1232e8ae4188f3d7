// The figure the replay quotes (removal-rates.ts) against the labels it is counted from: every removal of the
// recorded replay (test/fixtures/removal-census.json, written by `bench/harm-rate.ts --census`) must carry a
// hand label, and the held-out counts among them must be the record's. Also the hand-read stub verdicts
// (labelled-removals.md) that make a needed removal harmful.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { REMOVAL_CENSUS, removalRates, removalRatesSentence } from "../../../../src/core/replay/removal-rates.ts";
import {
  countLabels,
  FIXTURES,
  type LabelledRemoval,
  readLabelledSet,
  removalKey,
} from "../../../kit/labelled-removals.ts";

const set = readLabelledSet();
const census = JSON.parse(readFileSync(join(FIXTURES, "removal-census.json"), "utf8")) as {
  date: string;
  items: Array<
    Pick<LabelledRemoval, "session" | "line" | "afterLine" | "removed" | "omittedLines"> & {
      kind: "output" | "exchange";
    }
  >;
};
// A label counts only for the removal it was read for: the same entry, run end and chunks.
const labels = new Map(set.removals.map((r) => [removalKey(r), r]));

describe("the stub verdicts of the labelled removals", () => {
  it("are on every needed removal, with a reason, and on no other", () => {
    for (const r of set.removals) {
      const key = `${r.session}:${r.line}`;
      if (r.label === "needed") {
        expect(typeof r.stubCovers, key).toBe("boolean");
        expect(r.stubReason?.length ?? 0, key).toBeGreaterThan(20);
      } else {
        expect(r.stubCovers, key).toBeUndefined();
        expect(r.stubReason, key).toBeUndefined();
      }
    }
  });
});

describe("REMOVAL_CENSUS", () => {
  it("is the census of one replay: every removal it lists carries a hand label read for it, in a half", () => {
    const keys = census.items.map(removalKey);
    expect(
      keys.filter((k) => !labels.has(k)),
      "label these (bench/draw-removals.ts --exclude, bench/label-context.ts)",
    ).toEqual([]);
    expect(new Set(keys).size).toBe(keys.length);
    for (const k of keys) {
      const label = labels.get(k);
      expect(label?.reason.length ?? 0, k).toBeGreaterThan(10);
      expect(label?.half, k).toMatch(/^(tune|report)$/);
      expect(label?.kind ?? "output", k).toBe(census.items[keys.indexOf(k)]?.kind);
    }
  });

  it("holds the held-out counts among the census's removals", () => {
    const held = census.items
      .map((i) => labels.get(removalKey(i)))
      .filter((r): r is LabelledRemoval => r?.half === "report");
    expect(
      {
        date: census.date,
        sessions: new Set(census.items.map((i) => i.session)).size,
        removed: census.items.length,
        ...countLabels(held),
      },
      "record these in REMOVAL_CENSUS",
    ).toEqual({ ...REMOVAL_CENSUS });
  });

  it("gives the held-out rates with their Wilson intervals, and says so", () => {
    const record = { date: "d", sessions: 2, removed: 200, labelled: 100, needed: 2, harmful: 1 };
    const { needed, harmful } = removalRates(record);
    expect(needed.rate).toBeCloseTo(0.02, 10);
    expect(harmful.rate).toBeCloseTo(0.01, 10);
    expect(needed.low).toBeGreaterThan(0);
    expect(needed.low).toBeLessThan(0.02);
    expect(needed.high).toBeGreaterThan(0.05);
    const sentence = removalRatesSentence(record);
    expect(sentence).toContain("Of the 200 items the guard removed in 2 real sessions (d)");
    expect(sentence).toContain("2 of the 100 held out were needed later: 2.0% (95% CI 0.6%–");
    expect(sentence).toContain("1.0% needed more than their stub lists");
  });
});
