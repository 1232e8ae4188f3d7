import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { collectRun, findRunStart, IMAGE_ONLY } from "../../../../src/core/distill/run.ts";
import {
  buildExchangeRequests,
  collectExchanges,
  EXCHANGE_MIN_CHARS,
  type Exchange,
  exchangeDrafts,
  exchangeMemo,
  exchangeResult,
  exchangeStub,
  interpretExchanges,
} from "../../../../src/core/items/exchanges.ts";
import { DEFAULT_CONFIG, normalizeConfig } from "../../../../src/core/shared/config.ts";
import {
  type ClassifierOutcome,
  type ContextEditDraft,
  GUARD_MARKER,
  type RecordResult,
  type SnapEntry,
  type SnapToolCall,
} from "../../../../src/core/shared/types.ts";
import {
  assistantEntry,
  branchSummaryEntry,
  callResultEntry,
  compactionEntry,
  customMessageEntry,
  hiddenEntry,
  messageEntry,
  recordEntry,
  toolCall,
  userEntry,
} from "../../../kit/snap.ts";

let seq = 0;
const nextId = () => `e${++seq}`;

const user = (text: string, images = 0): SnapEntry => userEntry(nextId(), text, { images });
const assistant = (text: string, toolCalls: SnapToolCall[] = [], stopReason?: string): SnapEntry =>
  assistantEntry(nextId(), text, toolCalls.length ? toolCalls : undefined, stopReason ? { stopReason } : {});
const call = (name = "bash", args: Record<string, unknown> = { command: "ls" }): SnapToolCall =>
  toolCall(`call-${++seq}`, name, args);
const result = (c: SnapToolCall, text: string, extra: Partial<SnapEntry> = {}): SnapEntry =>
  callResultEntry(nextId(), c, text, extra);
const notice = (text: string): SnapEntry => customMessageEntry(nextId(), "subagent", text);
const stateOnly = (): SnapEntry => hiddenEntry(nextId(), "model_change");
const systemMessage = (text: string): SnapEntry => messageEntry(nextId(), "system", text);
const bashExecution = (text: string): SnapEntry => messageEntry(nextId(), "bashExecution", text);
const compaction = (summary: string): SnapEntry => compactionEntry(nextId(), summary);
const branchSummary = (summary: string): SnapEntry => branchSummaryEntry(nextId(), summary);
const record = (results: Array<Partial<RecordResult>>): SnapEntry =>
  recordEntry(nextId(), { v: 1, phase: "mid-run", results });

const big = (label: string, n = 3000) => `${label} ${"x".repeat(n)}`;

/** A finished exchange: prompt, one tool call with a big output, the answer. */
function exchange(prompt: string, output = big("output"), answer = `answer to ${prompt}`): SnapEntry[] {
  const c = call("bash", { command: `run ${prompt}` });
  return [user(prompt), assistant("", [c]), result(c, output), assistant(answer)];
}

/** Entries of a session plus the current run's prompt and its answer. */
function withRun(before: SnapEntry[], prompt = "current task"): { entries: SnapEntry[]; start: number } {
  const entries = [...before, user(prompt), assistant("current answer")];
  return { entries, start: before.length };
}

const cfg = (keepRecentExchanges = 0) => ({ pruneExchanges: true, keepRecentExchanges });
const promptIds = (xs: Exchange[]) => xs.map((x) => x.promptId);

describe("config", () => {
  it("has the exchange keys with their defaults and ranges", () => {
    expect(DEFAULT_CONFIG).toMatchObject({
      pruneExchanges: true,
      keepRecentExchanges: 2,
      exchangeOmitThreshold: 0.2,
      exchangeBreakEven: true,
      exchangeMinSavingChars: 8000,
    });
    const { config, warnings } = normalizeConfig({
      pruneExchanges: false,
      keepRecentExchanges: 101,
      exchangeOmitThreshold: 0.1,
      exchangeBreakEven: "yes",
      exchangeMinSavingChars: 0,
    });
    expect(config).toMatchObject({
      pruneExchanges: false,
      keepRecentExchanges: 2,
      exchangeOmitThreshold: 0.1,
      exchangeBreakEven: true,
      exchangeMinSavingChars: 0,
    });
    expect(warnings.map((w) => w.split(":")[0]).sort()).toEqual(["exchangeBreakEven", "keepRecentExchanges"]);
  });
});

describe("collectExchanges", () => {
  it("collects finished exchanges before the run with their entries, labels and size", () => {
    const a = exchange("first task");
    const b = exchange("second task");
    const { entries, start } = withRun([...a, ...b]);
    const xs = collectExchanges(entries, start, cfg(0), new Set());
    expect(promptIds(xs)).toEqual([a[0]?.id, b[0]?.id]);
    const first = xs[0] as Exchange;
    expect(first.index).toBe(0);
    expect(first.entryIds).toEqual(a.slice(1).map((e) => e.id));
    expect(first.prompt).toBe("first task");
    expect(first.lastAssistant).toBe("answer to first task");
    expect(first.toolLabels).toEqual(["bash `run first task`"]);
    expect(first.messages).toBe(4);
    const args = JSON.stringify({ command: "run first task" }).length + "bash".length;
    expect(first.chars).toBe("first task".length + args + big("output").length + "answer to first task".length);
    expect(first.stub).toBe(exchangeStub(first));
  });

  it("never touches the last keepRecentExchanges exchanges before the run", () => {
    const parts = [exchange("one"), exchange("two"), exchange("three"), exchange("four")];
    const { entries, start } = withRun(parts.flat());
    const ids = parts.map((p) => p[0]?.id);
    expect(promptIds(collectExchanges(entries, start, cfg(2), new Set()))).toEqual(ids.slice(0, 2));
    expect(promptIds(collectExchanges(entries, start, cfg(3), new Set()))).toEqual(ids.slice(0, 1));
    expect(collectExchanges(entries, start, cfg(4), new Set())).toEqual([]);
    // Recency counts every exchange, eligible or not: a small recent one still takes a slot.
    const small = [user("tiny"), assistant("ok")];
    const withSmall = withRun([...parts.flat(), ...small]);
    expect(promptIds(collectExchanges(withSmall.entries, withSmall.start, cfg(2), new Set()))).toEqual(ids.slice(0, 3));
  });

  it("does nothing when pruneExchanges is off or there is nothing before the run", () => {
    const { entries, start } = withRun(exchange("one"));
    expect(collectExchanges(entries, start, { pruneExchanges: false, keepRecentExchanges: 0 }, new Set())).toEqual([]);
    expect(collectExchanges(entries, 0, cfg(0), new Set())).toEqual([]);
    expect(collectExchanges(entries, -1, cfg(0), new Set())).toEqual([]);
  });

  it("skips exchanges that did not finish", () => {
    const c = call();
    // The exchange was cut by a branch summary while its last assistant message still asked for a tool.
    const cut = [user("cut short"), assistant(big("thinking"), [c]), branchSummary("went elsewhere")];
    const noAssistant = [user(big("a long prompt nobody answered"))];
    const ok = exchange("fine");
    const { entries, start } = withRun([...cut, ...noAssistant, ...ok]);
    expect(promptIds(collectExchanges(entries, start, cfg(0), new Set()))).toEqual([ok[0]?.id]);
  });

  it("treats an exchange whose last tool calls were aborted or failed as finished", () => {
    const aborted = [user("stop that"), assistant(big("starting"), [call()], "aborted")];
    const { entries, start } = withRun(aborted);
    expect(promptIds(collectExchanges(entries, start, cfg(0), new Set()))).toEqual([aborted[0]?.id]);
  });

  it("skips exchanges that are already omitted", () => {
    const a = exchange("old");
    const prompt = a[0] as SnapEntry;
    const stub = exchangeStub({ promptId: prompt.id, prompt: "old", messages: 4, chars: 3100 });
    const omitted: SnapEntry[] = [
      { ...prompt, text: stub, edited: true, rawText: "old", rawImages: 0 },
      ...a.slice(1).map((e) => ({ ...e, visible: false, text: "", edited: true, rawText: e.text, rawImages: 0 })),
    ];
    const { entries, start } = withRun([...omitted, ...exchange("new")]);
    expect(collectExchanges(entries, start, cfg(0), new Set()).map((x) => x.prompt)).toEqual(["new"]);
  });

  it("skips exchanges already judged in this run, except deferred and unanswered ones", () => {
    const parts = [exchange("a"), exchange("b"), exchange("c"), exchange("d")];
    const [a, b, c, d] = parts.map((p) => (p[0] as SnapEntry).id) as [string, string, string, string];
    const before = record([{ kind: "exchange", entryId: d, reason: "relevant" }]);
    const entries = [
      ...parts.flat(),
      before,
      user("current"),
      assistant("working", [call()]),
      record([
        { kind: "exchange", entryId: a, outcome: "kept", reason: "relevant" },
        { kind: "exchange", entryId: b, outcome: "kept", reason: "deferred" },
        { kind: "exchange", entryId: c, outcome: "kept", reason: "timeout" },
        { kind: "small", entryId: d, outcome: "kept", reason: "needed" },
      ]),
    ];
    const start = findRunStart(entries);
    const memo = exchangeMemo(entries, start);
    expect([...memo]).toEqual([a]);
    expect(promptIds(collectExchanges(entries, start, cfg(0), memo))).toEqual([b, c, d]);
  });

  it("reads damaged records without throwing", () => {
    const damaged: SnapEntry[] = [null, 5, "x", { results: "no" }, { results: [null, 3, { kind: "exchange" }] }].map(
      (data) => recordEntry(nextId(), data),
    );
    expect(exchangeMemo([user("q"), ...damaged], 0).size).toBe(0);
  });

  it("skips exchanges another extension edited or omitted parts of", () => {
    const edited = exchange("edited by someone");
    const r = edited[2] as SnapEntry;
    edited[2] = { ...r, text: "[other] shortened", edited: true, rawText: r.text, rawImages: 0 };
    const omitted = exchange("omitted by someone");
    const o = omitted[2] as SnapEntry;
    omitted[2] = { ...o, visible: false, text: "", edited: true, rawText: o.text, rawImages: 0 };
    const promptEdited = exchange("prompt edited");
    const p = promptEdited[0] as SnapEntry;
    promptEdited[0] = { ...p, text: "rewritten prompt", edited: true, rawText: p.text, rawImages: 0 };
    const ok = exchange("fine");
    const { entries, start } = withRun([...edited, ...omitted, ...promptEdited, ...ok]);
    expect(collectExchanges(entries, start, cfg(0), new Set()).map((x) => x.prompt)).toEqual(["fine"]);
  });

  it("accepts exchanges with our own edits and with images", () => {
    const distilled = exchange("distilled");
    const r = distilled[2] as SnapEntry;
    distilled[2] = { ...r, text: `${GUARD_MARKER} Distilled …\n${big("kept")}`, edited: true, rawText: r.text };
    // Ours because a guard record lists the edit (the marker alone proves nothing).
    distilled.push(record([{ kind: "large", entryId: r.id, outcome: "distilled", reason: "chunks" }]));
    const withImages = exchange("look at this");
    withImages[0] = { ...(withImages[0] as SnapEntry), images: 2 };
    const imageOnly = exchange("");
    imageOnly[0] = { ...(imageOnly[0] as SnapEntry), images: 1 };
    const { entries, start } = withRun([...distilled, ...withImages, ...imageOnly]);
    const xs = collectExchanges(entries, start, cfg(0), new Set());
    expect(xs.map((x) => x.prompt)).toEqual(["distilled", "look at this", IMAGE_ONLY]);
    // Images count at a flat size.
    const plain = collectExchanges(withRun(exchange("look at this")).entries, 4, cfg(0), new Set())[0] as Exchange;
    expect((xs[1] as Exchange).chars - plain.chars).toBe(2 * 6400);
  });

  it("needs at least 2,000 characters of editable content and a shorter stub", () => {
    const overhead = "p".length + JSON.stringify({ command: "run p" }).length + "bash".length + "answer to p".length;
    const justEnough = exchange("p", "o".repeat(EXCHANGE_MIN_CHARS - overhead));
    const tooSmall = exchange("p", "o".repeat(EXCHANGE_MIN_CHARS - overhead - 1));
    const a = withRun(justEnough);
    expect(collectExchanges(a.entries, a.start, cfg(0), new Set()).map((x) => x.chars)).toEqual([EXCHANGE_MIN_CHARS]);
    const b = withRun(tooSmall);
    expect(collectExchanges(b.entries, b.start, cfg(0), new Set())).toEqual([]);
  });

  it("keeps a steering message inside the exchange it was sent in", () => {
    const c1 = call();
    const c2 = call();
    const steer = user("also check the tests");
    const a = [
      user("fix the bug"),
      assistant("", [c1]),
      result(c1, big("log")),
      steer,
      assistant("", [c2]),
      notice("subagent finished"),
      result(c2, "ok"),
      assistant("done"),
    ];
    const b = exchange("next");
    const { entries, start } = withRun([...a, ...b]);
    const xs = collectExchanges(entries, start, cfg(1), new Set());
    expect(promptIds(xs)).toEqual([a[0]?.id]);
    expect(xs[0]?.entryIds).toEqual(a.slice(1).map((e) => e.id));
    expect(xs[0]?.entryIds).toContain(steer.id);
  });

  it("leaves summaries, system and shell messages and state-only entries out of exchanges", () => {
    const c0 = call();
    // What Pi projects after a compaction: the summary, then kept entries from the middle of an exchange.
    const head = [compaction("earlier work"), assistant("", [c0]), result(c0, big("kept")), assistant("old end")];
    const a = [user("task"), stateOnly(), systemMessage("note"), bashExecution(big("ls")), ...exchange("x").slice(1)];
    const c = call();
    const tail = [branchSummary("other branch"), assistant("", [c]), result(c, big("after summary")), assistant("end")];
    const { entries, start } = withRun([...head, ...a, ...tail]);
    const xs = collectExchanges(entries, start, cfg(0), new Set());
    expect(promptIds(xs)).toEqual([a[0]?.id]);
    expect(xs[0]?.entryIds).toEqual(a.slice(4).map((e) => e.id));
    for (const e of [...head, ...tail]) expect(xs[0]?.entryIds).not.toContain(e.id);
  });

  it("skips an exchange whose tool call and result are not both inside it", () => {
    const c = call();
    // A call whose result came only after a summary ended the exchange.
    const a = [user("split"), assistant(big("start"), [c]), assistant("done"), branchSummary("s")];
    a.push(result(c, "late"), assistant("after"));
    const { entries, start } = withRun([...a, ...exchange("fine")]);
    expect(collectExchanges(entries, start, cfg(0), new Set()).map((x) => x.prompt)).toEqual(["fine"]);
  });

  it("matches reused call ids to the nearest earlier call", () => {
    const same = (): SnapToolCall => ({ id: "call_0", name: "bash", args: { command: "ls" } });
    const a = [user("one"), assistant("", [same()]), result(same(), big("a")), assistant("a done")];
    const b = [user("two"), assistant("", [same()]), result(same(), big("b")), assistant("b done")];
    const { entries, start } = withRun([...a, ...b]);
    expect(collectExchanges(entries, start, cfg(0), new Set()).map((x) => x.prompt)).toEqual(["one", "two"]);
  });
});

describe("exchangeStub", () => {
  it("names the prompt, size and recall call", () => {
    const stub = exchangeStub({ promptId: "abc123", prompt: "Fix the\nlogin   bug", messages: 12, chars: 57_200 });
    expect(stub).toBe(
      '[context-guard] Omitted an earlier exchange judged unrelated to the current work: "Fix the login bug" ' +
        '(12 messages, ~14.3k tokens). Full exchange: recall({"entryId":"abc123"}).',
    );
  });

  it("keeps the prompt to one line of at most 120 characters", () => {
    const stub = exchangeStub({ promptId: "p", prompt: "word ".repeat(100), messages: 2, chars: 2400 });
    const quoted = /: "(.*)" \(/.exec(stub)?.[1] ?? "";
    expect(quoted.length).toBe(120);
    expect(quoted.endsWith("…")).toBe(true);
    expect(stub).toContain("(2 messages, ~600 tokens)");
  });
});

describe("buildExchangeRequests", () => {
  const sample = (prompt: string, labels = 1): Exchange => {
    const toolLabels = Array.from({ length: labels }, (_, i) => `bash \`step ${i}\``);
    const base = { promptId: `id-${prompt}`, index: 0, entryIds: ["x"], prompt, lastAssistant: `did ${prompt}` };
    const ex = { ...base, toolLabels, chars: 5000, messages: 3 };
    return { ...ex, stub: exchangeStub(ex) };
  };

  it("shows the current work and each exchange, with one bool question per exchange", () => {
    const entries = [...exchange("old"), user("current question"), assistant("the final answer")];
    const span = collectRun(entries, 3);
    if (!span) throw new Error("no run");
    const xs = [sample("a"), sample("b", 0)];
    const [only, ...rest] = buildExchangeRequests(xs, span, "run-end", {
      maxSegmentChars: 32_000,
      maxItemsPerRequest: 40,
    });
    expect(rest).toEqual([]);
    expect(only?.promptIds).toEqual(["id-a", "id-b"]);
    const state = only?.request.state ?? {};
    expect(Object.keys(state)).toEqual([
      "situation",
      "earlier_conversation",
      "user_question",
      "final_answer",
      "exchanges",
    ]);
    expect(state.user_question).toBe("current question");
    expect(state.final_answer).toBe("the final answer");
    expect(state.exchanges).toEqual({
      exchange_1: { user: "a", assistant: "did a", tool_calls: ["bash `step 0`"], size: "3 messages, 5k chars" },
      exchange_2: { user: "b", assistant: "did b", size: "3 messages, 5k chars" },
    });
    const questions = only?.request.questions ?? {};
    expect(Object.keys(questions)).toEqual(["exchange_1", "exchange_2"]);
    expect(questions.exchange_1?.type).toBe("bool");
    expect(questions.exchange_1?.instructions).toContain("exchange_1");
    expect(questions.exchange_1?.instructions).toContain("earlier_conversation");
  });

  it("uses agent_progress instead of final_answer mid-run, and leaves out an empty history", () => {
    const c = call();
    const entries = [user("task"), assistant("first note", [c]), result(c, "x"), assistant("latest note", [call()])];
    const span = collectRun(entries, 3);
    if (!span) throw new Error("no run");
    const [req] = buildExchangeRequests([sample("a")], span, "mid-run", {
      maxSegmentChars: 32_000,
      maxItemsPerRequest: 40,
    });
    const state = req?.request.state ?? {};
    expect(Object.keys(state)).toEqual(["situation", "user_question", "agent_progress", "exchanges"]);
    expect(state.agent_progress).toEqual({ latest_note: "latest note", earlier_notes: "first note" });
    expect(req?.request.questions.exchange_1?.instructions).not.toContain("earlier_conversation");
  });

  it("clips prompts, replies and tool call lists", () => {
    const span = collectRun([user("q"), assistant("a")], 0);
    if (!span) throw new Error("no run");
    const ex = { ...sample("p", 50), prompt: "u".repeat(5000), lastAssistant: "v".repeat(5000) };
    const [req] = buildExchangeRequests([ex], span, "run-end", { maxSegmentChars: 32_000, maxItemsPerRequest: 40 });
    const items = req?.request.state.exchanges ?? {};
    const item = (items as Record<string, { user: string; assistant: string; tool_calls: string[] }>).exchange_1;
    expect(item?.user.length).toBe(600);
    expect(item?.assistant.length).toBe(800);
    expect(item?.tool_calls).toHaveLength(20);
    expect(item?.tool_calls[19]).toBe("[… and 31 more calls]");
  });

  it("batches by item count and by characters, numbering from 1 in each request", () => {
    const span = collectRun([user("q"), assistant("a")], 0);
    if (!span) throw new Error("no run");
    const xs = Array.from({ length: 7 }, (_, i) => sample(`${i}`.padEnd(500, "-")));
    const byCount = buildExchangeRequests(xs, span, "run-end", { maxSegmentChars: 1_000_000, maxItemsPerRequest: 3 });
    expect(byCount.map((r) => r.promptIds.length)).toEqual([3, 3, 1]);
    expect(byCount.flatMap((r) => r.promptIds)).toEqual(xs.map((x) => x.promptId));
    expect(Object.keys(byCount[1]?.request.questions ?? {})).toEqual(["exchange_1", "exchange_2", "exchange_3"]);
    // Each item is about 500 + 4 + 505 + 13 chars: two fit in 2,100.
    const byChars = buildExchangeRequests(xs, span, "run-end", { maxSegmentChars: 2_100, maxItemsPerRequest: 40 });
    expect(byChars.map((r) => r.promptIds.length)).toEqual([2, 2, 2, 1]);
    // An item larger than the limit still gets a request of its own.
    const alone = buildExchangeRequests(xs.slice(0, 2), span, "run-end", {
      maxSegmentChars: 10,
      maxItemsPerRequest: 40,
    });
    expect(alone.map((r) => r.promptIds.length)).toEqual([1, 1]);
    expect(buildExchangeRequests([], span, "run-end", { maxSegmentChars: 10, maxItemsPerRequest: 40 })).toEqual([]);
  });
});

describe("interpretExchanges", () => {
  const ids = ["a", "b", "c", "d", "e", "f"];
  const bool = (probability: unknown) => ({ type: "bool", probability });

  it("omits only below the threshold and keeps anything doubtful", () => {
    const outcome: ClassifierOutcome = {
      status: "stop",
      answers: {
        exchange_1: bool(0.07),
        exchange_2: bool(0.2),
        exchange_3: bool(0.9),
        exchange_4: bool(1.5),
        exchange_5: { type: "choice", choice: "x", probabilities: {} },
      },
    };
    expect(interpretExchanges(outcome, ids, 0.2)).toEqual([
      { promptId: "a", relevant: false, p: 0.07, trace: "p.07" },
      { promptId: "b", relevant: true, p: 0.2, trace: "p.20" },
      { promptId: "c", relevant: true, p: 0.9, trace: "p.90" },
      { promptId: "d", relevant: undefined, trace: "no-answer" },
      { promptId: "e", relevant: undefined, trace: "no-answer" },
      { promptId: "f", relevant: undefined, trace: "no-answer" },
    ]);
    expect(
      interpretExchanges({ status: "stop", answers: { exchange_1: bool(Number.NaN) } }, ["a"], 0.2)[0]?.relevant,
    ).toBe(undefined);
  });

  it("keeps everything on a timeout or an error", () => {
    expect(interpretExchanges({ status: "timeout" }, ["a", "b"], 0.2)).toEqual([
      { promptId: "a", relevant: undefined, trace: "timeout" },
      { promptId: "b", relevant: undefined, trace: "timeout" },
    ]);
    const answers = { exchange_1: bool(0.01) };
    expect(interpretExchanges({ status: "error", error: "boom", answers }, ["a"], 0.2)).toEqual([
      { promptId: "a", relevant: undefined, trace: "error" },
    ]);
  });
});

describe("exchangeResult", () => {
  const ex: Exchange = (() => {
    const base = {
      promptId: "p1",
      index: 0,
      entryIds: ["a1", "r1"],
      prompt: `Refactor ${"the module ".repeat(20)}`,
      lastAssistant: "done",
      toolLabels: [],
      chars: 9000,
      messages: 3,
    };
    return { ...base, stub: exchangeStub(base) };
  })();

  it("records an omission with the omitted ids", () => {
    const r = exchangeResult(ex, { promptId: "p1", relevant: false, p: 0.05, trace: "p.05" });
    expect(r).toEqual({
      kind: "exchange",
      entryId: "p1",
      label: `${ex.prompt.slice(0, 59).trim()}…`,
      outcome: "removed",
      reason: "unrelated",
      beforeChars: 9000,
      afterChars: ex.stub.length,
      jev: ["p.05"],
      omitted: ["a1", "r1"],
    });
    expect(r.label.length).toBeLessThanOrEqual(60);
  });

  it("records kept exchanges with why", () => {
    const kept = (relevant: boolean | undefined, trace: string, deferred?: boolean) =>
      exchangeResult(ex, { promptId: "p1", relevant, trace }, deferred);
    expect(kept(true, "p.80")).toMatchObject({ outcome: "kept", reason: "relevant", afterChars: 9000, jev: ["p.80"] });
    expect(kept(true, "p.80", true).reason).toBe("relevant");
    expect(kept(false, "p.05", true)).toMatchObject({ outcome: "kept", reason: "deferred", afterChars: 9000 });
    expect(kept(false, "p.05", true).omitted).toBeUndefined();
    for (const why of ["error", "timeout", "no-answer"]) expect(kept(undefined, why).reason).toBe(why);
  });
});

/**
 * The never-orphan invariant over a set of drafts: a tool call and its result are omitted together or not
 * at all, and no assistant message gets replacement content.
 */
function orphanViolations(entries: SnapEntry[], drafts: ContextEditDraft[]): string[] {
  const problems: string[] = [];
  const omitted = new Set(drafts.filter((d) => d.replacement === null).map((d) => d.targetId));
  const byId = new Map(entries.map((e) => [e.id, e]));
  const callAt = new Map<string, SnapEntry>();
  for (const d of drafts) {
    if (d.replacement !== null && byId.get(d.targetId)?.role === "assistant") problems.push(`replaced ${d.targetId}`);
  }
  for (const e of entries) {
    for (const c of e.toolCalls ?? []) callAt.set(c.id, e);
    if (e.role !== "toolResult") continue;
    const owner = e.toolCallId === undefined ? undefined : callAt.get(e.toolCallId);
    const callGone = owner !== undefined && omitted.has(owner.id);
    if (callGone !== omitted.has(e.id)) problems.push(`${e.id} answers ${e.toolCallId}: call/result split`);
  }
  return problems;
}

describe("exchangeDrafts", () => {
  it("puts the stub on the prompt and omits every other entry", () => {
    const a = exchange("old");
    const { entries, start } = withRun(a);
    const [ex] = collectExchanges(entries, start, cfg(0), new Set());
    if (!ex) throw new Error("not collected");
    expect(exchangeDrafts(ex)).toEqual([
      { type: "context_edit", targetId: a[0]?.id, replacement: { content: [{ type: "text", text: ex.stub }] } },
      ...a.slice(1).map((e) => ({ type: "context_edit", targetId: e.id, replacement: null })),
    ]);
  });

  it("never leaves half of a tool call: hand-made shapes", () => {
    const p1 = call();
    const p2 = call();
    const p3 = call();
    const parallel = [
      user("parallel"),
      assistant("looking", [p1, p2, p3]),
      result(p1, big("1")),
      notice("subagent note"),
      result(p2, big("2")),
      result(p3, "3"),
      assistant("done"),
    ];
    const s1 = call();
    const s2 = call();
    const steered = [user("steered"), assistant("", [s1]), result(s1, big("s")), user("more"), assistant("", [s2])];
    steered.push(result(s2, "ok"), assistant("done"));
    const c = call();
    const split = [user("split"), assistant(big("x"), [c]), assistant("end"), branchSummary("b")];
    split.push(result(c, "late"), assistant("after"));
    const { entries, start } = withRun([...parallel, ...steered, ...split, ...exchange("recent")]);
    const xs = collectExchanges(entries, start, cfg(0), new Set());
    expect(xs.map((x) => x.prompt)).toEqual(["parallel", "steered", "recent"]);
    expect(orphanViolations(entries, xs.flatMap(exchangeDrafts))).toEqual([]);
    // The checker itself catches a lone result.
    const lone: ContextEditDraft = { type: "context_edit", targetId: parallel[2]?.id ?? "", replacement: null };
    expect(orphanViolations(entries, [lone])).toHaveLength(1);
  });

  it("never leaves half of a tool call: generated sessions", () => {
    type Step =
      | { kind: "turn"; calls: number; notice: boolean; pending: boolean }
      | { kind: "steer" | "summary" | "bash" };
    const step: fc.Arbitrary<Step> = fc.oneof(
      {
        weight: 6,
        arbitrary: fc.record({
          kind: fc.constant("turn" as const),
          calls: fc.nat(3),
          notice: fc.boolean(),
          pending: fc.boolean(),
        }),
      },
      {
        weight: 1,
        arbitrary: fc.record({ kind: fc.constantFrom("steer" as const, "summary" as const, "bash" as const) }),
      },
    );
    const session = fc.array(fc.array(step, { maxLength: 6 }), { minLength: 1, maxLength: 8 });
    let collected = 0;
    fc.assert(
      fc.property(session, fc.nat(3), (exchanges, keep) => {
        const entries: SnapEntry[] = [];
        // Results held back by a "pending" turn land in a later step, possibly past a summary.
        let pending: SnapToolCall[] = [];
        for (const [n, steps] of exchanges.entries()) {
          entries.push(user(`prompt ${n}`));
          for (const s of steps) {
            if (s.kind !== "turn") {
              if (s.kind === "summary") entries.push(branchSummary("s"));
              else entries.push(s.kind === "bash" ? bashExecution("ls") : user("steer"));
            } else {
              const calls = Array.from({ length: s.calls }, () => call());
              entries.push(assistant("", calls));
              for (const p of pending) entries.push(result(p, big("late", 800)));
              pending = [];
              for (const [i, c] of calls.entries()) {
                if (s.pending && i === 0) pending.push(c);
                else entries.push(result(c, big("out", 800)));
                if (s.notice) entries.push(notice("note"));
              }
            }
          }
          entries.push(assistant(big("answer", 1500)));
        }
        entries.push(user("current"));
        for (const p of pending) entries.push(result(p, "after the prompt"));
        entries.push(assistant("now"));
        const start = findRunStart(entries);
        const xs = collectExchanges(entries, start, cfg(keep), new Set());
        const drafts = xs.flatMap(exchangeDrafts);
        collected += xs.length;
        expect(orphanViolations(entries, drafts)).toEqual([]);
        for (const x of xs) {
          expect(x.index).toBeLessThan(start);
          expect(x.stub.length).toBeLessThan(x.chars);
          expect(x.chars).toBeGreaterThanOrEqual(EXCHANGE_MIN_CHARS);
        }
      }),
      { numRuns: 300 },
    );
    // The property is not vacuous: many generated exchanges were eligible.
    expect(collected).toBeGreaterThan(100);
  });
});

describe("exchangeKeepsLatestViews", () => {
  const views = { pruneExchanges: true, keepRecentExchanges: 0, exchangeKeepsLatestViews: true };

  /** An exchange that reads `path`, runs a command and edits nothing. */
  function reading(path: string) {
    const read = call("read", { path });
    const run = call("bash", { command: "npm test" });
    const entries = [
      user(`look at ${path}`),
      assistant("", [read]),
      result(read, big(`content of ${path}`)),
      assistant("", [run]),
      result(run, big("test log")),
      assistant(`done with ${path}`),
    ];
    return { entries, read, run };
  }

  it("is off by default: the exchange is omitted whole", () => {
    expect(DEFAULT_CONFIG.exchangeKeepsLatestViews).toBe(false);
    const ex = reading("src/api.ts");
    const { entries, start } = withRun(ex.entries);
    const [x] = collectExchanges(entries, start, { ...views, exchangeKeepsLatestViews: false }, new Set());
    expect(x?.keptIds).toBeUndefined();
    expect(x?.entryIds).toHaveLength(5);
  });

  it("leaves the latest view of a file in place with its call, and names it on the stub", () => {
    const ex = reading("src/api.ts");
    const { entries, start } = withRun(ex.entries);
    const [x] = collectExchanges(entries, start, views, new Set());
    const [, readCall, readResult, runCall, runResult, answer] = ex.entries as SnapEntry[];
    expect(x?.keptIds).toEqual([readCall?.id, readResult?.id]);
    expect(x?.entryIds).toEqual([runCall?.id, runResult?.id, answer?.id]);
    expect(x?.keptViews).toEqual(["src/api.ts"]);
    expect(x?.stub).toContain("latest view of src/api.ts");
    // What is kept is neither dropped nor counted as saved.
    const dropped = exchangeDrafts(x as Exchange)
      .filter((d) => d.replacement === null)
      .map((d) => d.targetId);
    expect(dropped).not.toContain(readCall?.id);
    expect(dropped).not.toContain(readResult?.id);
    const whole = collectExchanges(entries, start, { ...views, exchangeKeepsLatestViews: false }, new Set())[0];
    expect(x?.chars).toBeLessThan((whole as Exchange).chars - 3000);
  });

  it("omits a view that a later call made out of date", () => {
    const ex = reading("src/api.ts");
    const again = call("read", { path: "./src/api.ts" });
    const later = [user("read it again"), assistant("", [again]), result(again, big("new content")), assistant("ok")];
    const { entries, start } = withRun([...ex.entries, ...later]);
    const x = collectExchanges(entries, start, views, new Set()).find((e) => e.promptId === ex.entries[0]?.id);
    expect(x?.keptIds).toBeUndefined();
    expect(x?.entryIds).toHaveLength(5);
  });

  it("keeps every result of a kept message's calls, so no call loses its result", () => {
    const read = call("read", { path: "notes/plan.md" });
    const run = call("bash", { command: "ls" });
    const exEntries = [
      user("plan it"),
      assistant("", [read, run]),
      result(read, big("plan")),
      result(run, big("listing")),
      assistant(big("planned")),
    ];
    const { entries, start } = withRun(exEntries);
    const [x] = collectExchanges(entries, start, views, new Set());
    expect(x?.keptIds).toEqual([exEntries[1]?.id, exEntries[2]?.id, exEntries[3]?.id]);
    expect(x?.entryIds).toEqual([exEntries[4]?.id]);
  });

  it("is not judged when what would go is too small once its views stay", () => {
    const read = call("read", { path: "src/big.ts" });
    const exEntries = [user("show big.ts"), assistant("", [read]), result(read, big("source", 6000)), assistant("ok")];
    const { entries, start } = withRun(exEntries);
    expect(collectExchanges(entries, start, views, new Set())).toEqual([]);
    expect(collectExchanges(entries, start, { ...views, exchangeKeepsLatestViews: false }, new Set())).toHaveLength(1);
  });
});
