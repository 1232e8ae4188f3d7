// The requests before a restore's boundary carry the original (Pi's context event), for an edited
// output (changed in place) and an omitted exchange (inserted where it stood); the boundary then gets
// the edits that put the originals back, for targets on its context only.
import { SessionManager } from "@earendil-works/pi-coding-agent";
import { describe, expect, it } from "vitest";
import { PIN_TYPE, pinData } from "../../../../src/core/records/pins.ts";
import type { ProjectedLike } from "../../../../src/main/pass/snapshot.ts";
import { withWaitingEdits } from "../../../../src/main/session/ready-drafts.ts";
import { PendingRestores } from "../../../../src/main/session/restore.ts";

let clock = 1;
const text = (t: string) => [{ type: "text" as const, text: t }];
const user = (sm: SessionManager, t: string) =>
  sm.appendMessage({ role: "user", content: text(t), timestamp: clock++ });
const assistant = (sm: SessionManager, t: string) =>
  sm.appendMessage({
    role: "assistant",
    content: text(t),
    api: "faux",
    provider: "faux",
    model: "m",
    usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: {} },
    stopReason: "stop",
    timestamp: clock++,
  } as never);
const result = (sm: SessionManager, t: string) =>
  sm.appendMessage({
    role: "toolResult",
    toolCallId: `c${clock}`,
    toolName: "bash",
    content: text(t),
    isError: false,
    timestamp: clock++,
  } as never);

/** What the context event hands a handler: the projection's messages without system messages, copied. */
const requestMessages = (sm: SessionManager) =>
  structuredClone(sm.buildSessionProjection().messages.filter((m) => m.role !== "system"));
const texts = (messages: unknown[]) =>
  (messages as Array<{ content: string | Array<{ text: string }> }>).map((m) =>
    typeof m.content === "string" ? m.content : m.content.map((b) => b.text).join(""),
  );

function session() {
  const sm = SessionManager.inMemory("/tmp/cg");
  const ids = {
    u1: user(sm, "old task"),
    a1: assistant(sm, "old answer"),
    u2: user(sm, "new task"),
    t2: result(sm, "big output"),
    a2: assistant(sm, "done"),
  };
  sm.appendContextEdit(ids.u1, { content: "[context-guard] omitted exchange" });
  sm.appendContextEdit(ids.a1, null);
  sm.appendContextEdit(ids.t2, { content: text("[context-guard] distilled") });
  return { sm, ids };
}

/** The request as the context event makes it with the pending restores (and no ready drafts). */
const restored = (messages: unknown[], sm: SessionManager) =>
  withWaitingEdits(messages as never, sm, new Set(new PendingRestores().pending(sm)), []);

describe("PendingRestores", () => {
  it("changes nothing while no restore waits", () => {
    const { sm } = session();
    const messages = requestMessages(sm);
    expect(restored(messages, sm)).toBeUndefined();
    expect(texts(messages)).toEqual([
      "[context-guard] omitted exchange",
      "new task",
      "[context-guard] distilled",
      "done",
    ]);
  });

  it("gives an edited output its original in place", () => {
    const { sm, ids } = session();
    sm.appendCustomEntry(PIN_TYPE, pinData("restore", [ids.t2]));
    const messages = requestMessages(sm);
    expect(texts(restored(messages, sm) ?? [])).toEqual([
      "[context-guard] omitted exchange",
      "new task",
      "big output",
      "done",
    ]);
  });

  it("puts an omitted exchange back where it stood, followed by what the run added since", () => {
    const { sm, ids } = session();
    sm.appendCustomEntry(PIN_TYPE, pinData("restore", [ids.u1, ids.a1]));
    const messages = [...requestMessages(sm), { role: "user", content: text("queued"), timestamp: clock++ }];
    const out = restored(messages, sm);
    expect(texts(out ?? [])).toEqual([
      "old task",
      "old answer",
      "new task",
      "[context-guard] distilled",
      "done",
      "queued",
    ]);
  });

  it("leaves messages that do not line up with the projection alone", () => {
    const { sm, ids } = session();
    sm.appendCustomEntry(PIN_TYPE, pinData("restore", [ids.t2]));
    const messages = requestMessages(sm).slice(1);
    expect(restored(messages, sm)).toBeUndefined();
    expect(texts(messages)).toEqual(["new task", "[context-guard] distilled", "done"]);
  });

  it("drafts the restoring edits for targets on the context, and stops once they landed", () => {
    const { sm, ids } = session();
    sm.appendCustomEntry(PIN_TYPE, pinData("restore", [ids.u1, ids.a1, "gone1234"]));
    const restores = new PendingRestores();
    const context = sm.buildSessionProjection().entries as unknown as ProjectedLike[];
    const drafts = restores.drafts(context, sm);
    expect(drafts).toEqual([
      { type: "context_edit", targetId: ids.u1, replacement: { content: text("old task") } },
      { type: "context_edit", targetId: ids.a1, replacement: { content: text("old answer") } },
    ]);
    for (const d of drafts) if (d.type === "context_edit") sm.appendContextEdit(d.targetId, d.replacement);
    expect(restores.drafts(sm.buildSessionProjection().entries as unknown as ProjectedLike[], sm)).toEqual([]);
    // A target the boundary did not find (compacted away) is not waited for again.
    expect(restores.pending(sm)).toEqual([]);
    expect(texts(requestMessages(sm))).toEqual([
      "old task",
      "old answer",
      "new task",
      "[context-guard] distilled",
      "done",
    ]);
  });
});
