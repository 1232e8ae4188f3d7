// What was made while the guard was off is read from the switch entries on the branch.
import { describe, expect, it } from "vitest";
import {
  madeWhileOff,
  SWITCH_TYPE,
  type SwitchEntryLike,
  switchData,
  switchedOff,
} from "../../../../src/core/records/off-spans.ts";

const entry = (id: string): SwitchEntryLike => ({ id, type: "message" });
const toggle = (id: string, on: boolean, from?: string, judge?: boolean): SwitchEntryLike => ({
  id,
  type: "custom",
  customType: SWITCH_TYPE,
  data: switchData(on, from, judge),
});

describe("madeWhileOff", () => {
  it("holds back what came between an off switch and the next on switch", () => {
    const branch = [entry("a"), toggle("s1", false), entry("b"), entry("c"), toggle("s2", true, "s1"), entry("d")];
    expect([...madeWhileOff(branch)]).toEqual(["b", "c"]);
    expect(switchedOff(branch)).toEqual({ off: false, at: "s2" });
  });

  it("holds back everything after an off switch not switched on again", () => {
    const branch = [entry("a"), toggle("s1", false), entry("b")];
    expect([...madeWhileOff(branch)]).toEqual(["b"]);
    expect(switchedOff(branch)).toEqual({ off: true, at: "s1" });
  });

  it("an on switch whose off switch a compaction dropped covers what was kept before it", () => {
    // The branch as Pi projects it: the kept entries were made after the (dropped) off switch.
    const branch = [entry("k1"), entry("k2"), toggle("s2", true, "s1"), entry("d")];
    expect([...madeWhileOff(branch)]).toEqual(["k1", "k2"]);
  });

  it("an earlier span switched on again bounds what a later dropped off switch can cover", () => {
    const branch = [
      toggle("s1", false),
      entry("b"),
      toggle("s2", true, "s1"),
      entry("c"),
      toggle("s4", true, "s3"),
      entry("d"),
    ];
    expect([...madeWhileOff(branch)].sort()).toEqual(["b", "c"]);
  });

  it("/guard judge lets go of every span before it", () => {
    const branch = [toggle("s1", false), entry("b"), toggle("s2", true, "s1"), toggle("j", true, undefined, true)];
    expect(madeWhileOff(branch).size).toBe(0);
  });

  it("reads damaged switch entries as no switch", () => {
    const bad = { id: "x", type: "custom", customType: SWITCH_TYPE, data: { on: "no" } };
    expect(madeWhileOff([bad, entry("a")]).size).toBe(0);
    expect(switchedOff([entry("a")])).toEqual({ off: false });
  });
});
