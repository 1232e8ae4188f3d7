// The hand-read verdict on each needed labelled removal's stub (labelled-removals.md): bench/harm-rate.ts
// counts a needed removal as harmful when its stub does not cover it, so every needed one needs a verdict.
import { describe, expect, it } from "vitest";
import { readLabelledSet } from "../../../kit/labelled-removals.ts";

describe("the stub verdicts of the labelled removals", () => {
  const set = readLabelledSet();
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
