import { describe, expect, it } from "vitest";
import { formatProbability, interpret, oversizeDecision } from "../../../../src/core/distill/interpret.ts";
import type { Answer, ClassifierOutcome, SegmentDecision } from "../../../../src/core/shared/types.ts";

const t = { keepWholeThreshold: 0.7, focusWholeThreshold: 0.6, chunkKeepThreshold: 0.6, noneThreshold: 0.5 };
const chunks = [4, 5, 6, 7];

const bool = (probability: number): Answer => ({ type: "bool", probability });
const choice = (pick: string, probabilities: Record<string, number>): Answer => ({
  type: "choice",
  choice: pick,
  probabilities,
});

/** A stopped outcome with keep_whole, focus and per-chunk answers (chunks default to P = 0.1). */
function answered(kw: number, focus: Answer, perChunk: Record<number, number> = {}): ClassifierOutcome {
  const answers: Record<string, Answer> = { keep_whole: bool(kw), focus };
  for (const n of chunks) answers[`chunk_${n}`] = bool(perChunk[n] ?? 0.1);
  return { status: "stop", answers };
}

const sorted = (d: SegmentDecision) => [...d.keep].sort((a, b) => a - b);

describe("interpret rule 1: failures keep everything", () => {
  it("keeps all on error with a clipped message in the trace", () => {
    const d = interpret({ status: "error", error: `rate limited ${"x".repeat(100)}` }, chunks, t);
    expect(sorted(d)).toEqual(chunks);
    expect(d.reason).toBe("error");
    expect(d.trace.startsWith("error: rate limited")).toBe(true);
    expect(d.trace.length).toBeLessThanOrEqual("error: ".length + 60);
  });

  it("keeps all on timeout", () => {
    const d = interpret({ status: "timeout" }, chunks, t);
    expect(sorted(d)).toEqual(chunks);
    expect(d).toMatchObject({ reason: "timeout", trace: "timeout" });
  });

  it("keeps all when keep_whole or focus is missing or has the wrong type", () => {
    const focus = choice("none", { whole: 0.1, none: 0.9 });
    const cases: ClassifierOutcome[] = [
      { status: "stop" },
      { status: "stop", answers: { focus } },
      { status: "stop", answers: { keep_whole: bool(0.1) } },
      { status: "stop", answers: { keep_whole: focus, focus } },
      { status: "stop", answers: { keep_whole: bool(0.1), focus: bool(0.9) } },
    ];
    for (const outcome of cases) {
      const d = interpret(outcome, chunks, t);
      expect(d.reason).toBe("no-answer");
      expect(sorted(d)).toEqual(chunks);
    }
  });

  it("keeps all when a probability is NaN, above 1, negative or missing", () => {
    const none = (p: Record<string, number>) => choice("none", p);
    const cases = [
      answered(Number.NaN, none({ whole: 0.1, none: 0.9 })),
      answered(1.5, none({ whole: 0.1, none: 0.9 })),
      answered(-0.1, none({ whole: 0.1, none: 0.9 })),
      answered(0.1, none({ whole: 0.1, none: Number.POSITIVE_INFINITY })),
      answered(0.1, none({ whole: 0.1, none: 0.9, chunk_4: 1.5 })),
      answered(0.1, none({ whole: 0.1 })),
      answered(0.1, choice("chunk_99", { chunk_99: 0.9 })),
      { status: "stop", answers: { keep_whole: { type: "bool" }, focus: none({ none: 0.9 }) } },
    ] satisfies ClassifierOutcome[];
    for (const outcome of cases) {
      const d = interpret(outcome, chunks, t);
      expect(d.reason).toBe("no-answer");
      expect(sorted(d)).toEqual(chunks);
    }
  });
});

describe("interpret rules 2-7", () => {
  it("rule 2: keep_whole at the threshold keeps everything", () => {
    const d = interpret(answered(0.7, choice("none", { whole: 0.01, none: 0.99 })), chunks, t);
    expect(d.reason).toBe("whole-needed");
    expect(sorted(d)).toEqual(chunks);
    expect(d.trace).toBe("kw.70 focus=none:.99 keep all (whole-needed)");
  });

  it("rule 3: a confident whole focus keeps everything", () => {
    const d = interpret(answered(0.2, choice("whole", { whole: 0.6, none: 0.4 })), chunks, t);
    expect(d.reason).toBe("whole-chosen");
    expect(sorted(d)).toEqual(chunks);
    expect(d.trace).toBe("kw.20 focus=whole:.60 keep all (whole-chosen)");
  });

  it("rule 4: keeps chunks above the threshold plus the focus chunk whatever its own P", () => {
    const focus = choice("chunk_7", { whole: 0.1, none: 0.1, chunk_7: 0.52, chunk_5: 0.28 });
    const d = interpret(answered(0.15, focus, { 5: 0.6, 7: 0.05 }), chunks, t);
    expect(sorted(d)).toEqual([5, 7]);
    expect(d.reason).toBe("chunks");
    expect(d.trace).toBe("kw.15 focus=chunk_7:.52 keep 2/4");
  });

  it("rule 4: a missing or invalid chunk answer keeps that chunk", () => {
    const outcome = answered(0.1, choice("none", { whole: 0.1, none: 0.9 }));
    const answers = outcome.answers ?? {};
    delete answers.chunk_4;
    answers.chunk_6 = bool(Number.NaN);
    expect(sorted(interpret(outcome, chunks, t))).toEqual([4, 6]);
  });

  it("rule 4: reason all-chunks when every chunk passes", () => {
    const d = interpret(
      answered(0.3, choice("chunk_4", { chunk_4: 0.5 }), { 4: 0.9, 5: 0.9, 6: 0.9, 7: 0.9 }),
      chunks,
      t,
    );
    expect(d.reason).toBe("all-chunks");
    expect(d.trace).toBe("kw.30 focus=chunk_4:.50 keep 4/4");
  });

  it("rule 5: a confident none with nothing kept removes the segment", () => {
    const d = interpret(answered(0.05, choice("none", { whole: 0.1, none: 0.5, chunk_6: 0.4 })), chunks, t);
    expect(d.keep.size).toBe(0);
    expect(d.reason).toBe("none-needed");
    expect(d.trace).toBe("kw.05 focus=none:.50 keep 0/4");
  });

  it("rule 5 does not apply when some chunk passed its own question", () => {
    const d = interpret(answered(0.05, choice("none", { none: 0.9 }), { 6: 0.8 }), chunks, t);
    expect(sorted(d)).toEqual([6]);
    expect(d.reason).toBe("chunks");
  });

  it("rule 6: a weak whole with nothing kept keeps everything", () => {
    const d = interpret(answered(0.3, choice("whole", { whole: 0.45, none: 0.3, chunk_5: 0.25 })), chunks, t);
    expect(d.reason).toBe("whole-chosen");
    expect(sorted(d)).toEqual(chunks);
    expect(d.trace).toBe("kw.30 focus=whole:.45 keep all (whole-chosen)");
  });

  it("rule 6 does not apply when chunks passed their own questions", () => {
    const d = interpret(answered(0.3, choice("whole", { whole: 0.45 }), { 5: 0.9 }), chunks, t);
    expect(sorted(d)).toEqual([5]);
  });

  it("rule 7: a weak none keeps the chunk with the highest focus probability", () => {
    const focus = choice("none", { whole: 0.05, none: 0.4, chunk_4: 0.1, chunk_6: 0.3, chunk_7: 0.15 });
    const d = interpret(answered(0.1, focus), chunks, t);
    expect(sorted(d)).toEqual([6]);
    expect(d.reason).toBe("chunks");
    expect(d.trace).toBe("kw.10 focus=none:.40 keep 1/4");
  });

  it("rule 7 ignores focus probabilities of chunks outside the segment", () => {
    const focus = choice("none", { none: 0.4, chunk_1: 0.5, chunk_5: 0.1 });
    expect(sorted(interpret(answered(0.1, focus), chunks, t))).toEqual([5]);
  });
});

describe("traces and oversize", () => {
  it("formats probabilities with two digits and no leading zero", () => {
    expect([0.15, 0.5, 0.071, 0, 1, 0.999].map(formatProbability)).toEqual([".15", ".50", ".07", ".00", "1", "1"]);
  });

  it("keeps oversize segments whole", () => {
    const d = oversizeDecision([12]);
    expect(sorted(d)).toEqual([12]);
    expect(d.reason).toBe("oversize");
  });
});
