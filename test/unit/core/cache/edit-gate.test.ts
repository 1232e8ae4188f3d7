import { describe, expect, it } from "vitest";
import { deferEditsThatDoNotPay, type PlanBreakEven } from "../../../../src/core/cache/edit-gate.ts";
import type { ContextEditDraft, RecordResult, SnapEntry } from "../../../../src/core/shared/types.ts";
import { assistantEntry, toolCall, toolResultEntry, userEntry } from "../../../kit/snap.ts";

/** One run of n turns, each a bash call with a 10,000-character output. */
function run(n: number): SnapEntry[] {
  const out: SnapEntry[] = [userEntry("u", "fix it")];
  for (let i = 1; i <= n; i++) {
    out.push(assistantEntry(`a${i}`, "", [toolCall(`c${i}`, "bash", { command: `cmd ${i}` })]));
    out.push(toolResultEntry(`t${i}`, `c${i}`, "bash", "x".repeat(10_000)));
  }
  return out;
}

const draft = (id: string): ContextEditDraft => ({
  type: "context_edit",
  targetId: id,
  replacement: { content: [{ type: "text", text: "stub" }] },
});
const result = (id: string, saving: number): RecordResult =>
  ({
    kind: "large",
    entryId: id,
    outcome: "distilled",
    reason: "chunks",
    beforeChars: 10_000,
    afterChars: 10_000 - saving,
  }) as RecordResult;

const gate = (requests: number): PlanBreakEven => ({ on: true, factor: 16, requests, pinAnthropicCache: true });

function apply(entries: SnapEntry[], ids: string[], requests: number, family: "anthropic" | "other" = "other") {
  const drafts = ids.map(draft);
  const results = ids.map((id) => result(id, 9_000));
  deferEditsThatDoNotPay({ entries, drafts, results, otherEditIds: [], family, gate: gate(requests) });
  return { drafts: drafts.map((d) => d.targetId), results };
}

describe("the run's own edits at a pass", () => {
  it("keep every edit when the saving over the requests covers the rewrite", () => {
    // Rewrite from t1 to the end is about 100k characters; 18k saved × 100 requests ≥ 16 × that.
    expect(apply(run(10), ["t1", "t2"], 100).drafts).toEqual(["t1", "t2"]);
  });

  it("defer the earliest edits first until the rest pays, and say so in the record", () => {
    const { drafts, results } = apply(run(10), ["t1", "t9"], 40);
    expect(drafts).toEqual(["t9"]);
    expect(results[0]).toMatchObject({ entryId: "t1", outcome: "kept", reason: "deferred", afterChars: 10_000 });
    expect(results[1]).toMatchObject({ entryId: "t9", outcome: "distilled" });
  });

  it("defer everything when even the latest edit cannot pay, with few requests left to pay it", () => {
    expect(apply(run(10), ["t1", "t9"], 1).drafts).toEqual([]);
  });

  it("count the Anthropic rewrite from the question when no later cache entry is known", () => {
    // From t9 the rewrite is two turns; from the question it is the whole run.
    expect(apply(run(10), ["t9"], 40, "other").drafts).toEqual(["t9"]);
    expect(apply(run(10), ["t9"], 40, "anthropic").drafts).toEqual([]);
  });

  it("leave edits that ride on a rewrite the pass makes anyway", () => {
    const entries = run(10);
    const drafts = [draft("t5")];
    const results = [result("t5", 100)];
    deferEditsThatDoNotPay({ entries, drafts, results, otherEditIds: ["t2"], family: "other", gate: gate(1) });
    expect(drafts.map((d) => d.targetId)).toEqual(["t5"]);
  });
});
