// The money gates hold wherever a pass is made: an old exchange omitted at a checkpoint must pay for its
// cache rewrite like one omitted at the run end, and clear the minimum saving even when other edits
// already pay the rewrite (the run is still going).
import { describe, expect, it } from "vitest";
import { rewriteChars, sessionRequests } from "../../../../src/core/cache/break-even.ts";
import { finishPass } from "../../../../src/core/distill/finish.ts";
import { type PassPlan, planCheckpoint, planRunEnd, type RunPlan } from "../../../../src/core/distill/plan.ts";
import { DEFAULT_CONFIG } from "../../../../src/core/shared/config.ts";
import type { ClassifierOutcome, ClassifierRequest, SnapEntry } from "../../../../src/core/shared/types.ts";
import { assistantEntry, toolCall, toolResultEntry, userEntry } from "../../../kit/snap.ts";

const config = { ...DEFAULT_CONFIG, keepRecentExchanges: 0, exchangeMinSavingChars: 4000 };

function session(replyChars: number): SnapEntry[] {
  const call = toolCall("c1", "bash", { command: "ls" });
  return [
    userEntry("old-u", "an unrelated question about the build"),
    assistantEntry("old-a", `unrelated answer ${"y".repeat(replyChars)}`),
    userEntry("u", "list the files"),
    assistantEntry("a", "", [call]),
    toolResultEntry("t1", "c1", "bash", "a.ts\nb.ts"),
    assistantEntry("z", "two files"),
  ];
}

/** Every exchange judged unrelated, everything else kept. */
function answer(request: ClassifierRequest): ClassifierOutcome {
  const answers: NonNullable<ClassifierOutcome["answers"]> = {};
  for (const id of Object.keys(request.questions)) answers[id] = { type: "bool", probability: 0 };
  return { status: "stop", answers };
}

function omitted(entries: SnapEntry[], phase: RunPlan["phase"], factor: number, paidEdits?: string[]): boolean {
  const plan = planRunEnd(entries, config) as PassPlan;
  if (plan.status !== "run") throw new Error(plan.reason);
  const gated: RunPlan = {
    ...plan,
    phase,
    breakEven: { on: true, factor, requests: sessionRequests(entries), pinAnthropicCache: false },
    ...(paidEdits ? { paidEdits } : {}),
  };
  const { drafts } = finishPass({
    plan: gated,
    entries,
    texts: gated.candidates.map((c) => entries.find((e) => e.id === c.entryId)?.text ?? ""),
    outcomes: gated.requests.map(answer),
    config,
    family: "other",
  });
  return drafts.some((d) => d.targetId === "old-u");
}

describe("an old exchange omitted at a checkpoint", () => {
  const entries = session(9000);
  // The factor at which the omission pays back exactly: saving × requests = factor × rewrite.
  const saving = entries[1]?.text.length ?? 0;
  const evenFactor = (saving * sessionRequests(entries)) / rewriteChars(entries, ["old-u"], "other");

  it("is omitted at the run end and at a checkpoint when it pays", () => {
    expect(omitted(entries, "run-end", evenFactor / 1.5)).toBe(true);
    expect(omitted(entries, "mid-run", evenFactor / 1.5)).toBe(true);
  });

  it("is kept at both when its rewrite does not pay", () => {
    expect(omitted(entries, "run-end", evenFactor * 1.5)).toBe(false);
    expect(omitted(entries, "mid-run", evenFactor * 1.5)).toBe(false);
  });

  it("must save the minimum at a checkpoint even when another edit pays the rewrite", () => {
    const small = session(2000);
    // An edit landing at the same boundary rewrites from the first entry: the omission adds no rewrite.
    expect(omitted(small, "run-end", 1, ["old-u"])).toBe(true);
    expect(omitted(small, "mid-run", 1, ["old-u"])).toBe(false);
  });
});

describe("midRunExchanges", () => {
  /** An old exchange, then a run still going: three turns of large outputs, the last asking for more. */
  function goingRun(): SnapEntry[] {
    const out = session(9000).slice(0, 2);
    out.push(userEntry("u", "migrate the build"));
    for (let i = 0; i < 3; i++) {
      const call = toolCall(`m${i}`, "bash", { command: `step ${i}` });
      out.push(assistantEntry(`ma${i}`, "", [call]));
      out.push(toolResultEntry(`mt${i}`, call.id, "bash", `line ${i}\n`.repeat(4000)));
    }
    out.push(assistantEntry("more", "", [toolCall("m9", "bash", { command: "step 9" })]));
    return out;
  }
  const checkpoint = (midRunExchanges: boolean) => {
    const plan = planCheckpoint(
      goingRun(),
      { ...config, midRunExchanges, midRunBreakEven: false, midRunBatchChars: 0, midRunMinAgeTurns: 1 },
      { family: "none", lastPromptTokens: 0 } as never,
    ) as PassPlan;
    if (plan.status !== "run") throw new Error(plan.reason);
    return plan;
  };

  it("lets a checkpoint judge old exchanges by default, and leaves them to the run end when off", () => {
    expect(DEFAULT_CONFIG.midRunExchanges).toBe(true);
    expect(checkpoint(true).exchanges.map((x) => x.promptId)).toEqual(["old-u"]);
    const off = checkpoint(false);
    expect(off.exchanges).toEqual([]);
    // The outputs are judged either way.
    expect(off.candidates.length).toBeGreaterThan(0);
  });
});
