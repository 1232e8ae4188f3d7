// The money view on small sessions computed by hand: both arms through the prompt-cache model, the
// guard's Anthropic pins, idle gaps, Codex losing its cache on an edit, calibration on recorded usage,
// and each pass's payback. A piece of 4·n characters is n tokens when nothing was recorded.
import { describe, expect, it } from "vitest";
import type { CacheBehaviour, CacheProfile } from "../../../../src/core/cache/cache-behaviour.ts";
import type { Prices } from "../../../../src/core/cache/prompt-cache.ts";
import type { Piece, PieceKind, Usage } from "../../../../src/core/replay/calibrate.ts";
import { type MoneyRequest, priceSession } from "../../../../src/core/replay/money.ts";

const SONNET = { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 };
const CODEX = { input: 1.25, output: 10, cacheRead: 0.125, cacheWrite: 0 };
const MIN = 60_000;
const M = "anthropic/claude-sonnet-4-5";

const sys: Piece = { id: "system", key: "system", chars: 0, origChars: 0, kind: "system" };
const p = (id: string, tokens: number, kind: PieceKind = "other"): Piece => ({
  id,
  key: id,
  chars: tokens * 4,
  origChars: tokens * 4,
  kind,
});
/** The piece `of` after an edit that left `tokens` of it. */
const edited = (of: Piece, tokens: number): Piece => ({ ...of, key: `${of.id}@edit`, chars: tokens * 4 });

const req = (n: number, at: number, off: Piece[], on = off, usage?: Usage): MoneyRequest => ({
  n,
  at,
  model: M,
  off,
  on,
  outputChars: 0,
  ...(usage ? { usage } : {}),
});
const BEHAVIOUR = { anthropic: "explicit", openai: "automatic", "openai-codex": "codex", none: "none" } as const;
/** A profile as cache-behaviour learns it, fixed by hand. */
const profileOf = (behaviour: CacheBehaviour, prices?: Prices, ttlMs = 5 * 60_000): CacheProfile => ({
  behaviour,
  behaviourSource: "pi",
  why: "test",
  pins: behaviour === "explicit",
  ...(prices ? { prices } : {}),
  priceSource: prices ? "registry" : "none",
  ttlMs,
  ttlWhy: "test",
  requests: 0,
  aside: [],
});
const pricing = (family: keyof typeof BEHAVIOUR, prices = SONNET) =>
  new Map<string, CacheProfile>([[M, profileOf(BEHAVIOUR[family], prices)]]);

describe("anthropic, guard off and on", () => {
  const u1 = p("u1", 2000, "question");
  const a1 = p("a1", 500);
  const t1 = p("t1", 20_000, "toolResult");
  const a2 = p("a2", 300);
  const t2 = p("t2", 1000, "toolResult");
  const first = [sys, u1, a1, t1];
  const second = [...first, a2, t2];
  const secondOn = [sys, u1, a1, edited(t1, 500), a2, t2];

  it("an edit rewrites from the changed piece, and the pin on the question still reads", () => {
    const m = priceSession(
      [req(1, 0, first), req(2, MIN, second, secondOn)],
      pricing("anthropic"),
      [{ pass: 1, afterRequest: 1, edited: true, classifier: 0 }],
      "test",
    );
    // Off: request 2 reads the 22,500 request 1 wrote and writes the new 1,300.
    expect(m.off).toMatchObject({ input: 0, cacheRead: 22_500, cacheWrite: 22_500 + 1300 });
    // On: the question (2,000) still reads; u1's end to the end (500 + 500 + 300 + 1,000) is written.
    expect(m.on).toMatchObject({ input: 0, cacheRead: 2000, cacheWrite: 22_500 + 2300 });
    const r2Off = (22_500 * 0.3 + 1300 * 3.75) / 1e6;
    const r2On = (2000 * 0.3 + 2300 * 3.75) / 1e6;
    expect(m.passes).toEqual([{ pass: 1, afterRequest: 1, rewrite: r2On - r2Off, classifier: 0, paidBackAt: 2 }]);
    expect(m.net).toBeCloseTo(r2Off - r2On, 12);
    expect(m.cumulative.map((c) => c.n)).toEqual([1, 2]);
  });

  it("an idle gap longer than the TTL makes the next request cold in both arms", () => {
    const warm = priceSession([req(1, 0, first), req(2, 4 * MIN, second)], pricing("anthropic"), [], "test");
    expect(warm.off.cacheRead).toBe(22_500);
    const cold = priceSession([req(1, 0, first), req(2, 6 * MIN, second)], pricing("anthropic"), [], "test");
    expect(cold.off).toMatchObject({ cacheRead: 0, cacheWrite: 22_500 + 23_800 });
    expect(cold.on).toMatchObject({ cacheRead: 0, cacheWrite: 22_500 + 23_800 });
  });

  it("a pass whose rewrite is never paid back says so, with the classifier's cost counted", () => {
    // Editing a small output costs the rewrite of everything after it and saves almost nothing.
    const small = [sys, u1, a1, p("t1", 1200, "toolResult"), p("a2", 300), p("t2", 20_000, "toolResult")];
    const smallOn = [sys, u1, a1, edited(small[3] as Piece, 1100), ...small.slice(4)];
    const m = priceSession(
      [req(1, 0, small), req(2, MIN, [...small, p("a3", 10)], [...smallOn, p("a3", 10)])],
      pricing("anthropic"),
      [{ pass: 1, afterRequest: 1, edited: true, classifier: 0.001 }],
      "test",
    );
    expect(m.passes[0]?.rewrite).toBeGreaterThan(0);
    expect(m.passes[0]?.paidBackAt).toBeUndefined();
    expect(m.net).toBeLessThan(0);
  });
});

describe("openai-codex", () => {
  it("reads nothing on the request after an edit, where the guard-off arm reads its prefix", () => {
    const u1 = p("u1", 2000, "question");
    const a1 = p("a1", 100);
    const t1 = p("t1", 3000, "toolResult");
    const more = [p("a2", 100), p("u2", 50, "question")];
    const m = priceSession(
      [
        req(1, 0, [sys, u1]),
        req(2, MIN, [sys, u1, a1, t1]),
        req(3, 2 * MIN, [sys, u1, a1, t1, ...more], [sys, u1, a1, edited(t1, 300), ...more]),
      ],
      pricing("openai-codex", CODEX),
      [{ pass: 1, afterRequest: 2, edited: true, classifier: 0 }],
      "test",
    );
    // Request 2 shares 2,000 tokens: 1,024 + 7 steps of 128. Request 3 off shares 5,100: 1,024 + 31 steps.
    expect(m.off.cacheRead).toBe(1920 + 4992);
    expect(m.on.cacheRead).toBe(1920);
    expect(m.on.input).toBe(2000 + (5100 - 1920) + (2000 + 100 + 300 + 150));
    expect(m.passes[0]?.paidBackAt).toBeUndefined();
  });
});

describe("calibration on recorded usage", () => {
  const usage = (cacheRead: number, cacheWrite: number, cost = 0): Usage => ({
    input: 0,
    output: 0,
    cacheRead,
    cacheWrite,
    cost,
  });

  it("scales the pieces to the recorded totals, replays a recorded miss in both arms, and has no error", () => {
    // Characters say 2,000, 1,100 and 500 tokens; the provider counted 3,000 (system included), 1,500, 500.
    const u1 = p("u1", 2000, "question");
    const grow = [p("a1", 100), p("t1", 1000, "toolResult")];
    const last = [p("a2", 400), p("u2", 100, "question")];
    const recorded = [usage(0, 3000, 0.01125), usage(3000, 1500, 0.006525), usage(0, 5000, 0.01875)];
    const m = priceSession(
      [
        req(1, 0, [sys, u1], undefined, recorded[0]),
        req(2, MIN, [sys, u1, ...grow], undefined, recorded[1]),
        req(3, 2 * MIN, [sys, u1, ...grow, ...last], undefined, recorded[2]),
      ],
      pricing("anthropic"),
      [],
      "test",
    );
    expect(m.calibrated).toBe(true);
    expect(m.off).toMatchObject({ input: 0, cacheRead: 3000, cacheWrite: 9500 });
    expect(m.recorded).toMatchObject({ cacheRead: 3000, cacheWrite: 9500 });
    expect(m.error).toEqual({ input: 0, cacheRead: 0, cacheWrite: 0, dollars: expect.closeTo(0, 9) });
    expect(m.on.cacheRead).toBe(3000);
  });

  it("a session without usage is uncalibrated and a model without prices is unpriced", () => {
    const m = priceSession([req(1, 0, [sys, p("u1", 10)])], new Map([[M, profileOf("none")]]), [], "t");
    expect(m).toMatchObject({ calibrated: false, priced: false, off: { input: 10, dollars: 0 } });
    expect(m.error).toBeUndefined();
  });
});
