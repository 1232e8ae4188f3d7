// When a handed-over run-end pass ends on the session's clock, and whether its drafts reach the next
// run's first request.
import { describe, expect, it } from "vitest";
import {
  DEFAULT_WAVE_MS,
  endsWithinBudget,
  handedOverEndMs,
  landsBeforeNextRequest,
  wavesOf,
} from "../../../../src/core/replay/handover-timing.ts";

const timing = { settleBudgetMs: 150, timeoutMs: 8000, waves: 1, waveMs: DEFAULT_WAVE_MS };

describe("wavesOf", () => {
  it("counts the calls through the concurrency slots", () => {
    expect(wavesOf(0, 6)).toBe(0);
    expect(wavesOf(1, 6)).toBe(1);
    expect(wavesOf(6, 6)).toBe(1);
    expect(wavesOf(7, 6)).toBe(2);
    expect(wavesOf(13, 6)).toBe(3);
    expect(wavesOf(3, 1)).toBe(3);
  });

  it("takes a concurrency below one as one", () => {
    expect(wavesOf(3, 0)).toBe(3);
    expect(wavesOf(Number.NaN, 6)).toBe(0);
  });
});

describe("handedOverEndMs", () => {
  it("is the budget spent, then the waves", () => {
    expect(handedOverEndMs(timing)).toBe(150 + DEFAULT_WAVE_MS);
    expect(handedOverEndMs({ ...timing, waves: 3, waveMs: 500 })).toBe(1650);
  });

  it("never outlives the pass's deadline", () => {
    expect(handedOverEndMs({ ...timing, waves: 20 })).toBe(8000);
  });
});

describe("landsBeforeNextRequest", () => {
  it("the prompt after the pass ended sees its drafts; one before does not", () => {
    // A gateway answering 1.2–1.3 s after the run end: before a pass of one wave at the default latency.
    expect(landsBeforeNextRequest(1_250, timing)).toBe(false);
    expect(landsBeforeNextRequest(1_350, timing)).toBe(true);
    expect(landsBeforeNextRequest(1_250, { ...timing, waveMs: 500 })).toBe(true);
    // More waves take longer.
    expect(landsBeforeNextRequest(2_000, { ...timing, waves: 2 })).toBe(false);
  });

  it("a prompt that comes after the deadline always finds the pass ended", () => {
    expect(landsBeforeNextRequest(8_000, { ...timing, waves: 40 })).toBe(true);
    expect(landsBeforeNextRequest(7_999, { ...timing, waves: 40 })).toBe(false);
  });

  it("calls that fit in the settle budget were not handed over", () => {
    expect(endsWithinBudget({ ...timing, waveMs: 100 })).toBe(true);
    expect(landsBeforeNextRequest(0, { ...timing, waveMs: 100 })).toBe(true);
    expect(endsWithinBudget(timing)).toBe(false);
  });

  it("a prompt's wait covers the last answers, never calls not yet sent", () => {
    const waiting = { ...timing, waves: 2, promptWaitMs: 100 };
    // The pass ends at 2,550 ms; its last wave went at 1,350 ms.
    expect(landsBeforeNextRequest(2_460, waiting)).toBe(true);
    expect(landsBeforeNextRequest(2_440, waiting)).toBe(false);
    expect(landsBeforeNextRequest(1_300, { ...waiting, waveMs: 100, waves: 30, timeoutMs: 1_400 })).toBe(false);
  });
});
