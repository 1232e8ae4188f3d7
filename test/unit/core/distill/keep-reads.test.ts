// keepReads: a read's output is not judged (the classifier never sees it, so nothing removes it), while a
// command's output of the same size is, unless the run read the file again or changed it afterwards. Off,
// reads are judged as before.
import { describe, expect, it } from "vitest";
import { type PassPlan, planRunEnd } from "../../../../src/core/distill/plan.ts";
import { DEFAULT_CONFIG } from "../../../../src/core/shared/config.ts";
import type { SnapEntry } from "../../../../src/core/shared/types.ts";
import { assistantEntry, callResultEntry, toolCall, userEntry } from "../../../kit/snap.ts";

const big = (word: string) => Array.from({ length: 400 }, (_, i) => `${word} line ${i}`).join("\n");
const small = (word: string) => Array.from({ length: 60 }, (_, i) => `${word} item ${i}`).join("\n");

function run(): SnapEntry[] {
  const calls = [
    toolCall("c0", "read", { path: "src/a.ts" }),
    toolCall("c1", "bash", { command: "cat src/b.ts" }),
    toolCall("c2", "read", { path: "src/c.ts" }),
    toolCall("c3", "bash", { command: "cat src/d.ts" }),
  ];
  return [
    userEntry("u", "look at the files"),
    assistantEntry("a", "", calls),
    callResultEntry("t0", calls[0]!, big("alpha")),
    callResultEntry("t1", calls[1]!, big("beta")),
    callResultEntry("t2", calls[2]!, small("gamma")),
    callResultEntry("t3", calls[3]!, small("delta")),
    assistantEntry("z", "done"),
  ];
}

function judged(plan: PassPlan): string[] {
  if (plan.status === "skip") return [];
  return [...plan.candidates.map((c) => c.entryId), ...plan.small.map((i) => i.entryId)].sort();
}

describe("keepReads", () => {
  it("is on by default: a read's output, large or small, is not judged at run end; a command's is", () => {
    expect(DEFAULT_CONFIG.keepReads).toBe(true);
    expect(judged(planRunEnd(run(), { ...DEFAULT_CONFIG, minRunChars: 0 }))).toEqual(["t1", "t3"]);
  });

  it("judges reads like any output when off", () => {
    expect(judged(planRunEnd(run(), { ...DEFAULT_CONFIG, minRunChars: 0, keepReads: false }))).toEqual([
      "t0",
      "t1",
      "t2",
      "t3",
    ]);
  });

  it("judges a read the run superseded: the file re-read, or edited after it", () => {
    const entries = run();
    const reread = toolCall("c4", "read", { path: "src/a.ts" });
    const edit = toolCall("c5", "edit", { path: "src/c.ts", oldText: "gamma item 1", newText: "gamma item one" });
    entries.splice(
      6,
      0,
      assistantEntry("b", "again", [reread, edit]),
      callResultEntry("t4", reread, big("alpha")),
      callResultEntry("t5", edit, "edited"),
    );
    // t0 (re-read by t4) and t2 (edited by c5) are judged; t4, the newest read, is not.
    expect(judged(planRunEnd(entries, { ...DEFAULT_CONFIG, minRunChars: 0 }))).toEqual(["t0", "t1", "t2", "t3"]);
  });
});
