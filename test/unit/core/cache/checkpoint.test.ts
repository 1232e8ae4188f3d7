import { describe, expect, it } from "vitest";
import { entryChars, rewriteFactor } from "../../../../src/core/cache/break-even.ts";
import {
  type CheckpointBatch,
  checkpointMemo,
  decideCheckpoint,
  eligibleAtCheckpoint,
  laterCalls,
  questionPinIndex,
  rewriteAfterEdit,
  runTurns,
} from "../../../../src/core/cache/checkpoint.ts";
import { planCheckpoint } from "../../../../src/core/distill/plan.ts";
import { collectRun } from "../../../../src/core/distill/run.ts";
import { DEFAULT_CONFIG } from "../../../../src/core/shared/config.ts";
import type { SnapEntry } from "../../../../src/core/shared/types.ts";
import { assistantEntry, recordEntry, toolCall, toolResultEntry, userEntry } from "../../../kit/snap.ts";

/** An assistant message making one bash call. */
const call = (id: string, callId: string, command = `cmd ${callId}`): SnapEntry =>
  assistantEntry(id, "", [toolCall(callId, "bash", { command })]);
const result = (id: string, callId: string, text: string, toolName = "bash"): SnapEntry =>
  toolResultEntry(id, callId, toolName, text);
const record = (id: string, results: Array<{ entryId: string; reason: string; kind?: string }>): SnapEntry =>
  recordEntry(id, {
    v: 1,
    phase: "mid-run",
    results: results.map((r) => ({ ...r, outcome: "kept", label: "x", beforeChars: 1, afterChars: 1, jev: [] })),
  });

/** A run of n turns, each calling bash and getting `size` chars back. */
function run(n: number, size = 6000): SnapEntry[] {
  const out: SnapEntry[] = [userEntry("u", "fix the tests")];
  for (let i = 1; i <= n; i++) {
    out.push(
      call(`a${i}`, `c${i}`),
      result(`t${i}`, `c${i}`, `${`line ${i}\n`.repeat(Math.ceil(size / 7))}`.slice(0, size)),
    );
  }
  return out;
}

describe("turns and eligibility", () => {
  it("numbers turns by assistant message and applies the age rule, never the current turn", () => {
    const entries = run(6);
    const span = collectRun(entries, 0)!;
    const turns = runTurns(entries, span);
    expect(turns.current).toBe(6);
    expect(turns.callTurn.get("c2")).toBe(2);
    const memo = new Set<string>();
    expect(eligibleAtCheckpoint({ entryId: "t2", tool: "bash", callId: "c2" }, turns, memo, 4)).toBe(true);
    expect(eligibleAtCheckpoint({ entryId: "t3", tool: "bash", callId: "c3" }, turns, memo, 4)).toBe(false);
    expect(eligibleAtCheckpoint({ entryId: "t6", tool: "bash", callId: "c6" }, turns, memo, 1)).toBe(false);
    expect(eligibleAtCheckpoint({ entryId: "t1", tool: "recall", callId: "c1" }, turns, memo, 1)).toBe(false);
  });

  it("lists later calls, shortening beyond 30", () => {
    const entries = run(40, 10);
    const turns = runTurns(entries, collectRun(entries, 0)!);
    expect(laterCalls(turns, "c38")).toEqual(["bash `cmd c39`", "bash `cmd c40`"]);
    const long = laterCalls(turns, "c1");
    expect(long).toHaveLength(31);
    expect(long[15]).toBe("[… 9 more calls …]");
    expect(long[0]).toBe("bash `cmd c2`");
    expect(long[30]).toBe("bash `cmd c40`");
  });

  it("memo: a judged output is not asked again mid-run, an unanswered one is", () => {
    const entries = [
      ...run(3),
      record("r1", [
        { entryId: "t1", reason: "chunks" },
        { entryId: "t2", reason: "timeout" },
        { entryId: "t3", reason: "whole-needed,error" },
      ]),
    ];
    const memo = checkpointMemo(entries, 0);
    expect([...memo]).toEqual(["t1"]);
  });
});

const batch = (outputChars: number, extra: Partial<CheckpointBatch> = {}): CheckpointBatch => ({
  outputIds: ["t1"],
  outputChars,
  exchanges: [],
  exchangeChars: 0,
  images: [],
  imageChars: 0,
  ...extra,
});

const FACTOR = rewriteFactor("other", undefined, DEFAULT_CONFIG.breakEvenMargin);

describe("batch and break-even", () => {
  const entries = run(10);
  const config = DEFAULT_CONFIG;

  it("waits for the batch size, with the OpenAI Codex variant", () => {
    expect(decideCheckpoint(entries, batch(59_999), 10, 0, config, { family: "other" }).run).toBe(false);
    const codex = { ...config, midRunBatchCharsOpenAI: 10_000 };
    expect(decideCheckpoint(entries, batch(20_000), 30, 0, codex, { family: "openai-codex" }).reason).not.toMatch(
      /batch/,
    );
  });

  it("computes the rewrite per provider family", () => {
    const sum = (list: SnapEntry[]) => list.reduce((n, e) => n + entryChars(e), 0);
    const total = sum(entries);
    const first = entries.findIndex((e) => e.id === "t3");
    expect(rewriteAfterEdit(entries, first, { family: "openai-codex" }, true)).toBe(total);
    const fromFirst = sum(entries.slice(first));
    expect(rewriteAfterEdit(entries, first, { family: "other" }, true)).toBe(fromFirst);
    // Anthropic: after the question pin (index 0) without a trusted read point; the whole context with pins off.
    expect(rewriteAfterEdit(entries, first, { family: "anthropic" }, true)).toBe(total - "fix the tests".length);
    expect(rewriteAfterEdit(entries, first, { family: "anthropic" }, false)).toBe(total);
    // A trusted read point closer to the edit shrinks the rewrite to what follows it.
    const withRead = rewriteAfterEdit(entries, first, { family: "anthropic", trustedIds: ["t2"] }, true);
    expect(withRead).toBe(sum(entries.slice(entries.findIndex((e) => e.id === "t2") + 1)));
    expect(questionPinIndex(entries)).toBe(0);
  });

  it("runs only when pending × turns covers factor × rewrite, trying tiers without exchanges", () => {
    const first = entries.findIndex((e) => e.id === "t1");
    const rewrite = rewriteAfterEdit(entries, first, { family: "other" }, true);
    const need = Math.ceil((FACTOR * rewrite) / 10);
    expect(decideCheckpoint(entries, batch(need), 10, 0, config, { family: "other" })).toMatchObject({
      run: true,
      tier: "all",
    });
    expect(decideCheckpoint(entries, batch(need - 1), 10, 0, config, { family: "other" }).run).toBe(false);
    expect(
      decideCheckpoint(entries, batch(need - 1), 10, 0, { ...config, midRunBreakEven: false }, { family: "other" }).run,
    ).toBe(true);
  });

  it("drops old exchanges from the batch when only the outputs pay off", () => {
    const withExchange = [
      userEntry("old", "old topic"),
      { ...call("oa", "oc"), text: "x".repeat(50_000), toolCalls: undefined },
      ...entries,
    ];
    const first = withExchange.findIndex((e) => e.id === "t1");
    const outputsOnly = rewriteAfterEdit(withExchange, first, { family: "other" }, true);
    const pending = Math.ceil((FACTOR * outputsOnly) / 10);
    const ex = {
      promptId: "old",
      index: 0,
      entryIds: ["oa"],
      prompt: "old topic",
      lastAssistant: "",
      toolLabels: [],
      chars: 50_009,
      messages: 2,
      stub: "s",
    };
    const decision = decideCheckpoint(
      withExchange,
      batch(pending, { exchanges: [ex], exchangeChars: 100 }),
      10,
      2,
      config,
      { family: "other" },
    );
    expect(decision).toMatchObject({ run: true, tier: "without-exchanges" });
    expect(decision.batch.exchanges).toEqual([]);
  });
});

describe("planCheckpoint", () => {
  it("plans requests for old outputs only, with checkpoint wording", () => {
    const entries = run(8, 9000);
    const plan = planCheckpoint(
      entries,
      { ...DEFAULT_CONFIG, midRunBreakEven: false, midRunBatchChars: 20_000 },
      { family: "other" },
    );
    if (plan.status !== "run") throw new Error(plan.reason);
    expect(plan.phase).toBe("mid-run");
    expect(plan.candidates.map((c) => c.entryId)).toEqual(["t1", "t2", "t3", "t4"]);
    const state = plan.requests[0]?.state as Record<string, unknown>;
    expect(state.agent_progress).toBeDefined();
    expect(state.final_answer).toBeUndefined();
    expect(state.later_tool_calls).toEqual([
      "bash `cmd c2`",
      "bash `cmd c3`",
      "bash `cmd c4`",
      "bash `cmd c5`",
      "bash `cmd c6`",
      "bash `cmd c7`",
      "bash `cmd c8`",
    ]);
  });

  it("skips when the memo already holds the old outputs", () => {
    const entries = [
      ...run(8, 9000),
      record(
        "r",
        ["t1", "t2", "t3", "t4"].map((entryId) => ({ entryId, reason: "chunks" })),
      ),
    ];
    const plan = planCheckpoint(
      entries,
      { ...DEFAULT_CONFIG, midRunBreakEven: false, midRunBatchChars: 20_000 },
      { family: "other" },
    );
    expect(plan.status).toBe("skip");
  });
});
