// The needed-later proxy measured on the hand-labelled removals: a ratchet. It fails when precision or
// recall of the likely-needed tier fall below the recorded PROXY_QUALITY, and when they rise above it
// (so the replay never prints a figure that was not measured).
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { findSuspects, type LaterMessage } from "../../../../src/core/replay/proxy.ts";
import { type Confusion, confusion, PROXY_QUALITY } from "../../../../src/core/replay/proxy-quality.ts";
import { laterMessages } from "../../../../src/main/replay/proxy-input.ts";
import { readSessionFile, type SessionFile } from "../../../../src/main/replay/reader.ts";
import { FIXTURES, type LabelledRemoval, pieceFor, readLabelledSet } from "../../../kit/labelled-removals.ts";

/** How far a measured figure may exceed the recorded one before the record must be raised. */
const SLACK = 0.005;

const set = readLabelledSet();
const verdicts = new Map<LabelledRemoval, string | undefined>();
let measured: Confusion;

beforeAll(async () => {
  const sessions = new Map<string, { file: SessionFile; later: LaterMessage[] }>();
  for (const r of set.removals) {
    let s = sessions.get(r.session);
    if (!s) {
      const file = await readSessionFile(join(FIXTURES, "sessions", r.session));
      s = { file, later: laterMessages(file.branch) };
      sessions.set(r.session, s);
    }
    verdicts.set(r, findSuspects([pieceFor(s.file, r)], s.later)[0]?.tier);
  }
  const flagged = set.removals.map((r) => verdicts.get(r) === "likely-needed");
  measured = confusion(
    flagged,
    set.removals.map((r) => r.label === "needed"),
  );
});

const pct = (x: number) => `${(x * 100).toFixed(1)}%`;

function table(): string {
  return set.removals
    .map((r) => `${r.label.padEnd(10)} ${String(verdicts.get(r) ?? "-").padEnd(13)} ${r.session}:${r.line} ${r.what}`)
    .join("\n");
}

describe("the labelled removals", () => {
  it("are at least 60, half of them suspects of the old proxy, each with a label and a reason", () => {
    expect(set.removals.length).toBeGreaterThanOrEqual(60);
    expect(set.removals.filter((r) => r.suspectToday).length * 2).toBeGreaterThanOrEqual(set.removals.length);
    for (const r of set.removals) {
      expect(["needed", "not-needed"]).toContain(r.label);
      expect(r.reason.length).toBeGreaterThan(20);
    }
    expect(set.removals.length).toBe(PROXY_QUALITY.labelled);
    expect(set.removals.filter((r) => r.label === "needed").length).toBe(PROXY_QUALITY.needed);
  });
});

describe("the likely-needed tier on the labelled removals", () => {
  it("does not fall below the recorded precision and recall", () => {
    const line = `measured precision ${pct(measured.precision)} (recorded ${pct(PROXY_QUALITY.precision)}), recall ${pct(measured.recall)} (recorded ${pct(PROXY_QUALITY.recall)})`;
    expect(measured.precision, `${line}\n${table()}`).toBeGreaterThanOrEqual(PROXY_QUALITY.precision - 1e-9);
    expect(measured.recall, `${line}\n${table()}`).toBeGreaterThanOrEqual(PROXY_QUALITY.recall - 1e-9);
  });

  it("has its improvements recorded in PROXY_QUALITY", () => {
    const hint = `raise PROXY_QUALITY to precision ${measured.precision.toFixed(3)}, recall ${measured.recall.toFixed(3)}`;
    expect(measured.precision, hint).toBeLessThanOrEqual(PROXY_QUALITY.precision + SLACK);
    expect(measured.recall, hint).toBeLessThanOrEqual(PROXY_QUALITY.recall + SLACK);
  });
});
