// The dollars chart's axis: round steps, ending on the first round value at or above the maximum, so a
// tick never reads "$0.751".
import { describe, expect, it } from "vitest";
import { niceStep, roundTicks } from "../../../../src/main/replay/report-axis.ts";

describe("report axis", () => {
  it("steps by 1, 2 or 5 times a power of ten", () => {
    expect(niceStep(0.751, 4)).toBe(0.2);
    expect(niceStep(30.34, 4)).toBe(10);
  });

  it("ticks from 0 to the first round value at or above the maximum", () => {
    expect(roundTicks(0.751, 4)).toEqual([0, 0.2, 0.4, 0.6, 0.8]);
    expect(roundTicks(30.34, 4)).toEqual([0, 10, 20, 30, 40]);
    expect(roundTicks(0.6, 3)).toEqual([0, 0.2, 0.4, 0.6]);
  });
});
