import { describe, expect, it } from "vitest";
import { planRunEnd } from "../../../../src/core/distill/plan.ts";
import {
  type KindMisses,
  MISS_RULE,
  missesLine,
  sessionMisses,
  taughtConfig,
} from "../../../../src/core/records/misses.ts";
import { PIN_TYPE, pinData } from "../../../../src/core/records/pins.ts";
import { DEFAULT_CONFIG, type GuardConfig } from "../../../../src/core/shared/config.ts";
import type { RecordResult, SnapEntry } from "../../../../src/core/shared/types.ts";
import { assistantEntry, callResultEntry, hiddenEntry, recordEntry, toolCall, userEntry } from "../../../kit/snap.ts";

const config: GuardConfig = { ...DEFAULT_CONFIG, excludeTools: [...DEFAULT_CONFIG.excludeTools] };

function result(entryId: string, kind: RecordResult["kind"], outcome: RecordResult["outcome"], reason: string) {
  return { kind, entryId, label: entryId, outcome, reason, beforeChars: 9000, afterChars: 100, jev: [] };
}

const record = (id: string, results: RecordResult[]) =>
  recordEntry(id, { v: 1, phase: "run-end", model: "m", results });

let n = 0;
const recallOf = (entryId: string, extra: Record<string, unknown> = {}) =>
  assistantEntry(`r${++n}`, "", [toolCall(`c${n}`, "recall", { entryId, ...extra })]);
const restoreOf = (...ids: string[]) =>
  hiddenEntry(`p${++n}`, "custom", { customType: PIN_TYPE, data: pinData("restore", ids) });

/** A branch whose passes removed outputs o1..o10, short output s1, exchange x1, image i1 and stale read d1. */
function removals(): SnapEntry[] {
  const outputs = Array.from({ length: 10 }, (_, i) => result(`o${i + 1}`, "large", "removed", "none-needed"));
  return [
    record("rec1", [
      ...outputs,
      result("k1", "large", "kept", "whole-needed"),
      result("s1", "small", "removed", "not-needed"),
      result("x1", "exchange", "removed", "unrelated"),
      result("i1", "image", "removed", "3 turns old"),
      result("d1", "large", "removed", "changed-on-disk"),
    ]),
  ];
}

const byKind = (misses: KindMisses[], kind: KindMisses["kind"]) => misses.find((m) => m.kind === kind);

describe("sessionMisses", () => {
  it("counts each removed item recalled or restored once, per kind and reason", () => {
    const misses = sessionMisses([
      ...removals(),
      recallOf("o1"),
      recallOf("o1", { pattern: "status" }),
      restoreOf("o1"),
      recallOf("o2"),
      restoreOf("x1", "x1-answer"),
      recallOf("d1"),
    ]);
    expect(byKind(misses, "output")).toEqual({
      kind: "output",
      removals: 10,
      misses: 2,
      reasons: { "none-needed": 2 },
      level: 1,
    });
    expect(byKind(misses, "exchange")).toMatchObject({ removals: 1, misses: 1, level: 0 });
    expect(byKind(misses, "stale")).toMatchObject({ removals: 1, misses: 1, reasons: { "changed-on-disk": 1 } });
    expect(byKind(misses, "small")).toMatchObject({ misses: 0, level: 0 });
    expect(byKind(misses, "image")).toMatchObject({ misses: 0, level: 0 });
  });

  it("ignores recalls of kept items, of unknown ids, and those before the removal", () => {
    const misses = sessionMisses([
      recallOf("o1"),
      recallOf("o2"),
      ...removals(),
      recallOf("k1"),
      recallOf("nope"),
      recallOf("   "),
    ]);
    for (const m of misses) expect(m.misses).toBe(0);
  });

  it("reads recalls from raw branch entries too", () => {
    const raw = {
      type: "message",
      message: {
        role: "assistant",
        content: [
          { type: "toolCall", id: "c1", name: "recall", arguments: { entryId: "o1" } },
          { type: "toolCall", id: "c2", name: "recall", arguments: { entryId: "o3" } },
        ],
      },
    };
    expect(byKind(sessionMisses([...removals(), raw]), "output")).toMatchObject({ misses: 2, level: 1 });
  });

  it("learns only past both the count and the rate, one step per miss past the first, up to the cap", () => {
    const level = (missed: number, removed: number) => {
      const results = Array.from({ length: removed }, (_, i) => result(`o${i}`, "large", "removed", "chunks"));
      const recalls = Array.from({ length: missed }, (_, i) => recallOf(`o${i}`));
      return byKind(sessionMisses([record("rec", results), ...recalls]), "output")?.level;
    };
    expect(level(1, 2)).toBe(0);
    expect(level(2, 20)).toBe(1);
    expect(level(2, 21)).toBe(0);
    expect(level(3, 10)).toBe(2);
    expect(level(9, 10)).toBe(MISS_RULE.maxLevel);
  });
});

describe("taughtConfig", () => {
  it("leaves the settings as they are without misses past the rate", () => {
    const misses = sessionMisses([...removals(), recallOf("o1"), recallOf("k1")]);
    const taught = taughtConfig(config, misses);
    expect(taught.config).toBe(config);
    expect(taught.learned).toEqual([]);
  });

  it("moves only the missed kind's thresholds toward keeping", () => {
    const misses = sessionMisses([...removals(), recallOf("o1"), recallOf("o2"), recallOf("o3")]);
    const { config: c, learned } = taughtConfig(config, misses);
    expect(learned).toEqual([{ kind: "output", misses: 3, removals: 10, level: 2 }]);
    expect(c.keepWholeThreshold).toBeCloseTo(0.7 * 0.7);
    expect(c.chunkKeepThreshold).toBeCloseTo(0.6 * 0.7);
    expect(c.midRunChunkKeepThreshold).toBeCloseTo(0.6 * 0.7);
    expect(c.focusWholeThreshold).toBeCloseTo(0.6 * 0.7);
    expect(c.noneThreshold).toBeCloseTo(0.5 + 0.5 * 0.3);
    expect(c.smallKeepThreshold).toBe(config.smallKeepThreshold);
    expect(c.exchangeOmitThreshold).toBe(config.exchangeOmitThreshold);
    expect(c.imageKeepTurns).toBe(config.imageKeepTurns);
  });

  it("is bounded: the most misses move a threshold at most the cap's steps", () => {
    const many = Array.from({ length: 10 }, (_, i) => recallOf(`o${i + 1}`));
    const { config: c } = taughtConfig(config, sessionMisses([...removals(), ...many]));
    expect(c.keepWholeThreshold).toBeCloseTo(0.7 * (1 - MISS_RULE.step * MISS_RULE.maxLevel));
  });

  it("keeps images longer and old exchanges more, and never moves anything for stale reads", () => {
    const branch: SnapEntry[] = [
      record("rec", [
        result("i1", "image", "removed", "3 turns old"),
        result("i2", "image", "removed", "3 turns old"),
        result("x1", "exchange", "removed", "unrelated"),
        result("x2", "exchange", "removed", "unrelated"),
        result("d1", "large", "removed", "changed-on-disk"),
        result("d2", "small", "removed", "changed-on-disk"),
      ]),
      ...["i1", "i2", "x1", "x2", "d1", "d2"].map((id) => recallOf(id)),
    ];
    const { config: c, learned } = taughtConfig(config, sessionMisses(branch));
    expect(learned.map((l) => l.kind)).toEqual(["exchange", "image"]);
    expect(c.imageKeepTurns).toBe(config.imageKeepTurns + MISS_RULE.imageTurns);
    expect(c.exchangeOmitThreshold).toBeCloseTo(0.2 * 0.85);
    expect(c.keepWholeThreshold).toBe(config.keepWholeThreshold);
  });
});

describe("a session with no misses", () => {
  it("plans exactly as it would without the policy", () => {
    const read = toolCall("call1", "read", { path: "src/a.ts" });
    const entries: SnapEntry[] = [
      userEntry("u1", "Where is readStatus defined?"),
      assistantEntry("a1", "", [read]),
      callResultEntry("t1", read, "const x = 1;\n".repeat(800)),
      assistantEntry("a2", "In src/a.ts."),
      record("rec", [result("t1", "large", "kept", "whole-needed")]),
      recallOf("t1"),
      recallOf("unknown"),
    ];
    const taught = taughtConfig(config, sessionMisses(entries)).config;
    expect(taught).toBe(config);
    expect(planRunEnd(entries, taught)).toEqual(planRunEnd(entries, config));
  });
});

describe("missesLine", () => {
  it("says nothing without misses", () => {
    expect(missesLine(sessionMisses(removals()))).toBeUndefined();
  });

  it("names each kind's misses, their reasons and the step it moved", () => {
    const misses = sessionMisses([...removals(), recallOf("o1"), recallOf("o2"), recallOf("d1")]);
    expect(missesLine(misses)).toBe(
      "Misses (recalled or restored): outputs 2 of 10 (none-needed 2); keeping more (step 1 of 3); stale reads 1 of 1 (changed-on-disk 1).",
    );
  });

  it("names an output's joined segment reasons as one reason, most frequent first", () => {
    const misses = sessionMisses([
      record("rec1", [
        result("o1", "large", "distilled", "chunks,none-needed"),
        result("o2", "large", "removed", "none-needed"),
        result("o3", "large", "removed", "none-needed"),
      ]),
      recallOf("o1"),
      recallOf("o2"),
      recallOf("o3"),
    ]);
    expect(missesLine(misses)).toBe(
      "Misses (recalled or restored): outputs 3 of 3 (none-needed 2, chunks + none-needed 1); keeping more (step 2 of 3).",
    );
  });
});
