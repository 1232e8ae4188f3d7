// The needed-later proxy measured on the hand-labelled removals. The gate runs on the held-out half (the
// half no rule was tuned on): it fails when the likely-needed tier's counts there differ from the recorded
// PROXY_QUALITY, both when they get worse and when they improve (record them), so the replay never prints
// a figure that was not measured. The tuning half is shown for context only.
import { beforeAll, describe, expect, it } from "vitest";
import { findSuspects } from "../../../../src/core/replay/proxy.ts";
import { type Confusion, confusion, PROXY_QUALITY, wilson } from "../../../../src/core/replay/proxy-quality.ts";
import { heldOutQuality } from "../../../../src/core/replay/proxy-words.ts";
import { compactionsOf, laterMessages } from "../../../../src/main/replay/proxy-input.ts";
import { readSessionFile } from "../../../../src/main/replay/reader.ts";
import {
  type LabelledRemoval,
  pieceFor,
  readLabelledSet,
  removalKey,
  sessionPath,
} from "../../../kit/labelled-removals.ts";

const set = readLabelledSet();
const verdicts = new Map<LabelledRemoval, string | undefined>();
const measured: Record<"tune" | "report", Confusion> = {} as Record<"tune" | "report", Confusion>;

beforeAll(async () => {
  // One call per session: the proxy indexes the later conversation once for all its pieces.
  for (const name of new Set(set.removals.map((r) => r.session))) {
    const file = await readSessionFile(sessionPath(name));
    const removals = set.removals.filter((r) => r.session === name);
    const pieces = removals.map((r) => pieceFor(file, r));
    const tiers = new Map(
      findSuspects(pieces, laterMessages(file.branch), compactionsOf(file.branch)).map((s) => [s.key, s.tier]),
    );
    removals.forEach((r, i) => {
      verdicts.set(r, tiers.get(pieces[i]?.key ?? ""));
    });
  }
  for (const half of ["tune", "report"] as const) {
    const rs = set.removals.filter((r) => r.half === half);
    measured[half] = confusion(
      rs.map((r) => verdicts.get(r) === "likely-needed"),
      rs.map((r) => r.label === "needed"),
    );
  }
}, 120_000);

const pct = (x: number) => `${(x * 100).toFixed(1)}%`;

function table(half: "tune" | "report"): string {
  return set.removals
    .filter((r) => r.half === half)
    .map((r) => `${r.label.padEnd(10)} ${String(verdicts.get(r) ?? "-").padEnd(13)} ${r.session}:${r.line} ${r.what}`)
    .join("\n");
}

describe("the labelled removals", () => {
  it("are at least 200 from at least 8 sessions, 40 needed, each with a label, a reason and a half", () => {
    expect(set.removals.length).toBeGreaterThanOrEqual(200);
    expect(new Set(set.removals.map((r) => r.session)).size).toBeGreaterThanOrEqual(8);
    expect(set.removals.filter((r) => r.label === "needed").length).toBeGreaterThanOrEqual(40);
    expect(set.removals.some((r) => r.kind === "exchange")).toBe(true);
    for (const r of set.removals) {
      expect(["needed", "not-needed"]).toContain(r.label);
      expect(["tune", "report"]).toContain(r.half);
      expect(r.reason.length).toBeGreaterThan(20);
    }
    // The same output may be labelled twice, for removals at different points or of other chunks.
    const keys = set.removals.map(removalKey);
    expect(new Set(keys).size).toBe(keys.length);
  });

  it("hold as many removals and needed ones in the held-out half as PROXY_QUALITY says", () => {
    const held = set.removals.filter((r) => r.half === "report");
    expect(held.length).toBe(PROXY_QUALITY.labelled);
    expect(held.filter((r) => r.label === "needed").length).toBe(PROXY_QUALITY.needed);
  });
});

describe("the likely-needed tier on the held-out half", () => {
  it("flags as many removals, and as many needed ones, as PROXY_QUALITY records", () => {
    const m = measured.report;
    const t = measured.tune;
    const flagged = m.truePositives + m.falsePositives;
    const line =
      `held out: precision ${pct(m.precision)} (${m.truePositives}/${flagged}), recall ${pct(m.recall)} ` +
      `(${m.truePositives}/${m.truePositives + m.falseNegatives}); tuning half: precision ${pct(t.precision)}, ` +
      `recall ${pct(t.recall)}. To record: flagged ${flagged}, flaggedNeeded ${m.truePositives} in PROXY_QUALITY`;
    expect({ flagged, flaggedNeeded: m.truePositives }, `${line}\n${table("report")}`).toEqual({
      flagged: PROXY_QUALITY.flagged,
      flaggedNeeded: PROXY_QUALITY.flaggedNeeded,
    });
  });

  it("is quoted with its 95% Wilson intervals", () => {
    const p = wilson(PROXY_QUALITY.flaggedNeeded, PROXY_QUALITY.flagged);
    const r = wilson(PROXY_QUALITY.flaggedNeeded, PROXY_QUALITY.needed);
    const whole = (x: number) => `${Math.round(x * 100)}%`;
    const sentence = heldOutQuality();
    expect(sentence).toContain(`On ${PROXY_QUALITY.labelled} held-out hand-labelled removals`);
    expect(sentence).toContain(`(95% CI ${whole(p.low)}–${whole(p.high)})`);
    expect(sentence).toContain(`(95% CI ${whole(r.low)}–${whole(r.high)})`);
  });
});

describe("wilson", () => {
  it("matches the textbook interval and stays inside [0, 1]", () => {
    const { low, high } = wilson(20, 44);
    expect(low).toBeCloseTo(0.3168, 3);
    expect(high).toBeCloseTo(0.5992, 3);
    expect(wilson(0, 10).low).toBe(0);
    expect(wilson(10, 10).high).toBe(1);
    expect(wilson(0, 0)).toEqual({ low: 0, high: 1 });
  });
});
