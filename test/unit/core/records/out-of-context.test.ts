// `/guard list` in core: the guard's current edits, newest first, with the reason said in words.
import { describe, expect, it } from "vitest";
import { explainResult, formatOutList, itemFor, outOfContext } from "../../../../src/core/records/out-of-context.ts";
import { PIN_TYPE, pinData, readPins } from "../../../../src/core/records/pins.ts";
import { GUARD_MARKER, RECORD_TYPE, type RecordResult, type SnapEntry } from "../../../../src/core/shared/types.ts";
import { assistantEntry, hiddenEntry, recordEntry, toolResultEntry, userEntry } from "../../../kit/snap.ts";

describe("explainResult", () => {
  it("says the reason and the classifier's probabilities plainly", () => {
    expect(explainResult({ kind: "large", reason: "none-needed", jev: ["kw.05 focus=none:.80 keep 0/12"] })).toBe(
      "judged not needed by the classifier (80% sure)",
    );
    expect(
      explainResult({
        kind: "large",
        reason: "chunks",
        jev: ["kw.15 focus=chunk_4:.52 keep 3/29", "kw.10 focus=none:.7 keep 0/10 ×2"],
      }),
    ).toBe("the classifier kept the 3 of 49 pieces it judged needed; 85% sure the whole was not needed");
    expect(explainResult({ kind: "small", reason: "not-needed", jev: ["p.16"] })).toBe(
      "judged not needed by the classifier (84% sure)",
    );
    expect(explainResult({ kind: "exchange", reason: "unrelated", jev: ["p.08"] })).toBe(
      "judged unrelated to the current work by the classifier (92% sure)",
    );
    expect(explainResult({ kind: "image", reason: "4 turns old", jev: [] })).toBe(
      "an image 4 turns old: old images go without asking the classifier",
    );
    // A damaged record still reads.
    expect(explainResult({ kind: "small", reason: "not-needed", jev: "x" as never })).toBe(
      "judged not needed by the classifier",
    );
  });
});

const result = (r: Partial<RecordResult> & { entryId: string }): RecordResult => ({
  kind: "large",
  label: "bash `x`",
  outcome: "removed",
  reason: "none-needed",
  beforeChars: 9000,
  afterChars: 200,
  jev: [],
  ...r,
});
const record = (id: string, phase: string, results: RecordResult[]) => recordEntry(id, { v: 1, phase, results });
const edited = (e: SnapEntry, raw: string, text = `${GUARD_MARKER} stub`): SnapEntry => ({
  ...e,
  edited: true,
  rawText: raw,
  text,
});

function branch(): { snap: SnapEntry[]; raw: Array<Record<string, unknown>> } {
  const large = result({ entryId: "t1", jev: ["kw.05 focus=none:.90 keep 0/8"] });
  const small = result({ entryId: "t2", kind: "small", label: "bash `ls`", reason: "not-needed", jev: ["p.10"] });
  const exchange = result({
    entryId: "u1",
    kind: "exchange",
    label: "old task",
    reason: "unrelated",
    jev: ["p.05"],
    omitted: ["a1"],
  });
  const snap: SnapEntry[] = [
    edited(userEntry("u1", "old task"), "old task"),
    { ...assistantEntry("a1", ""), visible: false, edited: true, rawText: "old answer" },
    userEntry("u2", "new task"),
    assistantEntry("a2", "", [{ id: "c1", name: "bash", args: {} }]),
    edited(toolResultEntry("t1", "c1", "bash", ""), "x".repeat(9000)),
    edited(toolResultEntry("t2", "c2", "bash", ""), "y".repeat(900)),
    assistantEntry("a3", "done"),
    record("r1", "mid-run", [small]),
    record("r2", "run-end", [large, exchange]),
  ];
  // The raw branch: messages with roles (run counting) and records with their full results.
  const raw = snap.map((e) =>
    e.type === "message"
      ? { type: "message", id: e.id, message: { role: e.role, stopReason: e.toolCalls ? "toolUse" : "stop" } }
      : { type: "custom", id: e.id, customType: RECORD_TYPE, data: e.data },
  );
  return { snap, raw };
}

describe("outOfContext", () => {
  it("names the run a handed-over pass judged, not the one its record landed in", () => {
    const { snap, raw } = branch();
    // The run-end record of run 2 lands after run 3's prompt (a pass handed over to the next prompt).
    const late = [...snap.slice(0, 7), userEntry("u3", "next task"), ...snap.slice(7)];
    const lateRaw = [
      ...raw.slice(0, 7),
      { type: "message", id: "u3", message: { role: "user", stopReason: "stop" } },
      ...raw.slice(7),
    ];
    const items = outOfContext(late, lateRaw as never);
    expect(items.map((i) => [i.entryId, i.run])).toEqual([
      ["u1", 2],
      ["t1", 2],
      ["t2", 2],
    ]);
  });

  it("lists the guard's current edits newest first, with kind, size, run and why", () => {
    const { snap, raw } = branch();
    const items = outOfContext(snap, raw as never);
    expect(items.map((i) => [i.entryId, i.kind, i.run, i.phase])).toEqual([
      ["u1", "exchange", 2, "run-end"],
      ["t1", "large", 2, "run-end"],
      ["t2", "small", 2, "mid-run"],
    ]);
    expect(itemFor(items, "a1")?.entryId).toBe("u1");
    const text = formatOutList(items, readPins(snap));
    expect(text).toContain("3 items out of context on this branch, newest first");
    expect(text).toContain("  t1  large output · bash `x` · 9k → 200 chars · run 2, at its end");
    expect(text).toContain("      judged not needed by the classifier (90% sure)");
    expect(text).toContain("  t2  small output · bash `ls` · 9k → 200 chars · run 2, mid-run checkpoint");
  });

  it("leaves out restored entries and counts them with the pins", () => {
    const { snap, raw } = branch();
    const pins = [
      hiddenEntry("p1", "custom", { customType: PIN_TYPE, data: pinData("restore", ["u1", "a1"]) }),
      hiddenEntry("p2", "custom", { customType: PIN_TYPE, data: pinData("pin", ["a3"]) }),
    ];
    const items = outOfContext([...snap, ...pins], raw as never);
    expect(items.map((i) => i.entryId)).toEqual(["t1", "t2"]);
    expect(formatOutList(items, readPins([...snap, ...pins]))).toContain(
      "restored: 1 (u1) · pinned: 1 (a3); never judged again",
    );
    expect(formatOutList([], readPins([]))).toBe("context-guard: nothing is out of context on this branch");
  });
});
