import { SessionManager } from "@earendil-works/pi-coding-agent";
import { describe, expect, it } from "vitest";
import { checkpointMemo } from "../../../../src/core/cache/checkpoint.ts";
import { exchangeMemo } from "../../../../src/core/items/exchanges.ts";
import { type ContextEditDraft, RECORD_TYPE, type SnapEntry } from "../../../../src/core/shared/types.ts";
import { type ProjectedLike, SnapshotBuilder } from "../../../../src/main/pass/snapshot.ts";
import { validateEdits } from "../../../../src/main/pass/validate.ts";
import { FAUX_USAGE } from "../../../kit/pi-messages.ts";

// A real Pi session manager builds the projection, so the snapshot is checked against Pi's own shapes.
function makeSession() {
  const sm = SessionManager.inMemory("/tmp/cg");
  const now = Date.now();
  const user = sm.appendMessage({ role: "user", content: [{ type: "text", text: "find it" }], timestamp: now });
  const assistant = sm.appendMessage({
    role: "assistant",
    content: [
      { type: "thinking", thinking: "hmm", thinkingSignature: "sig" },
      { type: "toolCall", id: "call1", name: "bash", arguments: { command: "rg -n x" } },
    ],
    api: "openai-completions",
    provider: "fake",
    model: "m",
    usage: FAUX_USAGE,
    stopReason: "toolUse",
    timestamp: now,
  } as never);
  const result = sm.appendMessage({
    role: "toolResult",
    toolCallId: "call1",
    toolName: "bash",
    content: [
      { type: "text", text: "a.ts:1:x\nb.ts:2:x" },
      { type: "image", data: "AAAA", mimeType: "image/png" },
    ],
    isError: false,
    timestamp: now,
  } as never);
  return { sm, user, assistant, result };
}

const projected = (sm: SessionManager) => sm.buildSessionProjection().entries as unknown as ProjectedLike[];

describe("SnapshotBuilder", () => {
  it("reads roles, text, images and tool calls from Pi's projection", () => {
    const { sm, result } = makeSession();
    const snap = new SnapshotBuilder().entries(projected(sm));
    expect(snap.map((e) => e.role)).toEqual(["user", "assistant", "toolResult"]);
    expect(snap[1]?.toolCalls).toEqual([{ id: "call1", name: "bash", args: { command: "rg -n x" } }]);
    expect(snap[2]).toMatchObject({
      id: result,
      text: "a.ts:1:x\nb.ts:2:x",
      images: 1,
      toolName: "bash",
      toolCallId: "call1",
      isError: false,
    });
    expect(snap[2]?.edited).toBeUndefined();
  });

  it("reuses the snapshot of an unedited entry and rebuilds an edited one", () => {
    const { sm, result } = makeSession();
    const builder = new SnapshotBuilder();
    const first = builder.entries(projected(sm));
    const again = builder.entries(projected(sm));
    expect(again[2]).toBe(first[2]);
    sm.appendContextEdit(result, { content: [{ type: "text", text: "[context-guard] short" }] });
    const edited = builder.entries(projected(sm)).find((e) => e.id === result);
    expect(edited).toMatchObject({
      edited: true,
      text: "[context-guard] short",
      rawText: "a.ts:1:x\nb.ts:2:x",
      rawImages: 1,
      images: 0,
    });
  });

  it("walks an unchanged projection by reference, without reading Pi's messages", () => {
    const { sm } = makeSession();
    const builder = new SnapshotBuilder();
    const first = builder.entries(projected(sm));
    // Pi builds new projection wrappers every time, around the same entries and (unedited) messages.
    let reads = 0;
    const watched = projected(sm).map((e) => {
      const message = e.messages[0] as Record<string, unknown> | undefined;
      if (!message) return e;
      const spy = new Proxy(message, {
        get(target, key, receiver) {
          reads++;
          return Reflect.get(target, key, receiver);
        },
      });
      return { sourceEntry: e.sourceEntry, messages: [spy, ...e.messages.slice(1)] };
    });
    const primed = builder.entries(watched);
    expect(primed).toEqual(first);
    reads = 0;
    const again = builder.entries(watched.map((e) => ({ sourceEntry: e.sourceEntry, messages: [...e.messages] })));
    expect(reads).toBe(0);
    for (const [i, snap] of again.entries()) expect(snap).toBe(primed[i]);
  });

  it("reuses the snapshot of an edited entry while the same edit is shown, and rebuilds it for a new edit", () => {
    const { sm, result } = makeSession();
    const builder = new SnapshotBuilder();
    sm.appendContextEdit(result, { content: [{ type: "text", text: "[context-guard] short" }] });
    const first = builder.entries(projected(sm)).find((e) => e.id === result);
    const again = builder.entries(projected(sm)).find((e) => e.id === result);
    expect(again).toBe(first);
    sm.appendContextEdit(result, { content: [{ type: "text", text: "[context-guard] shorter" }] });
    const next = builder.entries(projected(sm)).find((e) => e.id === result);
    expect(next).not.toBe(first);
    expect(next).toMatchObject({ edited: true, text: "[context-guard] shorter", rawText: "a.ts:1:x\nb.ts:2:x" });
  });

  it("marks an omitted entry as not visible and edited, keeping its tool calls", () => {
    const { sm, assistant } = makeSession();
    sm.appendContextEdit(assistant, null);
    const snap = new SnapshotBuilder().entries(projected(sm)).find((e) => e.id === assistant);
    expect(snap).toMatchObject({ visible: false, edited: true, role: "assistant" });
    expect(snap?.toolCalls?.[0]?.id).toBe("call1");
  });
});

describe("guard records in the snapshot", () => {
  it("carry what the worker's memos read, and the memos come out the same", () => {
    const { sm, result } = makeSession();
    const results = [
      { kind: "large", entryId: result, label: "bash `rg`", outcome: "kept", reason: "keep_whole", jev: ["kw.90"] },
      { kind: "large", entryId: "t2", label: "read a.ts", outcome: "kept", reason: "timeout", jev: [] },
      {
        kind: "exchange",
        entryId: "u0",
        label: "prompt",
        outcome: "omitted",
        reason: "unrelated",
        jev: [],
        omitted: ["a0"],
      },
      "damaged",
    ];
    sm.appendCustomEntry(RECORD_TYPE, { v: 1, phase: "mid-run", model: "x/y", requests: 3, results });
    const entries = new SnapshotBuilder().entries(projected(sm));
    const record = entries.at(-1);
    expect(record?.data).toEqual({
      phase: "mid-run",
      results: [
        { kind: "large", entryId: result, reason: "keep_whole", outcome: "kept" },
        { kind: "large", entryId: "t2", reason: "timeout", outcome: "kept" },
        { kind: "exchange", entryId: "u0", reason: "unrelated", outcome: "omitted" },
        "damaged",
      ],
    });
    const raw = sm.getBranch().at(-1) as { data?: unknown };
    const whole = entries.map((e) => (e === record ? { ...e, data: raw.data } : e));
    expect(checkpointMemo(entries, -1)).toEqual(checkpointMemo(whole as SnapEntry[], -1));
    expect(checkpointMemo(entries, -1)).toEqual(new Set([result]));
    expect(exchangeMemo(entries, -1)).toEqual(exchangeMemo(whole as SnapEntry[], -1));
    expect(exchangeMemo(entries, -1)).toEqual(new Set(["u0"]));
  });
});

describe("validateEdits", () => {
  const edit = (targetId: string, text: string | null): ContextEditDraft => ({
    type: "context_edit",
    targetId,
    replacement: text === null ? null : { content: [{ type: "text", text }] },
  });

  it("keeps valid edits and drops unknown targets, assistant replacements, duplicates and longer replacements", () => {
    const { sm, assistant, result, user } = makeSession();
    const context = projected(sm);
    const { valid, dropped } = validateEdits(
      [
        edit(result, "short"),
        edit("nope1234", "x"),
        edit(assistant, "x"),
        edit(result, "again"),
        edit(user, "a much longer prompt than before"),
      ],
      context,
    );
    expect(valid).toEqual([edit(result, "short")]);
    expect(dropped.map((d) => d.why)).toEqual([
      "target is not in the context",
      "the guard never replaces assistant content",
      "second edit of the same target",
      "replacement is not shorter than the original",
    ]);
  });

  it("lets Pi accept every edit it keeps", () => {
    const { sm, result } = makeSession();
    const { valid } = validateEdits([edit(result, "[cg] ok")], projected(sm));
    expect(valid).toHaveLength(1);
    for (const d of valid) sm.appendContextEdit(d.targetId, d.replacement as never);
    const shown = sm.buildSessionProjection().entries.find((e) => e.sourceEntry.id === result);
    expect(JSON.stringify(shown?.messages)).toContain("[cg] ok");
  });
});
