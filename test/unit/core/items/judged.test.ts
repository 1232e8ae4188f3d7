// The guard recognises its own edits by its records, never by the marker text alone, and tells which
// outputs the classifier never answered for (issue 23, breaks 8 and 4).
import { describe, expect, it } from "vitest";
import { collectExchanges } from "../../../../src/core/items/exchanges.ts";
import {
  dueForRetry,
  isGuardEdit,
  MAX_UNANSWERED_PASSES,
  readJudgments,
  resultEdited,
} from "../../../../src/core/items/judged.ts";
import { currentSavings } from "../../../../src/core/records/stats.ts";
import { GUARD_MARKER, type SnapEntry } from "../../../../src/core/shared/types.ts";
import { assistantEntry, recordEntry, toolCall, toolResultEntry, userEntry } from "../../../kit/snap.ts";

let seq = 0;
const id = () => `j${++seq}`;
const rec = (results: unknown[], phase = "run-end") => recordEntry(id(), { v: 1, phase, results });

describe("resultEdited", () => {
  it("reads full records by outcome and slim ones by kind and reason", () => {
    expect(resultEdited("large", "distilled", "chunks")).toBe(true);
    expect(resultEdited("large", "kept", "chunks")).toBe(false);
    expect(resultEdited("large", undefined, "chunks")).toBe(true);
    expect(resultEdited(undefined, undefined, "none-needed")).toBe(true);
    expect(resultEdited("large", undefined, "oversize,chunks,timeout")).toBe(true);
    for (const reason of ["all-chunks", "not-worth", "whole-needed", "timeout", "error", "no-answer"]) {
      expect(resultEdited("large", undefined, reason)).toBe(false);
    }
    expect(resultEdited("small", undefined, "not-needed")).toBe(true);
    expect(resultEdited("small", undefined, "needed")).toBe(false);
    expect(resultEdited("exchange", undefined, "unrelated")).toBe(true);
    expect(resultEdited("exchange", undefined, "deferred")).toBe(false);
    expect(resultEdited("image", undefined, "4 turns old")).toBe(true);
    expect(resultEdited("image", undefined, "rejected: not on the branch")).toBe(false);
    expect(resultEdited("small", undefined, "rejected: not-needed")).toBe(false);
  });
});

describe("readJudgments", () => {
  it("keeps the latest result per entry and counts the passes without a usable answer", () => {
    const entries: SnapEntry[] = [
      rec([
        { kind: "large", entryId: "a", reason: "timeout" },
        { kind: "small", entryId: "b", reason: "error" },
        { kind: "large", entryId: "c", reason: "chunks" },
      ]),
      rec([
        { kind: "large", entryId: "a", reason: "whole-needed,aborted" },
        { kind: "small", entryId: "b", reason: "needed" },
        { kind: "small", entryId: "d", reason: "deferred" },
        { kind: "exchange", entryId: "e", reason: "timeout" },
        { kind: "image", entryId: "f", reason: "3 turns old" },
      ]),
      // Damaged results are skipped.
      rec([null, 7, { kind: "large" }, { entryId: 3, reason: "timeout" }]),
      recordEntry(id(), "not an object"),
    ];
    const j = readJudgments(entries);
    expect([...j.edited].sort()).toEqual(["c", "f"]);
    expect(Object.fromEntries(j.retry)).toEqual({ a: 2, d: 1 });
    // Exchanges have their own memo; answered outputs are never asked again.
    expect(dueForRetry("a", j)).toBe(true);
    expect(dueForRetry("b", j)).toBe(false);
    expect(dueForRetry("e", j)).toBe(false);
  });

  it("gives an output up after MAX_UNANSWERED_PASSES passes without an answer", () => {
    const entries: SnapEntry[] = [];
    for (let i = 0; i < MAX_UNANSWERED_PASSES; i++) {
      entries.push(
        rec([{ kind: "large", entryId: "a", reason: i % 2 ? "error" : "timeout" }], i ? "run-end" : "mid-run"),
      );
      expect(dueForRetry("a", readJudgments(entries))).toBe(i + 1 < MAX_UNANSWERED_PASSES);
    }
    // `end` reads only the records before it.
    expect(readJudgments(entries, 1).retry.get("a")).toBe(1);
  });
});

describe("isGuardEdit", () => {
  const marker = `${GUARD_MARKER} Distilled the output of bash \`cat x\`: kept 1 of 9 lines`;
  const base = toolResultEntry("t", "c", "bash", marker);

  it("needs an edit, the marker and a guard record that lists the entry as replaced", () => {
    const listed = { edited: new Set(["t"]) };
    const none = { edited: new Set<string>() };
    // A raw output that starts with the marker is the tool's own text.
    expect(isGuardEdit(base, listed)).toBe(false);
    const edited = { ...base, edited: true, rawText: "raw" };
    expect(isGuardEdit(edited, listed)).toBe(true);
    // Another extension's edit that shows the marker is not ours.
    expect(isGuardEdit(edited, none)).toBe(false);
    expect(isGuardEdit({ ...edited, text: "something else" }, listed)).toBe(false);
    expect(isGuardEdit({ ...edited, visible: false }, listed)).toBe(false);
  });

  it("counts no saving for a forged output, nor for someone else's edit that forges the marker", () => {
    const forged = toolResultEntry("f", "c1", "bash", `${marker}\n${"x".repeat(5000)}`);
    const theirs = toolResultEntry("o", "c2", "bash", marker, { edited: true, rawText: "y".repeat(8000) });
    const ours = toolResultEntry("g", "c3", "bash", marker, { edited: true, rawText: "y".repeat(8000) });
    const entries = [forged, theirs, ours, rec([{ kind: "large", entryId: "g", reason: "chunks" }])];
    expect(currentSavings(entries)).toEqual({ chars: 8000 - marker.length, items: 1 });
  });

  it("treats a marker edit that no record lists as someone else's when judging old exchanges", () => {
    const exchange = (tag: string, extra: Partial<SnapEntry> = {}, records: SnapEntry[] = []): SnapEntry[] => {
      const c = toolCall(`c-${tag}`, "bash", { command: `run ${tag}` });
      return [
        userEntry(`u-${tag}`, `task ${tag}`),
        assistantEntry(`a-${tag}`, "", [c]),
        toolResultEntry(`t-${tag}`, c.id, "bash", "x".repeat(3000), extra),
        ...records,
        assistantEntry(`z-${tag}`, `done ${tag}`),
      ];
    };
    const edit = { text: `${GUARD_MARKER} Distilled …\n${"k".repeat(2500)}`, edited: true, rawText: "x".repeat(3000) };
    const entries = [
      ...exchange("ours", edit, [rec([{ kind: "large", entryId: "t-ours", reason: "chunks" }])]),
      ...exchange("theirs", edit),
      ...exchange("forged", { text: `${GUARD_MARKER} ${"x".repeat(3000)}` }),
      userEntry("now", "current"),
      assistantEntry("fin", "answer"),
    ];
    const start = entries.length - 2;
    const xs = collectExchanges(entries, start, { pruneExchanges: true, keepRecentExchanges: 0 }, new Set());
    expect(xs.map((x) => x.promptId)).toEqual(["u-ours", "u-forged"]);
  });

  it("never judges an exchange whose prompt shows an edit again, whoever made it", () => {
    const c = toolCall("c1", "bash", { command: "run" });
    const entries = [
      userEntry("u1", `${GUARD_MARKER} Omitted an earlier exchange …`, { edited: true, rawText: "old task" }),
      assistantEntry("a1", "", [c]),
      toolResultEntry("t1", "c1", "bash", "x".repeat(3000)),
      assistantEntry("z1", "done"),
      // A prompt the user typed starting with the marker is an ordinary prompt.
      userEntry("u2", `${GUARD_MARKER} please look at this`),
      assistantEntry("a2", "", [toolCall("c2", "bash", { command: "run 2" })]),
      toolResultEntry("t2", "c2", "bash", "x".repeat(3000)),
      assistantEntry("z2", "done"),
      userEntry("now", "current"),
      assistantEntry("fin", "answer"),
    ];
    const xs = collectExchanges(entries, 8, { pruneExchanges: true, keepRecentExchanges: 0 }, new Set());
    expect(xs.map((x) => x.promptId)).toEqual(["u2"]);
  });
});
