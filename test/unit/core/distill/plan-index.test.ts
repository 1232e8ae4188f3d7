// The worker's per-session index answers what a plan reads exactly as a walk of the whole snapshot does,
// after any mix of appended entries, edited messages and shortened orders; and a plan made with it is the
// plan made from scratch.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { planCheckpoint, planRunEnd } from "../../../../src/core/distill/plan.ts";
import { PlanIndex, type SessionReads, sessionReads } from "../../../../src/core/distill/plan-index.ts";
import { collectRun } from "../../../../src/core/distill/run.ts";
import { collectExchanges } from "../../../../src/core/items/exchanges.ts";
import { SWITCH_TYPE, switchData } from "../../../../src/core/records/off-spans.ts";
import { PIN_TYPE, pinData } from "../../../../src/core/records/pins.ts";
import { DEFAULT_CONFIG } from "../../../../src/core/shared/config.ts";
import { GUARD_MARKER, type SnapEntry } from "../../../../src/core/shared/types.ts";
import { propertyParams } from "../../../kit/arbitraries.ts";
import { assistantEntry, hiddenEntry, recordEntry, toolCall, toolResultEntry, userEntry } from "../../../kit/snap.ts";

type Step =
  | { kind: "prompt"; text: string; steer: boolean }
  | { kind: "late"; pick: number }
  | { kind: "turn"; calls: number; tool: string; chars: number; images: number; answer: boolean }
  | { kind: "record"; phase: "mid-run" | "run-end"; picks: number[]; reason: string; resultKind: string }
  | { kind: "pin"; action: "pin" | "restore"; pick: number }
  | { kind: "switch"; on: boolean; judge: boolean }
  | { kind: "edit"; pick: number; hide: boolean }
  | { kind: "cut"; keep: number }
  | { kind: "boundary" };

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("prompt" as const),
      text: fc.constantFrom("fix a", "why b?", ""),
      steer: fc.boolean(),
    }),
  },
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant("turn" as const),
      calls: fc.integer({ min: 0, max: 3 }),
      tool: fc.constantFrom("bash", "read", "grep", "edit"),
      chars: fc.integer({ min: 10, max: 9000 }),
      images: fc.constantFrom(0, 0, 0, 1),
      answer: fc.boolean(),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("record" as const),
      phase: fc.constantFrom("mid-run" as const, "run-end" as const),
      picks: fc.array(fc.nat(), { maxLength: 4 }),
      reason: fc.constantFrom(
        "chunks",
        "none-needed",
        "deferred",
        "timeout",
        "not-needed",
        "keep:cited",
        "relevant",
        "unrelated",
      ),
      resultKind: fc.constantFrom("large", "small", "exchange", "image"),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("pin" as const),
      action: fc.constantFrom("pin" as const, "restore" as const),
      pick: fc.nat(),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("switch" as const), on: fc.boolean(), judge: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("edit" as const), pick: fc.nat(), hide: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("cut" as const), keep: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("late" as const), pick: fc.nat() }) },
  { weight: 4, arbitrary: fc.constant({ kind: "boundary" as const }) },
);

/** Plays the steps as the worker's store sees them: snapshots, each with its kept prefix and fresh ids. */
function* snapshots(steps: Step[]): Generator<{ entries: SnapEntry[]; keep: number; fresh: string[] }> {
  let entries: SnapEntry[] = [];
  let keep = 0;
  let fresh: string[] = [];
  let n = 0;
  const id = (p: string) => `${p}${n++}`;
  const push = (e: SnapEntry) => {
    entries.push(e);
    fresh.push(e.id);
  };
  const pick = (k: number) => entries[k % Math.max(1, entries.length)];
  for (const step of [...steps, { kind: "boundary" } as Step]) {
    switch (step.kind) {
      case "prompt":
        // A run ends with an answer that asks for nothing; a prompt without one is steering.
        if (!step.steer) push(assistantEntry(id("a"), "answer"));
        push(userEntry(id("u"), step.text));
        break;
      case "late": {
        const calls = entries.flatMap((e) => e.toolCalls ?? []);
        const call = calls[step.pick % Math.max(1, calls.length)];
        if (call) push(toolResultEntry(id("r"), call.id, call.name, "late"));
        break;
      }
      case "turn": {
        const calls = Array.from({ length: step.calls }, () =>
          toolCall(id("c"), step.tool, { path: "src/a.ts", command: "ls" }),
        );
        push(assistantEntry(id("a"), step.answer ? "done" : "", calls));
        for (const c of calls)
          push(toolResultEntry(id("r"), c.id, c.name, "x".repeat(step.chars), { images: step.images }));
        break;
      }
      case "record": {
        const results = step.picks.map((k) => ({
          kind: step.resultKind,
          entryId: pick(k)?.id ?? "none",
          reason: step.reason,
        }));
        push(recordEntry(id("rec"), { phase: step.phase, results }));
        break;
      }
      case "pin":
        if (entries.length > 0)
          push(
            hiddenEntry(id("pin"), "custom", {
              customType: PIN_TYPE,
              data: pinData(step.action, [(pick(step.pick) as SnapEntry).id]),
            }),
          );
        break;
      case "switch": {
        const last = [...entries].reverse().find((e) => e.customType === SWITCH_TYPE);
        push(
          hiddenEntry(id("sw"), "custom", { customType: SWITCH_TYPE, data: switchData(step.on, last?.id, step.judge) }),
        );
        break;
      }
      case "edit": {
        const at = step.pick % Math.max(1, entries.length);
        const e = entries[at];
        if (e?.type !== "message") break;
        const text = `${GUARD_MARKER} stub`;
        entries[at] = { ...e, edited: true, rawText: e.text, text, images: 0, visible: !step.hide };
        fresh.push(e.id);
        break;
      }
      case "cut":
        entries = entries.slice(0, step.keep % (entries.length + 1));
        keep = Math.min(keep, entries.length);
        break;
      case "boundary":
        yield { entries, keep, fresh };
        entries = entries.slice();
        keep = entries.length;
        fresh = [];
        break;
    }
  }
}

const EXCHANGES = { pruneExchanges: true, keepRecentExchanges: 1 };

function answers(reads: SessionReads, entries: SnapEntry[]) {
  const span = collectRun(entries, 2);
  const run = span ? reads.run(span) : undefined;
  return {
    edited: [...reads.judged().edited],
    retry: [...reads.judged().retry],
    pins: Object.fromEntries(Object.entries(reads.pins()).map(([k, v]) => [k, [...v]])),
    off: [...reads.off()],
    requests: reads.requests(),
    positions: entries.map((e) => reads.positionOf(e.id)),
    images: reads.images(1, span?.startIndex ?? -1),
    run: run && {
      ...run.turns,
      memo: [...run.memo],
      calls: [...run.calls],
      superseded: [...run.superseded].sort(([a], [b]) => a.localeCompare(b)),
    },
    exchanges: span
      ? collectExchanges(
          entries,
          span.startIndex,
          EXCHANGES,
          new Set(),
          reads.judged(),
          reads.exchanges(span.startIndex),
        )
      : [],
  };
}

describe("PlanIndex", () => {
  it("answers as a walk of the whole snapshot does, boundary after boundary", () => {
    fc.assert(
      fc.property(fc.array(stepArb, { minLength: 20, maxLength: 120 }), (steps) => {
        const index = new PlanIndex();
        for (const { entries, keep, fresh } of snapshots(steps)) {
          index.update(entries, keep, fresh);
          expect(answers(sessionReads(entries, index), entries)).toEqual(answers(sessionReads(entries), entries));
        }
      }),
      propertyParams(300),
    );
  });

  it("makes the plans a snapshot alone makes", () => {
    const config = { ...DEFAULT_CONFIG, midRunBatchChars: 2000 };
    const view = { family: "anthropic" as const };
    fc.assert(
      fc.property(fc.array(stepArb, { minLength: 20, maxLength: 120 }), (steps) => {
        const index = new PlanIndex();
        for (const { entries, keep, fresh } of snapshots(steps)) {
          index.update(entries, keep, fresh);
          expect(planCheckpoint(entries, config, view, undefined, undefined, index)).toEqual(
            planCheckpoint(entries, config, view),
          );
          expect(planRunEnd(entries, config, view, undefined, undefined, index)).toEqual(
            planRunEnd(entries, config, view),
          );
        }
      }),
      propertyParams(150),
    );
  });

  it("counts turns past its first thousand positions", () => {
    const entries: SnapEntry[] = [userEntry("u", "q")];
    const index = new PlanIndex();
    for (let k = 0; k < 1500; k++) {
      const call = toolCall(`c${k}`, "read", { path: `f${k}.png` });
      entries.push(
        assistantEntry(`a${k}`, "", [call]),
        toolResultEntry(`r${k}`, call.id, "read", "img", { images: k % 7 === 0 ? 1 : 0 }),
      );
      if (k % 100 === 99) {
        const snapshot = entries.slice();
        index.update(
          snapshot,
          snapshot.length - 200,
          snapshot.slice(-200).map((e) => e.id),
        );
        expect(index.images(3, 0)).toEqual(sessionReads(snapshot).images(3, 0));
      }
    }
    expect(index.rebuilds).toBe(0);
  });

  it("is rebuilt only when the order lost entries", () => {
    const index = new PlanIndex();
    const entries = [userEntry("u", "q"), assistantEntry("a", "", [toolCall("c", "bash")])];
    index.update(entries, 0, ["u", "a"]);
    const next = [...entries, toolResultEntry("r", "c", "bash", "out")];
    index.update(next, 2, ["r"]);
    expect(index.rebuilds).toBe(0);
    index.update(next.slice(0, 2), 2, []);
    expect(index.rebuilds).toBe(1);
    expect(index.positionOf("r")).toBe(-1);
  });
});
