// The figure the replay quotes (removal-rates.ts) against the labels it is counted from: every removal of the
// recorded replay (test/fixtures/removal-census.json, written by `bench/harm-rate.ts --census`) must carry a
// hand label, and the held-out counts among them must be the record's. Also the hand-read stub verdicts
// (labelled-removals.md) that make a needed removal harmful.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { REMOVAL_CENSUS, removalRates, removalRatesSentence } from "../../../../src/core/replay/removal-rates.ts";
import { FIXTURES, readLabelledSet } from "../../../kit/labelled-removals.ts";

const set = readLabelledSet();
const census = JSON.parse(readFileSync(join(FIXTURES, "removal-census.json"), "utf8")) as {
  date: string;
  items: Array<{ session: string; line: number; kind: "output" | "exchange" }>;
};
const labels = new Map(set.removals.map((r) => [`${r.session}:${r.line}`, r]));

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
  it("is the census of one replay: every removal it lists carries a hand label with a reason", () => {
    const missing = census.items.map((i) => `${i.session}:${i.line}`).filter((k) => !labels.has(k));
    expect(missing, "label these (bench/draw-removals.ts --exclude, bench/label-context.ts)").toEqual([]);
    for (const i of census.items) expect(labels.get(`${i.session}:${i.line}`)?.reason.length ?? 0).toBeGreaterThan(10);
    expect(new Set(census.items.map((i) => `${i.session}:${i.line}`)).size).toBe(census.items.length);
  });

  it("holds the held-out counts among the census's removals", () => {
    const held = census.items
      .map((i) => labels.get(`${i.session}:${i.line}`))
      .filter((r) => r !== undefined && r.half === "report");
    const needed = held.filter((r) => r?.label === "needed");
    expect(
      {
        date: census.date,
        removed: census.items.length,
        labelled: held.length,
        needed: needed.length,
        harmful: needed.filter((r) => r?.stubCovers === false).length,
      },
      "record these in REMOVAL_CENSUS",
    ).toEqual({
      date: REMOVAL_CENSUS.date,
      removed: REMOVAL_CENSUS.removed,
      labelled: REMOVAL_CENSUS.labelled,
      needed: REMOVAL_CENSUS.needed,
      harmful: REMOVAL_CENSUS.harmful,
    });
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
