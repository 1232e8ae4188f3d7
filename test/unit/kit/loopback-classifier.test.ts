import type { ClassifierContext, ClassifierResult } from "@earendil-works/pi-ai";
import { classify } from "@earendil-works/pi-ai/api/typesafe-system-one";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loopbackModel } from "../../kit/hook.ts";
import { keywordPolicy, type LoopbackClassifier, startLoopbackClassifier } from "../../kit/loopback-classifier.ts";

const chunkContext: ClassifierContext = {
  state: {
    chunks: { chunk_0: "build ok\nall good", chunk_1: "ERROR: disk full", chunk_2: "more output" },
    items: { item_3: "fatal error in foo.ts" },
    item_4: "nothing to see",
  },
  questions: {
    keep_whole: { type: "bool", instructions: "Keep it all?", criteria: { true: "yes", false: "no" } },
    chunk_0: { type: "bool", instructions: "Needed?", criteria: { true: "needed", false: "not needed" } },
    chunk_1: { type: "bool", instructions: "Needed?", criteria: { true: "needed", false: "not needed" } },
    focus: {
      type: "choice",
      instructions: "Which chunk matters most?",
      criteria: { chunk_0: "first", chunk_1: "second", chunk_2: "third", none: "none of them" },
    },
    item_3: { type: "bool", instructions: "Needed?", criteria: { true: "needed", false: "not needed" } },
    item_4: { type: "bool", instructions: "Needed?", criteria: { true: "needed", false: "not needed" } },
    item_9: { type: "bool", instructions: "Needed?", criteria: { true: "needed", false: "not needed" } },
    kind: { type: "choice", instructions: "What is it?", criteria: { log: "log output", code: "source code" } },
  },
};

const boolQ = { type: "bool", instructions: "q", criteria: { true: "t", false: "f" } } as const;
const oneBool: ClassifierContext = { state: { text: "x" }, questions: { q: boolQ } };

function bool(result: ClassifierResult, id: string): number {
  const a = result.answers[id];
  if (a?.type !== "bool") throw new Error(`no bool answer for ${id}: ${JSON.stringify(a)}`);
  return a.probability;
}

describe("loopback classifier with pi-ai's System One client", () => {
  let lb: LoopbackClassifier;
  beforeAll(async () => {
    lb = await startLoopbackClassifier({ policy: keywordPolicy(/error/i, { keepWhole: 0.2 }) });
  });
  afterAll(async () => {
    await lb.close();
  });

  it("answers bool and choice questions with keywordPolicy", async () => {
    expect(lb.baseUrl).toBe(`http://127.0.0.1:${lb.port}/api/v1`);
    const r = await classify(loopbackModel(lb.baseUrl), chunkContext, { apiKey: "k", maxRetries: 0 });
    expect(r.stopReason, r.errorMessage).toBe("stop");
    expect(bool(r, "keep_whole")).toBe(0.2);
    expect(bool(r, "chunk_0")).toBe(0.05);
    expect(bool(r, "chunk_1")).toBe(0.9);
    expect(bool(r, "item_3")).toBe(0.9);
    expect(bool(r, "item_4")).toBe(0.05);
    expect(bool(r, "item_9")).toBe(0.5);
    expect(r.answers.focus).toMatchObject({ type: "choice", choice: "chunk_1", probabilities: { chunk_1: 0.7 } });
    expect(r.answers.kind).toMatchObject({ type: "choice", choice: "log" });
    expect(r.usage?.input).toBeGreaterThan(0);
    const body = lb.requests.at(-1);
    expect(body?.model).toBe("~typesafe/jev-latest");
    expect(body?.questions.chunk_0?.type).toBe("noul");
    expect(lb.requestHeaders.at(-1)?.authorization).toBe("Bearer k");
  });

  it("answers focus with none when nothing matches", async () => {
    const ctx: ClassifierContext = {
      state: { chunks: { chunk_0: "fine", chunk_1: "also fine" } },
      questions: {
        focus: { type: "choice", instructions: "?", criteria: { chunk_0: "a", chunk_1: "b", none: "none" } },
      },
    };
    const r = await classify(loopbackModel(lb.baseUrl), ctx, { apiKey: "k", maxRetries: 0 });
    expect(r.answers.focus).toMatchObject({ type: "choice", choice: "none", probabilities: { none: 0.8 } });
  });

  it.each([
    ["error500", /500/],
    ["error429", /429/],
    ["malformed", /./],
    ["missing-ids", /did not return an answer/],
    ["wrong-types", /did not return a bool answer/],
    ["nan", /invalid probability/],
  ] as const)("reports stopReason error for %s", async (behaviour, message) => {
    lb.set({ behaviour });
    try {
      const r = await classify(loopbackModel(lb.baseUrl), oneBool, { apiKey: "k", maxRetries: 0 });
      expect(r.stopReason).toBe("error");
      expect(r.errorMessage).toMatch(message);
    } finally {
      lb.set({ behaviour: "answer" });
    }
  });

  it("passes an out-of-range noul through (pi-ai does not range-check)", async () => {
    lb.set({ behaviour: "nan", nanValue: 1.7 });
    try {
      const r = await classify(loopbackModel(lb.baseUrl), oneBool, { apiKey: "k", maxRetries: 0 });
      expect(r.stopReason).toBe("stop");
      expect(bool(r, "q")).toBe(1.7);
    } finally {
      lb.set({ behaviour: "answer", nanValue: "NaN" });
    }
  });

  it("applies latency, and a hang is cut by an AbortSignal", async () => {
    lb.set({ latencyMs: 80, jitterMs: 20, seed: 7 });
    // Order, not a duration: a 75 ms timer set when the request goes out fires before the answer comes.
    const order: string[] = [];
    const timer = new Promise<void>((r) => setTimeout(() => r(void order.push("timer")), 75));
    const slow = await classify(loopbackModel(lb.baseUrl), oneBool, { apiKey: "k", maxRetries: 0 });
    order.push("answer");
    await timer;
    expect(slow.stopReason).toBe("stop");
    expect(order).toEqual(["timer", "answer"]);

    lb.set({ latencyMs: 0, jitterMs: 0, behaviour: "hang" });
    const before = lb.requests.length;
    // The server never answers: only the signal can end the call.
    const hung = await classify(loopbackModel(lb.baseUrl), oneBool, {
      apiKey: "k",
      maxRetries: 0,
      signal: AbortSignal.timeout(150),
    });
    expect(hung.stopReason).toBe("aborted");
    expect(lb.requests.length).toBe(before + 1);
    const timed = await classify(loopbackModel(lb.baseUrl), oneBool, { apiKey: "k", maxRetries: 0, timeoutMs: 100 });
    expect(timed.stopReason).toBe("error");
    expect(timed.errorMessage).toMatch(/timed out/i);
    lb.set({ behaviour: "answer" });
  });

  it("closes promptly while a request hangs", async () => {
    const other = await startLoopbackClassifier({ behaviour: "hang" });
    const pending = classify(loopbackModel(other.baseUrl), oneBool, { apiKey: "k", maxRetries: 0 });
    while (other.requests.length === 0) await new Promise((r) => setTimeout(r, 10));
    // The request hangs for good: close() returns only because it destroys the connection, which fails it.
    await other.close();
    expect((await pending).stopReason).toBe("error");
  });
});
