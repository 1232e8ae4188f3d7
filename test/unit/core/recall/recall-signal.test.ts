// Which recalls say an entry is still needed: a second one in the run, or a whole one; earlier runs'
// recalls do not count.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { recallNote, recallSaysNeeded, recallsInRun } from "../../../../src/core/recall/recall-signal.ts";
import { noteThatFits } from "../../../../src/core/shared/notes.ts";
import { propertyParams } from "../../../kit/arbitraries.ts";
import { assistantEntry, toolCall, toolResultEntry, userEntry } from "../../../kit/snap.ts";

describe("recallsInRun", () => {
  it("counts the running run's recalls per entry, whole ones, and their results", () => {
    const entries = [
      userEntry("u0", "earlier"),
      assistantEntry("a0", "", [toolCall("r0", "recall", { entryId: "x", pattern: "p" })]),
      toolResultEntry("t0", "r0", "recall", "…"),
      assistantEntry("z0", "ok"),
      userEntry("u1", "now"),
      assistantEntry("a1", "", [
        toolCall("r1", "recall", { entryId: "x", pattern: "a" }),
        toolCall("r2", "recall", { entryId: " y " }),
        toolCall("b1", "bash", { entryId: "x" }),
      ]),
      toolResultEntry("t1", "r1", "recall", "…"),
      toolResultEntry("t2", "r2", "recall", "…"),
      assistantEntry("a2", "", [toolCall("r3", "recall", { entryId: "x", offset: 3 })]),
      toolResultEntry("t3", "r3", "recall", "…"),
      assistantEntry("a3", "", [toolCall("r4", "recall", { entryId: "z", limit: 5 })]),
    ];
    const uses = recallsInRun(entries);
    expect(Object.fromEntries(uses)).toEqual({
      x: { calls: 2, full: false, resultIds: ["t1", "t3"] },
      y: { calls: 1, full: true, resultIds: ["t2"] },
      z: { calls: 1, full: false, resultIds: [] },
    });
    expect([...uses].filter(([, u]) => recallSaysNeeded(u)).map(([id]) => id)).toEqual(["x", "y"]);
    expect(recallNote("x", 2, 500)).toMatch(
      /^\[context-guard\] This recall of x is no longer needed: after 2 recall\(s\)/,
    );
  });
});

describe("recallNote", () => {
  it("is never longer than the recall result it replaces: the full note, a short one, or none", () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1, maxLength: 40 }),
        fc.integer({ min: 1, max: 10_000 }),
        fc.integer({ min: 0, max: 400 }),
        (entryId, calls, resultChars) => {
          const note = recallNote(entryId, calls, resultChars);
          if (note !== undefined) expect(note.length).toBeLessThan(resultChars);
          const full = recallNote(entryId, calls, Number.MAX_SAFE_INTEGER) as string;
          if (resultChars > full.length) expect(note).toBe(full);
          const short = recallNote(entryId, calls, full.length) as string | undefined;
          // The short form is tried before giving up.
          if (short !== undefined && resultChars > short.length) expect(note).toBeDefined();
        },
      ),
      propertyParams(300),
    );
  });

  it("keeps a narrow recall whose result is shorter than any note", () => {
    expect(recallNote("9f3a1c2e", 2, 20)).toBeUndefined();
    expect(recallNote("9f3a1c2e", 2, 67)).toBe("[context-guard] 9f3a1c2e is back in context.");
  });
});

describe("noteThatFits", () => {
  it("picks the first candidate shorter than the original, or none", () => {
    fc.assert(
      fc.property(fc.array(fc.string({ maxLength: 60 }), { maxLength: 5 }), fc.nat(80), (candidates, chars) => {
        const note = noteThatFits(chars, candidates);
        expect(note).toBe(candidates.find((c) => c.length < chars));
        if (note !== undefined) expect(note.length).toBeLessThan(chars);
      }),
      propertyParams(300),
    );
  });
});
