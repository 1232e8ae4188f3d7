// A handed-over pass finishes in two parts from one plan (core/distill/split.ts): the items whose requests
// were all answered, then the items that waited. Together they decide what one finish over every answer
// decides, and no item is decided in both.
import { describe, expect, it } from "vitest";
import { finishPass } from "../../../../src/core/distill/finish.ts";
import { type PassPlan, planRunEnd, type RunPlan } from "../../../../src/core/distill/plan.ts";
import { answeredPart, waitingItems, waitingPart } from "../../../../src/core/distill/split.ts";
import { DEFAULT_CONFIG } from "../../../../src/core/shared/config.ts";
import type { ClassifierOutcome, ClassifierRequest, SnapEntry } from "../../../../src/core/shared/types.ts";
import { assistantEntry, toolCall, toolResultEntry, userEntry } from "../../../kit/snap.ts";

const config = { ...DEFAULT_CONFIG, exchangeBreakEven: false, keepRecentExchanges: 0 };

const lines = (tag: string, n: number, hot: number) =>
  Array.from(
    { length: n },
    (_, i) => `src/${tag}${i}.ts:${i}:${i === hot ? "hot_symbol()" : "cold()"} // ${"x".repeat(40)}`,
  ).join("\n");

/** An earlier exchange, then a run with a two-segment output, a one-segment one and small ones. */
function session(): SnapEntry[] {
  const calls = ["big", "mid", "s1", "s2"].map((id) => toolCall(`c-${id}`, "bash", { command: `cmd ${id}` }));
  return [
    userEntry("old-u", "an unrelated question about the build"),
    assistantEntry("old-a", `unrelated answer ${"y".repeat(3000)}`),
    userEntry("u", "where is hot_symbol?"),
    assistantEntry("a", "", calls),
    toolResultEntry("t-big", "c-big", "bash", lines("big", 1200, 700)),
    toolResultEntry("t-mid", "c-mid", "bash", lines("mid", 150, 20)),
    toolResultEntry("t-s1", "c-s1", "bash", `small one ${"z".repeat(600)}`),
    toolResultEntry("t-s2", "c-s2", "bash", `small two hot_symbol ${"z".repeat(600)}`),
    assistantEntry("z", "hot_symbol is in src/big700.ts"),
  ];
}

/** Says yes to whatever mentions hot_symbol, no to the rest. */
function answer(request: ClassifierRequest): ClassifierOutcome {
  const state = request.state as { chunks?: Record<string, string>; items?: Record<string, string> };
  const texts: Record<string, unknown> = { ...(state.chunks ?? {}), ...(state.items ?? {}) };
  const answers: NonNullable<ClassifierOutcome["answers"]> = {};
  for (const id of Object.keys(request.questions)) {
    if (id === "focus") {
      const hot = Object.keys(state.chunks ?? {}).find((k) => state.chunks?.[k]?.includes("hot_symbol"));
      answers.focus = hot
        ? { type: "choice", choice: hot, probabilities: { [hot]: 0.8 } }
        : { type: "choice", choice: "none", probabilities: { none: 0.9 } };
    } else {
      const text = JSON.stringify(texts[id] ?? (state as Record<string, unknown>)[id] ?? "");
      answers[id] = { type: "bool", probability: text.includes("hot_symbol") ? 0.9 : 0.05 };
    }
  }
  return { status: "stop", answers };
}

function planned() {
  const entries = session();
  const plan = planRunEnd(entries, config) as PassPlan;
  if (plan.status !== "run") throw new Error(`no plan: ${plan.reason}`);
  const texts = plan.candidates.map((c) => entries.find((e) => e.id === c.entryId)?.text ?? "");
  const outcomes = plan.requests.map(answer);
  const finish = (o: ClassifierOutcome[]) => finishPass({ plan, entries, texts, outcomes: o, config });
  return { plan, outcomes, finish };
}

const segmentsOf = (plan: RunPlan, id: string) =>
  plan.candidates
    .find((c) => c.entryId === id)
    ?.segments.flatMap((s) => (s.request === undefined ? [] : [s.request])) ?? [];

describe("a pass finished in two parts", () => {
  it("the plan has every kind of item, and edits some of each", () => {
    const { plan } = planned();
    expect(segmentsOf(plan, "t-big").length).toBeGreaterThan(1);
    expect(plan.smallBatches.length).toBeGreaterThan(0);
    expect(plan.exchangeBatches.length).toBeGreaterThan(0);
    const { finish, outcomes } = planned();
    expect(finish(outcomes).drafts.map((d) => d.targetId)).toEqual(
      expect.arrayContaining(["t-big", "t-mid", "t-s1", "old-u", "old-a"]),
    );
  });

  it("an output waits with all its requests when one of them is unanswered", () => {
    const { plan } = planned();
    const [first, ...others] = segmentsOf(plan, "t-big");
    const waiting = waitingItems(plan, [others.at(-1) as number]);
    expect([...waiting.ids]).toEqual(["t-big"]);
    expect(waiting.requests.has(first as number)).toBe(true);
    expect(waiting.requests.size).toBe(others.length + 1);
  });

  it("decides each item once, and both parts together decide what one finish does", () => {
    const { plan, outcomes, finish } = planned();
    const whole = finish(outcomes);
    // Every way of leaving one request unanswered at the hand-over.
    for (let pending = 0; pending < plan.requests.length; pending++) {
      const waiting = waitingItems(plan, [pending]);
      const first = finish(answeredPart(outcomes, waiting));
      const rest = waitingPart(finish(outcomes), waiting);
      // The first part edits nothing that waits, and records what waits as not yet answered.
      for (const d of first.drafts) expect(waiting.ids.has(d.targetId) || waiting.omitted.has(d.targetId)).toBe(false);
      for (const r of first.results.filter((x) => waiting.ids.has(x.entryId))) {
        expect(r.outcome, r.entryId).toBe("kept");
        expect(r.reason, r.entryId).toContain("aborted");
      }
      // The rest is about the waiting items only.
      expect(rest.results.map((r) => r.entryId).sort()).toEqual([...waiting.ids].sort());
      // Together: the same results and drafts as one finish.
      const firstDone = first.results.filter((r) => !waiting.ids.has(r.entryId));
      const byId = (xs: Array<{ entryId: string }>) => [...xs].sort((a, b) => a.entryId.localeCompare(b.entryId));
      expect(byId([...firstDone, ...rest.results])).toEqual(byId(whole.results));
      const targets = (ds: Array<{ targetId: string }>) => ds.map((d) => d.targetId).sort();
      expect(targets([...first.drafts, ...rest.drafts])).toEqual(targets(whole.drafts));
    }
  });

  it("leaves an image's draft to the first part, even inside a waiting exchange", () => {
    const { plan } = planned();
    const exchange = plan.exchangeBatches[0];
    const waiting = waitingItems(plan, [exchange?.request as number]);
    const inside = plan.exchanges[0]?.entryIds[0] as string;
    const out = waitingPart(
      {
        drafts: [
          { type: "context_edit", targetId: inside, replacement: { content: [{ type: "text", text: "[image]" }] } },
          { type: "context_edit", targetId: inside, replacement: null },
        ],
        results: [],
      },
      waiting,
    );
    expect(out.drafts).toEqual([{ type: "context_edit", targetId: inside, replacement: null }]);
  });
});
