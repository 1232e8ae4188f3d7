// A pass plans at most what the classifier can answer before its deadline, newest first, and a run end
// does not ask again about outputs of its own run that an earlier run end judged (a run that started
// before a steer or a resumed crash spans the whole session).
import { describe, expect, it } from "vitest";
import { MAX_PASS_ITEMS, passBudget, takeNewest } from "../../../../src/core/distill/pass-budget.ts";
import { type PassPlan, planCheckpoint, planRunEnd } from "../../../../src/core/distill/plan.ts";
import { DEFAULT_CONFIG } from "../../../../src/core/shared/config.ts";
import type { SnapEntry } from "../../../../src/core/shared/types.ts";
import { assistantEntry, recordEntry, toolCall, toolResultEntry, userEntry } from "../../../kit/snap.ts";

const CONFIG = { ...DEFAULT_CONFIG, exchangeBreakEven: false, midRunBreakEven: false, midRunBatchChars: 0 };
const output = (i: number, chars: number) =>
  Array.from({ length: Math.ceil(chars / 60) }, (_, l) => `src/m${i}/f${l}.ts:${l}:const v${l} = ${i}; // filler`)
    .join("\n")
    .slice(0, chars);

/**
 * One run whose prompts all follow a tool result (steers, or a crash resumed): `turns` turns with one
 * output of `chars` each, a new prompt every ten turns, and a final answer.
 */
function megaRun(turns: number, chars: number): SnapEntry[] {
  const out: SnapEntry[] = [userEntry("u0", "start the migration")];
  for (let i = 0; i < turns; i++) {
    const call = toolCall(`c${i}`, "bash", { command: `step ${i}` });
    out.push(assistantEntry(`a${i}`, "", [call]));
    out.push(toolResultEntry(`t${i}`, call.id, "bash", output(i, chars)));
    if (i % 10 === 9) out.push(userEntry(`u${i + 1}`, `keep going after step ${i}`));
  }
  out.push(assistantEntry("z", "done"));
  return out;
}

const planned = (plan: PassPlan) =>
  plan.status === "run" ? [...plan.candidates.map((c) => c.entryId), ...plan.small.map((i) => i.entryId)] : [];

describe("passBudget and takeNewest", () => {
  it("gives every slot a full segment per second, for four deadlines", () => {
    expect(passBudget({ concurrency: 6, timeoutMs: 8000, maxSegmentChars: 32_000 })).toEqual({
      chars: 4 * 6 * 8 * 32_000,
      items: MAX_PASS_ITEMS,
    });
    expect(passBudget({ concurrency: 1, timeoutMs: 100, maxSegmentChars: 1000 }).chars).toBe(4000);
  });

  it("takes the newest that fit, keeps their order, and always the newest one", () => {
    const budget = { chars: 10, items: 5 };
    const items = [4, 3, 8, 2, 20];
    expect(
      takeNewest(
        items,
        { ...budget },
        (x) => x,
        (x) => items.indexOf(x),
      ),
    ).toEqual([20]);
    const small = [4, 3, 8, 2];
    const spent = { ...budget };
    expect(
      takeNewest(
        small,
        spent,
        (x) => x,
        (x) => small.indexOf(x),
      ),
    ).toEqual([8, 2]);
    expect(spent).toEqual({ chars: 0, items: 3 });
  });
});

describe("a run end in a run that spans the session", () => {
  it("plans at most MAX_PASS_ITEMS outputs, the newest", () => {
    const entries = megaRun(1200, 1000);
    const ids = planned(planRunEnd(entries, CONFIG));
    expect(ids.length).toBe(MAX_PASS_ITEMS);
    expect(ids).toContain("t1199");
    expect(ids).not.toContain("t0");
  });

  it("plans large outputs only up to the characters the deadline can carry", () => {
    const entries = megaRun(400, 20_000);
    const plan = planRunEnd(entries, CONFIG);
    const chars = plan.status === "run" ? plan.candidates.reduce((n, c) => n + c.chars, 0) : 0;
    expect(chars).toBeGreaterThan(0);
    expect(chars).toBeLessThanOrEqual(passBudget(CONFIG).chars);
    expect(planned(plan)).toContain("t399");
  });

  it("does not ask again about outputs an earlier run end of the same run judged", () => {
    const entries = megaRun(30, 1000);
    const first = planned(planRunEnd(entries, CONFIG));
    expect(first.length).toBe(30);
    const results = first.map((id) => ({ kind: "small", entryId: id, reason: "needed" }));
    const judged = [...entries, recordEntry("r1", { phase: "run-end", results })];
    // The next prompt follows the final answer's run; one more turn, still the same run by the steer rule.
    const call = toolCall("c30", "bash", { command: "step 30" });
    const later = [
      ...judged,
      userEntry("u31", "one more"),
      assistantEntry("a30", "", [call]),
      toolResultEntry("t30", call.id, "bash", output(30, 1000)),
      userEntry("u32", "and go on"),
      assistantEntry("z2", "done again"),
    ];
    expect(planned(planRunEnd(later, CONFIG))).toEqual(["t30"]);
    // An answer that did not come (timeout) is asked again.
    const timedOut = [
      ...entries,
      recordEntry("r1", {
        phase: "run-end",
        results: first.map((id) => ({ kind: "small", entryId: id, reason: "timeout" })),
      }),
      ...later.slice(judged.length),
    ];
    expect(planned(planRunEnd(timedOut, CONFIG))).toContain("t0");
  });

  it("a checkpoint in such a run plans within the same bounds", () => {
    const entries = megaRun(1200, 1000).slice(0, -1);
    const plan = planCheckpoint(entries, { ...CONFIG, midRunMinAgeTurns: 1 }, {
      family: "none",
      lastPromptTokens: 0,
    } as never);
    expect(planned(plan).length).toBeLessThanOrEqual(MAX_PASS_ITEMS);
  });
});
