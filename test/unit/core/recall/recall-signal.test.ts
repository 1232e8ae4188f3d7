// Which recalls say an entry is still needed: a second one in the run, or a whole one; earlier runs'
// recalls do not count.
import { describe, expect, it } from "vitest";
import { recallNote, recallSaysNeeded, recallsInRun } from "../../../../src/core/recall/recall-signal.ts";
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
    expect(recallNote("x", 2)).toMatch(/^\[context-guard\] This recall of x is no longer needed: after 2 recall\(s\)/);
  });
});
