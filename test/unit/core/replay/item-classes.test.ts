// Per-class figures of a replay: removals by class (reads apart from other outputs), characters weighted
// by the requests that followed, and likely-needed suspects counted against the class of their removal.
import { describe, expect, it } from "vitest";
import { classOf, itemClasses } from "../../../../src/core/replay/item-classes.ts";

const result = (kind: string, label: string, entryId: string, before: number, after: number, outcome = "removed") => ({
  kind,
  label,
  entryId,
  outcome,
  reason: "",
  trace: "",
  beforeChars: before,
  afterChars: after,
});

describe("itemClasses", () => {
  it("puts reads in their own class and leaves unknown kinds out", () => {
    expect(classOf({ kind: "large", label: "read src/a.ts" })).toBe("read");
    expect(classOf({ kind: "small", label: "bash `ls`" })).toBe("small");
    expect(classOf({ kind: "exchange", label: "x" })).toBe("exchange");
    expect(classOf({ kind: "other", label: "x" })).toBeUndefined();
  });

  it("weights what each pass took out by the requests after it, and counts only landed removals", () => {
    const passes = [
      {
        n: 1,
        status: "done" as const,
        afterRequest: 2,
        invalidDrafts: 0,
        results: [
          result("large", "bash `grep`", "a", 1000, 100),
          result("large", "read x.ts", "b", 500, 0),
          result("small", "bash `ls`", "c", 300, 20, "kept"),
        ],
      },
      {
        n: 2,
        status: "done" as const,
        afterRequest: 8,
        invalidDrafts: 0,
        results: [result("exchange", "q", "d", 4000, 0)],
      },
      {
        n: 3,
        status: "done" as const,
        afterRequest: 9,
        invalidDrafts: 1,
        results: [result("image", "i", "e", 6400, 10)],
      },
    ];
    const suspects = [
      { pass: 1, entryId: "b", tier: "likely-needed" as const },
      { pass: 2, entryId: "d", tier: "re-ran" as const },
    ];
    const classes = itemClasses(passes, suspects, 10);
    expect(classes.large).toEqual({ removed: 1, weighted: 900 * 8, likely: 0 });
    expect(classes.read).toEqual({ removed: 1, weighted: 500 * 8, likely: 1 });
    expect(classes.small.removed).toBe(0);
    expect(classes.exchange).toEqual({ removed: 1, weighted: 4000 * 2, likely: 0 });
    expect(classes.image.removed).toBe(0);
  });
});
