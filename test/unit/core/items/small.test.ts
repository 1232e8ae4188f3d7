import { describe, expect, it } from "vitest";
import { type PassPlan, planRunEnd } from "../../../../src/core/distill/plan.ts";
import { collectRun } from "../../../../src/core/distill/run.ts";
import {
  buildSmallRequests,
  collectSmall,
  ITEM_TEXT_MAX,
  interpretSmall,
  type SmallItem,
  smallDraft,
  smallResult,
  smallStub,
} from "../../../../src/core/items/small.ts";
import { supersededIn } from "../../../../src/core/items/superseded.ts";
import { DEFAULT_CONFIG, normalizeConfig } from "../../../../src/core/shared/config.ts";
import {
  type BoolQuestion,
  GUARD_MARKER,
  type History,
  type JsonObject,
  type RunSpan,
  type SnapEntry,
  type SnapToolCall,
} from "../../../../src/core/shared/types.ts";
import { assistantEntry, callResultEntry, toolCall, toolResultEntry, userEntry } from "../../../kit/snap.ts";

let seq = 0;
const nextId = () => `e${++seq}`;

const user = (text: string): SnapEntry => userEntry(nextId(), text);
const assistant = (text: string, toolCalls: SnapToolCall[] = []): SnapEntry =>
  assistantEntry(nextId(), text, toolCalls);
const call = (callId: string, name: string, args: Record<string, unknown>): SnapToolCall =>
  toolCall(callId, name, args);
const result = (c: SnapToolCall, text: string, extra: Partial<SnapEntry> = {}): SnapEntry =>
  callResultEntry(nextId(), c, text, extra);

const config = { smallResultMinChars: 400, minResultChars: 4000, excludeTools: ["edit", "write"], distillErrors: true };

function spanOf(entries: SnapEntry[]): RunSpan {
  const span = collectRun(entries, 3);
  if (!span) throw new Error("no span");
  return span;
}

function span(over: Partial<RunSpan> = {}, history: History = { exchanges: [] }): RunSpan {
  return {
    startIndex: 0,
    promptId: "p1",
    question: "Fix the failing test",
    answer: "Fixed it in src/a.ts.",
    notes: "",
    history,
    calls: new Map(),
    ...over,
  };
}

const item = (n: number, over: Partial<SmallItem> = {}): SmallItem => ({
  entryId: `r${n}`,
  tool: "bash",
  label: `bash \`cmd ${n}\``,
  chars: 1200,
  isError: false,
  text: "x".repeat(1200),
  ...over,
});

describe("config", () => {
  it("has defaults and validates the new keys", () => {
    expect(DEFAULT_CONFIG.smallResultMinChars).toBe(400);
    expect(DEFAULT_CONFIG.smallKeepThreshold).toBe(0.35);
    expect(normalizeConfig({ smallResultMinChars: 0, smallKeepThreshold: 0.3 }).config).toMatchObject({
      smallResultMinChars: 0,
      smallKeepThreshold: 0.3,
    });
    const bad = normalizeConfig({ smallResultMinChars: 2_000_000, smallKeepThreshold: 1.2 });
    expect(bad.config.smallResultMinChars).toBe(400);
    expect(bad.config.smallKeepThreshold).toBe(0.35);
    expect(bad.warnings).toHaveLength(2);
  });
});

describe("collectSmall", () => {
  it("takes results from smallResultMinChars up to (not including) minResultChars", () => {
    const calls = [399, 400, 3999, 4000].map((n) => call(`c${n}`, "bash", { command: `cmd ${n}` }));
    const entries = [
      user("q"),
      assistant("", calls),
      ...calls.map((c, i) => result(c, "y".repeat([399, 400, 3999, 4000][i]!))),
    ];
    entries.push(assistant("answer"));
    const got = collectSmall(entries, spanOf(entries), config, new Map());
    expect(got.map((x) => x.chars)).toEqual([400, 3999]);
    expect(got[0]).toEqual({
      entryId: entries[3]!.id,
      tool: "bash",
      label: "bash `cmd 400`",
      chars: 400,
      isError: false,
      text: "y".repeat(400),
    });
  });

  it("returns nothing when smallResultMinChars is 0", () => {
    const c = call("c1", "bash", { command: "ls" });
    const entries = [user("q"), assistant("", [c]), result(c, "z".repeat(1000)), assistant("a")];
    expect(collectSmall(entries, spanOf(entries), { ...config, smallResultMinChars: 0 }, new Map())).toEqual([]);
  });

  it("applies the candidate rules of large outputs", () => {
    const text = "w".repeat(800);
    const mk = (name: string, extra: Partial<SnapEntry> = {}, body = text) => {
      const c = call(`c${nextId()}`, name, { command: name });
      return { c, r: result(c, body, extra) };
    };
    const items = [
      mk("bash"),
      mk("bash", { images: 1 }),
      mk("edit"),
      mk("bash", {}, `${GUARD_MARKER} Omitted ${text}`),
      mk("bash", { edited: true, rawText: `${text}raw` }),
      mk("bash", { visible: false }),
      mk("bash", { isError: true }),
    ];
    const old = call("old", "bash", { command: "old" });
    const entries = [user("before"), assistant("", [old]), result(old, text), assistant("ok"), user("q")];
    entries.push(
      assistant(
        "",
        items.map((x) => x.c),
      ),
      ...items.map((x) => x.r),
      assistant("a"),
    );
    const s = spanOf(entries);
    const got = collectSmall(entries, s, config, new Map());
    // The unedited output that starts with the marker is the tool's own text: a candidate like any other.
    expect(got.map((x) => x.entryId)).toEqual([items[0]!.r.id, items[3]!.r.id, items[6]!.r.id]);
    expect(got[2]?.isError).toBe(true);
    expect(collectSmall(entries, s, { ...config, distillErrors: false }, new Map()).map((x) => x.entryId)).toEqual([
      items[0]!.r.id,
      items[3]!.r.id,
    ]);
    expect(collectSmall(entries, s, { ...config, excludeTools: ["bash"] }, new Map()).map((x) => x.tool)).toEqual([
      "edit",
    ]);
  });

  it("skips outputs the stub would not shorten", () => {
    const longLabel = call("c1", "bash", { command: "a".repeat(200) });
    const short = call("c2", "ls", { path: "." });
    const entries = [
      user("q"),
      assistant("", [longLabel, short]),
      result(longLabel, "b".repeat(150)),
      result(short, "c".repeat(150)),
    ];
    entries.push(assistant("a"));
    const got = collectSmall(entries, spanOf(entries), { ...config, smallResultMinChars: 100 }, new Map());
    expect(got.map((x) => x.tool)).toEqual(["ls"]);
    for (const x of got) expect(smallStub(x).length).toBeLessThan(x.chars);
  });

  it("leaves what it could not show whole to chunking, and carries the superseded note", () => {
    const read = call("c1", "read", { path: "src/a.ts" });
    const edit = call("c2", "edit", { path: "src/a.ts", oldText: "a", newText: "b" });
    const collect = (body: string) => {
      const entries = [user("q"), assistant("", [read]), result(read, body), assistant("", [edit]), result(edit, "ok")];
      entries.push(assistant("a"));
      const s = spanOf(entries);
      return collectSmall(entries, s, { ...config, minResultChars: 10_000 }, supersededIn(entries, s));
    };
    expect(collect("h".repeat(ITEM_TEXT_MAX + 1))).toEqual([]);
    const [got] = collect("h".repeat(ITEM_TEXT_MAX));
    expect(got?.chars).toBe(ITEM_TEXT_MAX);
    expect(got?.text.length).toBe(ITEM_TEXT_MAX);
    expect(got?.superseded).toBe("this file was changed after this read (edit src/a.ts, 1 turn later)");
  });
});

describe("smallStub, smallDraft, smallResult", () => {
  const it1 = item(1, { entryId: "abc123", chars: 1234 });

  it("builds the one-line stub", () => {
    expect(smallStub(it1)).toBe(
      '[context-guard] Omitted the output of bash `cmd 1` (1.2k chars): judged no longer needed. Full output: recall({"entryId":"abc123"}).',
    );
  });

  it("drafts an edit with the stub", () => {
    expect(smallDraft(it1)).toEqual({
      type: "context_edit",
      targetId: "abc123",
      replacement: { content: [{ type: "text", text: smallStub(it1) }] },
    });
  });

  it("records removed and kept items", () => {
    const base = { kind: "small", entryId: "abc123", tool: "bash", label: "bash `cmd 1`", beforeChars: 1234 };
    expect(smallResult(it1, { keep: false, trace: "p.06" })).toEqual({
      ...base,
      outcome: "removed",
      reason: "not-needed",
      afterChars: smallStub(it1).length,
      jev: ["p.06"],
    });
    expect(smallResult(it1, { keep: true, trace: "p.80" })).toEqual({
      ...base,
      outcome: "kept",
      reason: "needed",
      afterChars: 1234,
      jev: ["p.80"],
    });
    for (const trace of ["error", "timeout", "no-answer"]) {
      expect(smallResult(it1, { keep: undefined, trace })).toMatchObject({
        outcome: "kept",
        reason: trace,
        jev: [trace],
      });
    }
  });
});

describe("buildSmallRequests", () => {
  const limits = { maxSegmentChars: 32_000, maxItemsPerRequest: 40 };

  it("returns nothing for no items", () => {
    expect(buildSmallRequests([], span(), "run-end", limits)).toEqual([]);
  });

  it("caps a request at 40 items", () => {
    const items = Array.from({ length: 95 }, (_, i) => item(i, { text: "x".repeat(10) }));
    const reqs = buildSmallRequests(items, span(), "run-end", limits);
    expect(reqs.map((r) => r.entryIds.length)).toEqual([40, 40, 15]);
    expect(reqs.flatMap((r) => r.entryIds)).toEqual(items.map((x) => x.entryId));
    const last = reqs[2]!;
    expect(Object.keys(last.request.questions)).toEqual(Array.from({ length: 15 }, (_, i) => `item_${i + 1}`));
    expect(Object.keys(last.request.state.items as JsonObject)).toHaveLength(15);
  });

  it("caps a request's output characters, and sends an oversize item alone", () => {
    const items = [
      item(1, { text: "a".repeat(600) }),
      item(2, { text: "b".repeat(500) }),
      item(3, { text: "c".repeat(3000) }),
      item(4, { text: "d".repeat(100) }),
    ];
    const reqs = buildSmallRequests(items, span(), "mid-run", { maxSegmentChars: 1100, maxItemsPerRequest: 40 });
    expect(reqs.map((r) => r.entryIds)).toEqual([["r1", "r2"], ["r3"], ["r4"]]);
  });

  it("builds the run-end state and questions", () => {
    const items = [
      item(1, { tool: "read", label: "read src/a.ts", text: "file", superseded: "the same file was read again later" }),
      item(2, { isError: true, text: "boom" }),
    ];
    const [req] = buildSmallRequests(items, span({ notes: "Ran the tests first." }), "run-end", limits);
    const state = req!.request.state;
    expect(Object.keys(state)).toEqual([
      "situation",
      "user_question",
      "final_answer",
      "agent_notes_during_the_run",
      "items",
    ]);
    expect(state.user_question).toBe("Fix the failing test");
    expect(state.final_answer).toBe("Fixed it in src/a.ts.");
    expect(state.agent_notes_during_the_run).toBe("Ran the tests first.");
    expect(state.items).toEqual({
      item_1: {
        tool: "read",
        label: "read src/a.ts",
        superseded: "the same file was read again later",
        output: "file",
      },
      item_2: { tool: "bash", label: "bash `cmd 2`", status: "failed", output: "boom" },
    });
    const q = req!.request.questions.item_1 as BoolQuestion;
    expect(q.type).toBe("bool");
    expect(q.instructions).toContain("final_answer");
    expect(q.instructions).toContain("superseded");
    expect(q.instructions).not.toContain("earlier_conversation");
    expect(req!.entryIds).toEqual(["r1", "r2"]);
  });

  it("builds the mid-run state with agent_progress instead of the answer", () => {
    const notes = `${"n".repeat(3000)}END`;
    const latest = `${"l".repeat(2500)}`;
    const [req] = buildSmallRequests([item(1)], span({ notes, answer: latest }), "mid-run", limits);
    const state = req!.request.state;
    expect(Object.keys(state)).toEqual(["situation", "user_question", "agent_progress", "items"]);
    const progress = state.agent_progress as JsonObject;
    expect((progress.latest_note as string).length).toBe(2000);
    const earlier = progress.earlier_notes as string;
    expect(earlier.length).toBe(2000);
    expect(earlier.startsWith("[…]")).toBe(true);
    expect(earlier.endsWith("END")).toBe(true);
    const q = req!.request.questions.item_1 as BoolQuestion;
    expect(q.instructions).toContain("user_question");
    expect(q.instructions).not.toContain("final_answer");
    expect(q.instructions).toContain("superseded");
  });

  it("leaves earlier_notes out mid-run when there are none", () => {
    const [req] = buildSmallRequests([item(1)], span({ answer: "Looking at the tests." }), "mid-run", limits);
    expect(req!.request.state.agent_progress).toEqual({ latest_note: "Looking at the tests." });
  });

  it("adds earlier_conversation when there is history", () => {
    const history: History = { summary: "Set up the API.", exchanges: [{ user: "add tests", assistant: "Added." }] };
    for (const phase of ["run-end", "mid-run"] as const) {
      const [req] = buildSmallRequests([item(1)], span({}, history), phase, limits);
      const state = req!.request.state;
      expect(Object.keys(state).slice(0, 3)).toEqual(["situation", "earlier_conversation", "user_question"]);
      expect(state.earlier_conversation).toEqual({
        summary: "Set up the API.",
        recent_exchanges: [{ user: "add tests", assistant: "Added." }],
      });
      expect(state.situation).toContain("earlier_conversation");
    }
  });
});

describe("interpretSmall", () => {
  const ids = ["a", "b", "c", "d"];
  const bool = (probability: unknown) => ({ type: "bool", probability });

  it("keeps at or above the threshold and traces the probability", () => {
    const got = interpretSmall(
      { status: "stop", answers: { item_1: bool(0.06), item_2: bool(0.45), item_3: bool(0.449), item_4: bool(1) } },
      ids,
      0.45,
    );
    expect(got).toEqual([
      { entryId: "a", keep: false, trace: "p.06" },
      { entryId: "b", keep: true, trace: "p.45" },
      { entryId: "c", keep: false, trace: "p.45" },
      { entryId: "d", keep: true, trace: "p1" },
    ]);
  });

  it("gives no verdict for missing or invalid answers", () => {
    const got = interpretSmall(
      {
        status: "stop",
        answers: {
          item_1: bool(1.5),
          item_2: bool(Number.NaN),
          item_3: { type: "choice", choice: "x", probabilities: {} },
        },
      },
      ids,
      0.45,
    );
    expect(got.map((v) => [v.keep, v.trace])).toEqual([
      [undefined, "no-answer"],
      [undefined, "no-answer"],
      [undefined, "no-answer"],
      [undefined, "no-answer"],
    ]);
  });

  it("gives no verdict on error or timeout", () => {
    expect(interpretSmall({ status: "error", error: "500" }, ["a"], 0.45)).toEqual([
      { entryId: "a", keep: undefined, trace: "error" },
    ]);
    expect(interpretSmall({ status: "timeout" }, ["a", "b"], 0.45).map((v) => v.trace)).toEqual(["timeout", "timeout"]);
  });
});

describe("an output longer than a small item shows", () => {
  // 51k characters: "small" under a large minResultChars, but far more than one item's excerpt.
  const text = Array.from({ length: 1200 }, (_, i) => `log line ${i + 1}: ${"x".repeat(30)}`).join("\n");
  const entries: SnapEntry[] = [
    userEntry("u", "what failed?"),
    assistantEntry("a", "", [toolCall("c1", "bash", { command: "make" })]),
    toolResultEntry("t1", "c1", "bash", text),
    assistantEntry("z", "nothing failed"),
  ];
  const config = { ...DEFAULT_CONFIG, minResultChars: 100_000, minRunChars: 0, exchangeBreakEven: false };

  it("is chunked like a large output, never judged whole from an excerpt", () => {
    expect(text.length).toBeGreaterThan(ITEM_TEXT_MAX);
    const plan = planRunEnd(entries, config) as Extract<PassPlan, { status: "run" }>;
    expect(plan.small).toEqual([]);
    expect(plan.candidates.map((c) => c.entryId)).toEqual(["t1"]);
    // Every chunk is in a request: the classifier sees all of the output.
    const sent = plan.requests.flatMap((r) => Object.values(r.state.chunks as Record<string, string>)).join("");
    expect(sent).toBe(text);
  });

  it("shows every small item whole", () => {
    const shorter = entries.map((e) => (e.id === "t1" ? { ...e, text: text.slice(0, ITEM_TEXT_MAX) } : e));
    const plan = planRunEnd(shorter, config) as Extract<PassPlan, { status: "run" }>;
    expect(plan.small.map((i) => [i.entryId, i.text.length, i.chars])).toEqual([["t1", ITEM_TEXT_MAX, ITEM_TEXT_MAX]]);
  });

  it("stays as it is with small items off, since nothing would judge all of it", () => {
    expect(planRunEnd(entries, { ...config, smallResultMinChars: 0 })).toEqual({
      status: "skip",
      reason: "nothing to judge",
    });
  });
});
