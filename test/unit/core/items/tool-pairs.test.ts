import { describe, expect, it } from "vitest";
import { type PairEntry, type ShapeDraft, settleShape, shapeBreaks } from "../../../../src/core/items/tool-pairs.ts";

// Run 1: prompt p1, assistant a1 calling c1, its result r1 (X), the answer s1; run 2: prompt p2, answer s2.
const session = (): PairEntry[] => [
  { id: "p1", role: "user", visible: true },
  { id: "a1", role: "assistant", calls: ["c1"], visible: true },
  { id: "r1", role: "toolResult", callId: "c1", visible: true },
  { id: "s1", role: "assistant", calls: [], visible: true },
  { id: "p2", role: "user", visible: true },
  { id: "s2", role: "assistant", calls: [], visible: true },
];
const omit = (targetId: string): ShapeDraft => ({ type: "context_edit", targetId, replacement: null });
const text = (targetId: string, t = "[context-guard] …"): ShapeDraft => ({
  type: "context_edit",
  targetId,
  replacement: { content: [{ type: "text", text: t }] },
});
const exchange1 = [text("p1"), omit("a1"), omit("r1"), omit("s1"), { type: "custom" }];

describe("shapeBreaks", () => {
  it("finds a result whose call is omitted, and a shown call whose result is", () => {
    expect(shapeBreaks(session(), [omit("a1")])).toEqual([{ kind: "orphan-result", resultId: "r1", callerId: "a1" }]);
    expect(shapeBreaks(session(), [omit("r1")])).toEqual([{ kind: "unanswered-call", resultId: "r1", callerId: "a1" }]);
    expect(shapeBreaks(session(), exchange1)).toEqual([]);
  });

  it("reads an assistant's calls from its replacement, and the latest edit of a target", () => {
    expect(shapeBreaks(session(), [text("a1", "no calls")])).toHaveLength(1);
    expect(shapeBreaks(session(), [omit("a1"), text("a1", "x"), omit("r1")])).toEqual([]);
  });

  it("skips an errored assistant as pi-ai does: its results are orphans", () => {
    const s = session();
    (s[1] as PairEntry).skipped = true;
    expect(shapeBreaks(s)).toEqual([{ kind: "orphan-result", resultId: "r1", callerId: "a1" }]);
  });
});

describe("settleShape", () => {
  it("a restore and an exchange omission at one boundary: the exchange stays, the restore lands", () => {
    const result = settleShape({
      entries: session(),
      theirs: [],
      judged: exchange1,
      restoring: [{ type: "custom" }, text("r1", "the original")],
    });
    expect(result.keep).toEqual([4]);
    expect(result.dropped.map((d) => d.targetId).sort()).toEqual(["a1", "p1", "r1", "s1"]);
    expect(result.dropped.every((d) => d.why === "it would split a tool call from its result")).toBe(true);
    expect(result.repairs).toEqual([]);
  });

  it("drops a judged exchange that holds an entry pinned since, whole", () => {
    const result = settleShape({
      entries: session(),
      theirs: [],
      judged: exchange1,
      restoring: [],
      pinned: new Set(["s1"]),
    });
    expect(result.keep).toEqual([4]);
    expect(result.dropped.every((d) => d.why === "pinned since it was judged")).toBe(true);
  });

  it("keeps a judged omission that breaks nothing, next to a restore elsewhere", () => {
    const result = settleShape({ entries: session(), theirs: [], judged: exchange1, restoring: [text("s2", "x")] });
    expect(result.keep).toEqual([0, 1, 2, 3, 4]);
    expect(result.dropped).toEqual([]);
  });

  it("repairs a branch written with a result apart from its call: the call shows again", () => {
    const s = session();
    (s[1] as PairEntry).visible = false;
    const result = settleShape({ entries: s, theirs: [], judged: [], restoring: [] });
    expect(result.repairs).toEqual([{ targetId: "a1", action: "restore", cause: "orphan-result" }]);
    expect(result.left).toEqual([]);
  });

  it("omits a result whose call is gone from the context, or cannot come before it", () => {
    const gone = session().filter((e) => e.id !== "a1");
    expect(settleShape({ entries: gone, theirs: [], judged: [], restoring: [] }).repairs).toEqual([
      { targetId: "r1", action: "omit", cause: "orphan-result" },
    ]);
    // Another extension's message between the call and its result.
    const apart = session();
    apart.splice(2, 0, { id: "m", role: "custom", visible: true });
    const result = settleShape({ entries: apart, theirs: [], judged: [], restoring: [] });
    expect(result.repairs).toEqual([{ targetId: "r1", action: "omit", cause: "orphan-result" }]);
    expect(result.left).toEqual([]);
  });

  it("leaves other extensions' drafts alone and mends what they break after them", () => {
    const result = settleShape({ entries: session(), theirs: [omit("a1")], judged: [], restoring: [] });
    expect(result.repairs).toEqual([{ targetId: "a1", action: "restore", cause: "orphan-result" }]);
  });
});
