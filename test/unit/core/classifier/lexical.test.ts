// The embedded local/lexical classifier: answers every question with valid probabilities, prefers the
// chunks that share identifiers and paths with the answer, and plugs into the real request builders.
import { describe, expect, it } from "vitest";
import { classifyLexical, isLocalModelRef, LOCAL_MODEL_REF } from "../../../../src/core/classifier/lexical.ts";
import { chunkOutput } from "../../../../src/core/distill/chunk.ts";
import { buildRunEndRequest } from "../../../../src/core/distill/request.ts";
import { collectRun } from "../../../../src/core/distill/run.ts";
import { buildSmallRequests, collectSmall } from "../../../../src/core/items/small.ts";
import type { Answer, ClassifierRequest, SnapEntry } from "../../../../src/core/shared/types.ts";
import { classifierFor, findClassifier, localClassify } from "../../../../src/main/pass/classifier.ts";
import { assistantEntry, toolCall, toolResultEntry, userEntry } from "../../../kit/snap.ts";

const grep = `${Array.from({ length: 240 }, (_, i) => {
  const f = Math.floor(i / 8);
  return f === 17
    ? `src/billing/totals.ts:${i}:export function computeTotals(items: Item[]) { return sumPrices(items, ${i}); }`
    : `src/module${f}/handler${f}.ts:${i}:const value${i} = readConfig("section${f}").entry${i};`;
}).join("\n")}\n`;

const entries: SnapEntry[] = [
  userEntry("u1", "Where is the total of an order computed?"),
  assistantEntry("a1", "", [toolCall("c1", "bash", { command: "rg -n total src" })]),
  toolResultEntry("r1", "c1", "bash", grep),
  assistantEntry(
    "a2",
    "Order totals are computed by `computeTotals` in `src/billing/totals.ts`, which sums the item prices.",
    undefined,
    { stopReason: "stop" },
  ),
];

function runEndRequest(): ClassifierRequest {
  const span = collectRun(entries, 3);
  if (!span) throw new Error("no run");
  const chunks = chunkOutput(grep).slice(0, 40);
  return buildRunEndRequest({
    span,
    candidate: { entryId: "r1", tool: "bash", label: "bash `rg -n total src`", args: {}, isError: false, text: grep },
    chunks,
    segmentIndex: 0,
    segmentCount: 1,
    totalLines: 240,
  });
}

function checkValid(request: ClassifierRequest, answers: Record<string, Answer>): void {
  expect(Object.keys(answers).sort()).toEqual(Object.keys(request.questions).sort());
  for (const [id, q] of Object.entries(request.questions)) {
    const a = answers[id] as Answer;
    expect(a.type).toBe(q.type);
    if (a.type === "bool") {
      const p = (a as { probability: number }).probability;
      expect(Number.isFinite(p) && p >= 0 && p <= 1).toBe(true);
    } else {
      const c = a as { choice: string; probabilities: Record<string, number>; confidence: number };
      expect(Object.keys(c.probabilities).sort()).toEqual(Object.keys(q.criteria).sort());
      const values = Object.values(c.probabilities);
      for (const p of values) expect(p >= 0 && p <= 1).toBe(true);
      expect(values.reduce((x, y) => x + y, 0)).toBeCloseTo(1, 2);
      expect(Object.keys(q.criteria)).toContain(c.choice);
      expect(c.confidence).toBe(Math.max(...values));
    }
  }
}

describe("classifyLexical", () => {
  it("answers every asked id with valid probabilities", () => {
    const request = runEndRequest();
    const answers = classifyLexical(request);
    checkValid(request, answers);
  });

  it("prefers the chunk that shares identifiers and paths with the answer", () => {
    const request = runEndRequest();
    const answers = classifyLexical(request);
    const chunks = request.state.chunks as Record<string, string>;
    const target = Object.keys(chunks).find((id) => (chunks[id] as string).includes("computeTotals")) as string;
    const p = (id: string) => (answers[id] as { probability: number }).probability;
    expect(p(target)).toBeGreaterThanOrEqual(0.6);
    for (const id of Object.keys(chunks)) if (id !== target) expect(p(id)).toBeLessThan(0.6);
    expect(p(target)).toBeGreaterThan(
      Math.max(
        ...Object.keys(chunks)
          .filter((id) => id !== target)
          .map(p),
      ),
    );
    const focus = answers.focus as { choice: string };
    expect(focus.choice).toBe(target);
    expect(p("keep_whole")).toBeLessThan(0.7);
  });

  it("is deterministic", () => {
    expect(JSON.stringify(classifyLexical(runEndRequest()))).toBe(JSON.stringify(classifyLexical(runEndRequest())));
  });

  it("judges small outputs by the files and identifiers the work names", () => {
    const small = (id: string, command: string, text: string): SnapEntry[] => [
      {
        id: `a-${id}`,
        type: "message",
        role: "assistant",
        visible: true,
        text: "",
        images: 0,
        toolCalls: [{ id: `c-${id}`, name: "bash", args: { command } }],
      },
      {
        id,
        type: "message",
        role: "toolResult",
        visible: true,
        text,
        images: 0,
        toolCallId: `c-${id}`,
        toolName: "bash",
      },
    ];
    const run: SnapEntry[] = [
      entries[0] as SnapEntry,
      ...small(
        "s1",
        "cat src/billing/totals.ts",
        `export function computeTotals(items) {\n${"  // sum\n".repeat(60)}}`,
      ),
      ...small(
        "s2",
        "ls -la node_modules/.bin",
        `${"lrwxrwxrwx 1 root root 20 Jan 1 00:00 tool -> ../x/cli.js\n".repeat(12)}`,
      ),
      entries[3] as SnapEntry,
    ];
    const span = collectRun(run, 3);
    if (!span) throw new Error("no run");
    const items = collectSmall(
      run,
      span,
      { smallResultMinChars: 400, minResultChars: 4000, excludeTools: [], distillErrors: true },
      new Map(),
    );
    const [request] = buildSmallRequests(items, span, "run-end", { maxSegmentChars: 32_000, maxItemsPerRequest: 40 });
    if (!request) throw new Error("no request");
    const answers = classifyLexical(request.request);
    checkValid(request.request, answers);
    const p = (id: string) => (answers[id] as { probability: number }).probability;
    expect(p("item_1")).toBeGreaterThanOrEqual(0.45);
    expect(p("item_2")).toBeLessThan(0.45);
  });

  it("keeps old exchanges of a recurring theme or the current work, and lets an isolated one go", () => {
    const bool = { type: "bool" as const, instructions: "?", criteria: { true: "yes", false: "no" } };
    const request: ClassifierRequest = {
      state: {
        user_question: "Speed up `renderFrame` in src/tui/frame.ts",
        final_answer: "renderFrame now caches glyph widths.",
        exchanges: {
          exchange_1: { user: "Why is `renderFrame` slow?", assistant: "It measures every glyph.", size: "9 messages" },
          exchange_2: { user: "Bump lodash", assistant: "Updated package-lock.json.", size: "5 messages" },
          exchange_3: {
            user: "Add `parseTheme` to src/theme/load.ts",
            assistant: "Added parseTheme.",
            size: "7 messages",
          },
          exchange_4: {
            user: "Test `parseTheme` in src/theme/load.ts",
            assistant: "parseTheme tests pass.",
            size: "6 messages",
          },
        },
      },
      questions: { exchange_1: bool, exchange_2: bool, exchange_3: bool, exchange_4: bool },
    };
    const answers = classifyLexical(request);
    checkValid(request, answers);
    const p = (id: string) => (answers[id] as { probability: number }).probability;
    expect(p("exchange_1")).toBeGreaterThan(0.5);
    expect(p("exchange_2")).toBeLessThan(0.2);
    expect(p("exchange_3")).toBeGreaterThanOrEqual(0.2);
    expect(p("exchange_4")).toBeGreaterThanOrEqual(0.2);
  });

  it("answers questions it has no evidence for with 0.5, and unknown choices with a spread", () => {
    const request: ClassifierRequest = {
      state: { note: "nothing" },
      questions: {
        mystery: { type: "bool", instructions: "?", criteria: { true: "yes", false: "no" } },
        pick: { type: "choice", instructions: "?", criteria: { a: "A", b: "B" } },
      },
    };
    const answers = classifyLexical(request);
    checkValid(request, answers);
    expect((answers.mystery as { probability: number }).probability).toBe(0.5);
  });
});

describe("local/lexical in the extension", () => {
  it("is found without Pi's registry and needs no key", async () => {
    expect(isLocalModelRef(LOCAL_MODEL_REF)).toBe(true);
    expect(isLocalModelRef("openrouter/~typesafe/jev-latest")).toBe(false);
    const registry = new Proxy(
      {},
      {
        get() {
          throw new Error("the registry must not be used for local/lexical");
        },
      },
    ) as Parameters<typeof findClassifier>[0];
    const found = findClassifier(registry, "local/lexical");
    expect(found).toEqual({ ok: true, local: true, ref: "local/lexical" });
    if (!found.ok) throw new Error("not found");
    const classify = classifierFor(registry, found);
    const request = runEndRequest();
    const outcome = await classify(request, { signal: new AbortController().signal, timeoutMs: 1000 });
    expect(outcome.status).toBe("stop");
    expect(outcome.costUsd).toBe(0);
    checkValid(request, outcome.answers ?? {});
  });

  it("scores one request per event-loop turn", async () => {
    const classify = localClassify();
    const order: string[] = [];
    const signal = new AbortController().signal;
    const all = [1, 2, 3].map((n) =>
      classify(runEndRequest(), { signal, timeoutMs: 1000 }).then(() => order.push(`done ${n}`)),
    );
    setImmediate(() => order.push("tick"));
    await Promise.all(all);
    expect(order.indexOf("tick")).toBeLessThan(order.indexOf("done 2"));
  });
});
