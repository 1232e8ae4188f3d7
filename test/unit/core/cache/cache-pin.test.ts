import { SessionManager } from "@earendil-works/pi-coding-agent";
import { describe, expect, it } from "vitest";
import {
  type AnthropicPayload,
  countBreakpoints,
  MAX_BREAKPOINTS,
  placeGuardBreakpoints,
} from "../../../../src/core/cache/cache-pin.ts";
import { CACHE_TTL_MS, CachePins } from "../../../../src/main/session/cache-pins.ts";
import { FAUX_USAGE } from "../../../kit/pi-messages.ts";

const eph = { type: "ephemeral" };

/** Pi's Anthropic payload shape: marks on system[0], the last tool and the last block of the last message. */
function payload(turns: number): AnthropicPayload {
  const messages: NonNullable<AnthropicPayload["messages"]> = [
    { role: "user", content: [{ type: "text", text: "question" }] },
  ];
  for (let i = 1; i <= turns; i++) {
    messages.push({ role: "assistant", content: [{ type: "tool_use", id: `c${i}`, name: "bash", input: {} }] });
    messages.push({ role: "user", content: [{ type: "tool_result", tool_use_id: `c${i}`, content: `out ${i}` }] });
  }
  const last = messages.at(-1)?.content as Array<Record<string, unknown>>;
  (last.at(-1) as Record<string, unknown>).cache_control = eph;
  return {
    system: [{ type: "text", text: "you are pi", cache_control: eph }],
    tools: [{ name: "a" }, { name: "b", cache_control: eph }],
    messages,
  };
}

const marksAt = (p: AnthropicPayload) =>
  (p.messages ?? []).flatMap((m, i) => (Array.isArray(m.content) && m.content.some((b) => b.cache_control) ? [i] : []));

describe("placeGuardBreakpoints", () => {
  it("drops Pi's tools mark, pins the question and keeps the system prompt's mark while one is spare", () => {
    const p = payload(3);
    const marks = placeGuardBreakpoints(p, {});
    expect(marks.map((m) => m.kind)).toEqual(["conversation-end", "question"]);
    expect(marksAt(p)).toEqual([0, 6]);
    expect((p.tools ?? []).some((t) => t.cache_control)).toBe(false);
    expect(Array.isArray(p.system) && p.system.at(-1)?.cache_control).toEqual(eph);
    expect(countBreakpoints(p)).toBe(3);
  });

  it("adds the read point on the trusted tool result and the write anchor at the first edit's batch", () => {
    const p = payload(10);
    const marks = placeGuardBreakpoints(p, { readPoint: "c2", anchor: "c5" });
    expect(marks.map((m) => [m.kind, m.messageIndex, m.toolUseId])).toEqual([
      ["conversation-end", 20, "c10"],
      ["question", 0, undefined],
      ["read-point", 4, "c2"],
      ["write-anchor", 10, "c5"],
    ]);
    // Four marks on messages: the system prompt's gives way.
    expect(Array.isArray(p.system) && p.system.some((b) => b.cache_control)).toBe(false);
    expect(countBreakpoints(p)).toBe(MAX_BREAKPOINTS);
  });

  it("keeps within four marks: with Pi's end mark on the anchor's batch, nothing is placed twice", () => {
    const p = payload(10);
    const marks = placeGuardBreakpoints(p, { readPoint: "c2", anchor: "c10" });
    expect(marks.map((m) => m.kind)).toEqual(["conversation-end", "question", "read-point"]);
    expect(countBreakpoints(p)).toBe(MAX_BREAKPOINTS);
  });

  it("handles a string prompt and a 2,001-message payload", () => {
    const p: AnthropicPayload = { messages: [{ role: "user", content: "plain prompt" }] };
    placeGuardBreakpoints(p, {});
    expect(p.messages?.[0]?.content).toEqual([{ type: "text", text: "plain prompt", cache_control: eph }]);
    const big = payload(1000);
    const marks = placeGuardBreakpoints(big, { readPoint: "c990", anchor: "c995" });
    expect(marks.map((m) => m.kind)).toEqual(["conversation-end", "question", "read-point", "write-anchor"]);
  });
});

/** Appends the fake Anthropic model's bash call. */
const assistant = (sm: SessionManager, callId: string) =>
  sm.appendMessage({
    role: "assistant",
    content: [{ type: "toolCall", id: callId, name: "bash", arguments: {} }],
    api: "anthropic-messages",
    provider: "fake-anthropic",
    model: "claude-fake",
    usage: FAUX_USAGE,
    stopReason: "toolUse",
    timestamp: 1,
  } as never);
/** Appends the call's result; returns its entry id. */
const result = (sm: SessionManager, callId: string, text = `out ${callId}`) =>
  sm.appendMessage({
    role: "toolResult",
    toolCallId: callId,
    toolName: "bash",
    content: [{ type: "text", text }],
    isError: false,
    timestamp: 1,
  } as never);

function session() {
  const sm = SessionManager.inMemory("/tmp/cg");
  sm.appendMessage({ role: "user", content: [{ type: "text", text: "question" }], timestamp: 1 });
  const ids: string[] = [];
  for (let i = 1; i <= 4; i++) {
    assistant(sm, `c${i}`);
    ids.push(result(sm, `c${i}`, `out ${i}`));
  }
  const ctx = { sessionManager: sm, model: { provider: "fake-anthropic", id: "claude-fake" } } as never;
  return { sm, ids, ctx };
}

describe("CachePins trust rules", () => {
  it("trusts an entry this process saw written, by the same model, within the TTL", () => {
    const { ids, ctx } = session();
    const pins = new CachePins();
    pins.onRequest(payload(4), ctx, 1000);
    expect(pins.trustedIds(ctx, 2000)).toEqual([ids[3]]);
    expect(pins.trustedIds(ctx, 1000 + CACHE_TTL_MS + 1)).toEqual([]);
    const other = { ...(ctx as object), model: { provider: "fake-anthropic", id: "claude-other" } } as never;
    expect(pins.trustedIds(other, 2000)).toEqual([]);
  });

  it("stops trusting after an edit at or before the entry, or a compaction", () => {
    const { sm, ids, ctx } = session();
    const pins = new CachePins();
    pins.onRequest(payload(4), ctx, 1000);
    sm.appendContextEdit(ids[3] as string, { content: [{ type: "text", text: "x" }] });
    expect(pins.trustedIds(ctx, 2000)).toEqual([]);
    const s2 = session();
    const pins2 = new CachePins();
    pins2.onRequest(payload(4), s2.ctx, 1000);
    s2.sm.appendCompaction("summary", s2.ids[0] as string, 100);
    expect(pins2.trustedIds(s2.ctx, 2000)).toEqual([]);
  });

  it("places the read point at a trusted entry before the first pending edit", () => {
    const { sm, ids, ctx } = session();
    const pins = new CachePins();
    // Request after turn 2 writes an entry at out 2 (Pi's conversation-end mark).
    const p2 = payload(2);
    pins.onRequest(p2, ctx, 1000);
    expect(pins.trustedIds(ctx, 1500)).toEqual([ids[1]]);
    // A checkpoint edits out 3; the next request reads up to out 2 and anchors at out 3's batch.
    sm.appendContextEdit(ids[2] as string, { content: [{ type: "text", text: "[context-guard] x" }] });
    const p = payload(4);
    pins.onRequest(p, ctx, 2000);
    const marked = (p.messages ?? []).flatMap((m) =>
      Array.isArray(m.content) ? m.content.filter((b) => b.cache_control).map((b) => b.tool_use_id ?? "question") : [],
    );
    expect(marked).toEqual(["question", "c2", "c3", "c4"]);
  });
});

describe("refresh on read-through", () => {
  function run(readThrough: number) {
    const sm = SessionManager.inMemory("/tmp/cg");
    const ctx = { sessionManager: sm, model: { provider: "fake-anthropic", id: "claude-fake" } } as never;
    const pins = new CachePins();
    sm.appendMessage({ role: "user", content: [{ type: "text", text: "question" }], timestamp: 1 });
    pins.onRequest(payload(0), ctx, 0);
    assistant(sm, "c1");
    pins.onAssistantEnd({ input: 100, cacheRead: 0, cacheWrite: 0 }, ctx); // baseline: 100 tokens
    const out1 = result(sm, "c1");
    pins.onRequest(payload(1), ctx, 1000); // writes an entry ending at out 1
    assistant(sm, "c2");
    pins.onAssistantEnd({ input: 10, cacheRead: 90, cacheWrite: 10 }, ctx);
    result(sm, "c2");
    const late = 1000 + CACHE_TTL_MS - 10;
    pins.onRequest(payload(2), ctx, late);
    assistant(sm, "c3");
    pins.onAssistantEnd({ input: 10, cacheRead: readThrough, cacheWrite: 10 }, ctx);
    return { trusted: pins.trustedIds(ctx, 1000 + CACHE_TTL_MS + 100), out1 };
  }

  it("keeps an entry alive when a later read reached past it with a margin", () => {
    const { trusted, out1 } = run(100 + 50);
    expect(trusted).toContain(out1);
  });

  it("does not refresh when the read did not clearly pass the baseline", () => {
    const { trusted, out1 } = run(100);
    expect(trusted).not.toContain(out1);
  });
});
