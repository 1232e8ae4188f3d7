// The weighted rate the replay quotes (removal-rates.ts) against the labelled removals it is measured on:
// the held-out counts in each stratum of the needed-later proxy are recomputed here and must match the
// record (the removed counts come from bench/harm-rate.ts, which replays every real session). Also the
// hand-read stub verdicts (labelled-removals.md) that make a needed removal harmful.
import { beforeAll, describe, expect, it } from "vitest";
import { findSuspects } from "../../../../src/core/replay/proxy.ts";
import { REMOVAL_STRATA, removalRates, removalRatesSentence } from "../../../../src/core/replay/removal-rates.ts";
import { compactionsOf, laterMessages } from "../../../../src/main/replay/proxy-input.ts";
import { readSessionFile } from "../../../../src/main/replay/reader.ts";
import { type LabelledRemoval, pieceFor, readLabelledSet, sessionPath } from "../../../kit/labelled-removals.ts";

const set = readLabelledSet();
const held = set.removals.filter((r) => r.half === "report");
const flagged = new Set<LabelledRemoval>();

beforeAll(async () => {
  for (const name of new Set(held.map((r) => r.session))) {
    const file = await readSessionFile(sessionPath(name));
    const removals = held.filter((r) => r.session === name);
    const pieces = removals.map((r) => pieceFor(file, r));
    const likely = new Set(
      findSuspects(pieces, laterMessages(file.branch), compactionsOf(file.branch))
        .filter((s) => s.tier === "likely-needed")
        .map((s) => s.key),
    );
    removals.forEach((r, i) => {
      if (likely.has(pieces[i]?.key ?? "")) flagged.add(r);
    });
  }
}, 120_000);

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

describe("REMOVAL_STRATA", () => {
  it("holds the held-out counts of each stratum as the proxy sorts them today", () => {
    const count = (inStratum: boolean) => {
      const rs = held.filter((r) => flagged.has(r) === inStratum);
      const needed = rs.filter((r) => r.label === "needed");
      return { labelled: rs.length, needed: needed.length, harmful: needed.filter((r) => !r.stubCovers).length };
    };
    const { removed: _f, ...flaggedRecord } = REMOVAL_STRATA.flagged;
    const { removed: _n, ...otherRecord } = REMOVAL_STRATA.notFlagged;
    expect({ flagged: count(true), notFlagged: count(false) }, "record these in REMOVAL_STRATA").toEqual({
      flagged: flaggedRecord,
      notFlagged: otherRecord,
    });
  });

  it("weights each stratum by what the replay removes, not by what was labelled", () => {
    const record = {
      date: "d",
      sessions: 1,
      flagged: { removed: 10, labelled: 10, needed: 5, harmful: 2 },
      notFlagged: { removed: 90, labelled: 10, needed: 0, harmful: 0 },
    };
    const { needed, harmful } = removalRates(record);
    expect(needed.rate).toBeCloseTo(0.05, 10);
    expect(harmful.rate).toBeCloseTo(0.02, 10);
    expect(needed.low).toBeLessThan(0.05);
    expect(needed.high).toBeGreaterThan(0.05);
    expect(removalRatesSentence(record)).toContain("5.0% of removed items were needed later (95% CI ");
  });
});
