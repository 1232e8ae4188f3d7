// The request view while edits wait for their boundary: ready drafts are carried as Pi will show them,
// restores show the original, and a draft that touches a pinned or restored entry (an exchange: any of
// its entries) is not carried at all.
import { SessionManager } from "@earendil-works/pi-coding-agent";
import { describe, expect, it } from "vitest";
import type { ContextEditDraft, GuardRecord, RecordResult } from "../../../../src/core/shared/types.ts";
import type { Judged } from "../../../../src/main/pass/revalidate.ts";
import { blockedByPins, carriedDrafts, withWaitingEdits } from "../../../../src/main/session/ready-drafts.ts";

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

const requestMessages = (sm: SessionManager) =>
  structuredClone(sm.buildSessionProjection().messages.filter((m) => m.role !== "system"));
const texts = (messages: unknown[]) =>
  (messages as Array<{ content: string | Array<{ text: string }> }>).map((m) =>
    typeof m.content === "string" ? m.content : m.content.map((b) => b.text).join(""),
  );

const outcome = (entryId: string, kind: RecordResult["kind"], omitted?: string[]): RecordResult => ({
  kind,
  entryId,
  label: entryId,
  outcome: "removed",
  reason: "",
  beforeChars: 100,
  afterChars: 10,
  jev: [],
  ...(omitted ? { omitted } : {}),
});

function judged(edits: ContextEditDraft[], results: RecordResult[]): Judged {
  const record: GuardRecord = {
    v: 1,
    phase: "run-end",
    model: "local/lexical",
    savedChars: 0,
    requests: 0,
    inputTokens: 0,
    costUsd: 0,
    ms: 0,
    timedOut: false,
    results,
  };
  return { edits, record };
}

function session() {
  const sm = SessionManager.inMemory("/tmp/cg");
  const ids = {
    u1: user(sm, "old task"),
    t1: result(sm, "old output"),
    a1: assistant(sm, "old answer"),
    u2: user(sm, "new task"),
    t2: result(sm, "big output"),
    a2: assistant(sm, "done"),
  };
  // A pass behind the agent omits exchange 1 and distills t2; none of it has landed.
  const ready = judged(
    [
      { type: "context_edit", targetId: ids.u1, replacement: { content: text("[context-guard] omitted") } },
      { type: "context_edit", targetId: ids.t1, replacement: null },
      { type: "context_edit", targetId: ids.a1, replacement: null },
      { type: "context_edit", targetId: ids.t2, replacement: { content: text("[context-guard] distilled") } },
    ],
    [outcome(ids.u1, "exchange", [ids.t1, ids.a1]), outcome(ids.t2, "large")],
  );
  return { sm, ids, ready };
}

describe("the request view while edits wait", () => {
  it("carries ready drafts as Pi will show them once they land", () => {
    const { sm, ready } = session();
    const out = withWaitingEdits(requestMessages(sm), sm, new Set(), carriedDrafts(ready, new Set()));
    expect(texts(out ?? [])).toEqual(["[context-guard] omitted", "new task", "[context-guard] distilled", "done"]);
  });

  it("drops every draft of an exchange when one of its entries is pinned, and only those", () => {
    const { ids, ready } = session();
    expect([...blockedByPins(ready, new Set([ids.t1]))].sort()).toEqual([ids.u1, ids.t1, ids.a1].sort());
    expect(carriedDrafts(ready, new Set([ids.t1])).map((e) => e.targetId)).toEqual([ids.t2]);
    expect(carriedDrafts(ready, new Set([ids.t2])).map((e) => e.targetId)).toEqual([ids.u1, ids.t1, ids.a1]);
  });

  it("a restore waiting for its boundary shows the original over a ready draft of the same entry", () => {
    const { sm, ids, ready } = session();
    // t2 was distilled by an earlier pass and restored since; a ready draft would omit its exchange.
    sm.appendContextEdit(ids.t2, { content: text("[context-guard] distilled earlier") });
    const restoring = new Set([ids.t2]);
    const edits = carriedDrafts(ready, restoring);
    const out = withWaitingEdits(requestMessages(sm), sm, restoring, edits);
    expect(texts(out ?? [])).toEqual(["[context-guard] omitted", "new task", "big output", "done"]);
  });

  it("puts an omitted entry back where it stood when it is restored", () => {
    const { sm, ids } = session();
    sm.appendContextEdit(ids.t1, null);
    const out = withWaitingEdits(requestMessages(sm), sm, new Set([ids.t1]), []);
    expect(texts(out ?? [])).toEqual(["old task", "old output", "old answer", "new task", "big output", "done"]);
  });

  it("leaves messages that do not line up with the projection alone", () => {
    const { sm, ready } = session();
    const messages = requestMessages(sm).slice(1);
    expect(withWaitingEdits(messages, sm, new Set(), carriedDrafts(ready, new Set()))).toBeUndefined();
  });
});
