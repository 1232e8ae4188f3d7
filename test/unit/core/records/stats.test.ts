// Statistics are recomputed from Pi's own projection, so /tree and compaction move them with the context.
import { SessionManager } from "@earendil-works/pi-coding-agent";
import { describe, expect, it } from "vitest";
import { currentSavings, lifetime, savingsText } from "../../../../src/core/records/stats.ts";
import { RECORD_TYPE } from "../../../../src/core/shared/types.ts";
import { type ProjectedLike, SnapshotBuilder } from "../../../../src/main/pass/snapshot.ts";
import { FAUX_USAGE } from "../../../kit/pi-messages.ts";

function exchange(sm: SessionManager, prompt: string, output: string) {
  const user = sm.appendMessage({ role: "user", content: [{ type: "text", text: prompt }], timestamp: 1 });
  const call = sm.appendMessage({
    role: "assistant",
    content: [{ type: "toolCall", id: `c-${user}`, name: "bash", arguments: { command: "x" } }],
    api: "x",
    provider: "x",
    model: "x",
    usage: FAUX_USAGE,
    stopReason: "toolUse",
    timestamp: 1,
  } as never);
  const result = sm.appendMessage({
    role: "toolResult",
    toolCallId: `c-${user}`,
    toolName: "bash",
    content: [{ type: "text", text: output }],
    isError: false,
    timestamp: 1,
  } as never);
  const answer = sm.appendMessage({
    role: "assistant",
    content: [{ type: "text", text: "done" }],
    api: "x",
    provider: "x",
    model: "x",
    usage: FAUX_USAGE,
    stopReason: "stop",
    timestamp: 1,
  } as never);
  return { user, call, result, answer };
}

/** The guard's record for a pass that made these edits: the stats count only edits a record lists. */
function guardRecord(
  sm: SessionManager,
  results: Array<{ kind: string; entryId: string; outcome: string; reason: string }>,
) {
  sm.appendCustomEntry(RECORD_TYPE, { v: 1, phase: "run-end", savedChars: 0, results });
}

const savingsOf = (sm: SessionManager) =>
  currentSavings(new SnapshotBuilder().entries(sm.buildSessionProjection().entries as unknown as ProjectedLike[]));

describe("statistics from the branch", () => {
  it("counts a distilled output, and /tree to before the edit brings the context and the stats back", () => {
    const sm = SessionManager.inMemory("/tmp/cg");
    const a = exchange(sm, "find it", "z".repeat(10_000));
    expect(savingsOf(sm)).toEqual({ chars: 0, items: 0 });
    sm.appendContextEdit(a.result, { content: [{ type: "text", text: "[context-guard] Distilled …" }] });
    // Without the guard's record it is someone else's edit that happens to show the marker.
    expect(savingsOf(sm)).toEqual({ chars: 0, items: 0 });
    guardRecord(sm, [{ kind: "large", entryId: a.result, outcome: "distilled", reason: "chunks" }]);
    expect(savingsOf(sm)).toEqual({ chars: 10_000 - 27, items: 1 });
    sm.branch(a.answer);
    expect(savingsOf(sm)).toEqual({ chars: 0, items: 0 });
    const shown = sm.buildSessionProjection().entries.find((e) => e.sourceEntry.id === a.result);
    expect(JSON.stringify(shown?.messages)).toContain("zzzz");
  });

  it("counts an omitted exchange as its raw content minus the stub", () => {
    const sm = SessionManager.inMemory("/tmp/cg");
    const a = exchange(sm, "old topic", "q".repeat(5000));
    exchange(sm, "new topic", "short");
    const stub = "[context-guard] Omitted an earlier exchange …";
    sm.appendContextEdit(a.user, { content: [{ type: "text", text: stub }] });
    for (const id of [a.call, a.result, a.answer]) sm.appendContextEdit(id, null);
    guardRecord(sm, [{ kind: "exchange", entryId: a.user, outcome: "removed", reason: "unrelated" }]);
    const saved = savingsOf(sm);
    expect(saved.items).toBe(1);
    // prompt + the call's arguments are not text, the output and the answer are.
    expect(saved.chars).toBe("old topic".length + 5000 + "done".length - stub.length);
  });

  it("keeps a lifetime total that survives compaction, and shows Σ once it is larger", () => {
    const sm = SessionManager.inMemory("/tmp/cg");
    const a = exchange(sm, "find it", "z".repeat(10_000));
    sm.appendContextEdit(a.result, { content: [{ type: "text", text: "[context-guard] x" }] });
    sm.appendCustomEntry(RECORD_TYPE, {
      v: 1,
      phase: "run-end",
      savedChars: 316_000,
      requests: 3,
      inputTokens: 900,
      costUsd: 0.001,
      results: [],
    });
    sm.appendCustomEntry(RECORD_TYPE, {
      v: 1,
      phase: "mid-run",
      savedChars: 0,
      requests: 1,
      inputTokens: 100,
      costUsd: 0.0005,
      results: [],
    });
    const before = lifetime(sm.getBranch());
    expect(before).toMatchObject({
      savedChars: 316_000,
      compacted: false,
      passes: 2,
      checkpoints: 1,
      requests: 4,
      inputTokens: 1000,
    });
    const b = exchange(sm, "next", "ok");
    sm.appendCompaction("summary", b.user, 50_000);
    const after = lifetime(sm.getBranch());
    expect(after.compacted).toBe(true);
    const now = savingsOf(sm);
    expect(now).toEqual({ chars: 0, items: 0 });
    expect(savingsText(now, after)).toBe("🛡 0 · Σ−79k");
    expect(savingsText({ chars: 16_800, items: 3 }, { savedChars: 332_000, compacted: true })).toBe(
      "🛡 −4.2k · 3 · Σ−83k",
    );
    expect(savingsText({ chars: 16_800, items: 3 }, { savedChars: 332_000, compacted: false })).toBe("🛡 −4.2k · 3");
  });
});
