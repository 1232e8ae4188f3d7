import { describe, expect, it } from "vitest";
import { chunkOutput } from "../../../../src/core/distill/chunk.ts";
import { finishPass } from "../../../../src/core/distill/finish.ts";
import { type PassPlan, planRunEnd } from "../../../../src/core/distill/plan.ts";
import { collectRun } from "../../../../src/core/distill/run.ts";
import { anchoredChunks, editOldTexts, laterEditTexts } from "../../../../src/core/items/edit-anchors.ts";
import { DEFAULT_CONFIG } from "../../../../src/core/shared/config.ts";
import type { SnapEntry } from "../../../../src/core/shared/types.ts";
import { dropAllAnswer } from "../../../kit/answers.ts";
import { assistantEntry, callResultEntry, toolCall, userEntry } from "../../../kit/snap.ts";

const lines = (n: number) => Array.from({ length: n }, (_, i) => `const value${i + 1} = compute(${i + 1});`).join("\n");

function session(editArgs: Record<string, unknown>, editPath = "src/big.ts"): SnapEntry[] {
  const read = toolCall("r1", "read", { path: "./src/big.ts" });
  const edit = toolCall("e1", "edit", { path: editPath, ...editArgs });
  return [
    userEntry("u", "rename value500"),
    assistantEntry("a1", "", [read]),
    callResultEntry("t1", read, lines(900)),
    assistantEntry("a2", "", [edit]),
    callResultEntry("t2", edit, "Successfully replaced 1 block(s) in src/big.ts."),
    assistantEntry("z", "renamed"),
  ];
}

// The anchors alone: the keep rule for edited files would hold the whole read.
const UNGATED = { ...DEFAULT_CONFIG, exchangeBreakEven: false, keepRules: [], keepReads: false };

function replacementOf(entries: SnapEntry[]): string {
  const plan = planRunEnd(entries, UNGATED) as Extract<PassPlan, { status: "run" }>;
  const texts = plan.candidates.map((c) => entries.find((e) => e.id === c.entryId)?.text ?? "");
  const out = finishPass({ plan, entries, texts, outcomes: plan.requests.map(dropAllAnswer), config: UNGATED });
  return out.drafts.find((d) => d.targetId === "t1")?.replacement?.content[0]?.text ?? "";
}

describe("editOldTexts", () => {
  it("reads Pi's edits[], a single edit object, a JSON string and the top-level form", () => {
    expect(
      editOldTexts({
        edits: [
          { oldText: "a", newText: "b" },
          { oldText: "c", newText: "d" },
        ],
      }),
    ).toEqual(["a", "c"]);
    expect(editOldTexts({ edits: { oldText: "a", newText: "b" } })).toEqual(["a"]);
    expect(editOldTexts({ edits: '[{"oldText":"a","newText":"b"}]' })).toEqual(["a"]);
    expect(editOldTexts({ oldText: "a", newText: "b" })).toEqual(["a"]);
    expect(editOldTexts({ edits: "not json" })).toEqual([]);
  });
});

describe("laterEditTexts", () => {
  it("maps a read to the oldTexts of later edits of the same file only", () => {
    const entries = session({ edits: [{ oldText: "value500", newText: "renamed" }] });
    expect([...laterEditTexts(entries, collectRun(entries, 3)!)]).toEqual([["t1", ["value500"]]]);
    const other = session({ edits: [{ oldText: "value500", newText: "renamed" }] }, "src/other.ts");
    expect(laterEditTexts(other, collectRun(other, 3)!).size).toBe(0);
  });
});

describe("anchoredChunks", () => {
  it("names every chunk an occurrence touches, across a chunk boundary too", () => {
    const text = lines(900);
    const chunks = chunkOutput(text, false, DEFAULT_CONFIG.maxSegmentChars);
    const boundary = chunks[1]!.start;
    const across = text.slice(boundary - 30, boundary + 30);
    expect(text.indexOf(across)).toBe(text.lastIndexOf(across));
    expect(anchoredChunks(text, chunks, [across])).toEqual([chunks[0]!.n, chunks[1]!.n]);
    expect(anchoredChunks(text, chunks, ["nowhere in it"])).toEqual([]);
  });
});

describe("a distilled read", () => {
  it("keeps the lines a later edit matched even when the classifier needs none", () => {
    const oldText = "const value500 = compute(500);\nconst value501 = compute(501);";
    const replacement = replacementOf(session({ edits: [{ oldText, newText: "x" }] }));
    expect(replacement).toMatch(/^\[context-guard\] Distilled the output of read \.\/src\/big\.ts/);
    expect(replacement).toContain(oldText);
    expect(replacement).not.toContain("const value1 = compute(1);");
  });

  it("is removed whole when no later edit matched it", () => {
    const replacement = replacementOf(session({ edits: [{ oldText: "not in the file", newText: "x" }] }));
    expect(replacement).toMatch(/^\[context-guard\] Removed the output of read/);
  });
});
