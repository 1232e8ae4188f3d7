// The guard-off arm of a session recorded with the guard on, and a provider that honours part of the
// cache, on sessions small enough to follow by hand. A piece of 4·n characters is n tokens.
import { describe, expect, it } from "vitest";
import type { CacheProfile } from "../../../../src/core/cache/cache-behaviour.ts";
import type { Piece, PieceKind, Usage } from "../../../../src/core/replay/calibrate.ts";
import { type MoneyRequest, priceSession } from "../../../../src/core/replay/money.ts";
import { honoured, learnHonour, newTally } from "../../../../src/core/replay/money-fit.ts";

const SONNET = { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 };
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
const edited = (of: Piece, tokens: number): Piece => ({ ...of, key: `${of.id}@edit`, chars: tokens * 4 });
const profiles = new Map<string, CacheProfile>([
  [
    M,
    {
      behaviour: "explicit",
      behaviourSource: "recorded",
      why: "test",
      pins: true,
      prices: SONNET,
      priceSource: "recorded",
      ttlMs: 5 * MIN,
      ttlWhy: "test",
      requests: 0,
      aside: [],
    },
  ],
]);
const usage = (input: number, cacheRead: number, cacheWrite: number): Usage => ({
  input,
  cacheRead,
  cacheWrite,
  output: 0,
  cost: (input * 3 + cacheRead * 0.3 + cacheWrite * 3.75) / 1e6,
});

describe("a session recorded with the guard on", () => {
  const u1 = p("u1", 2000, "question");
  const t1 = p("t1", 20_000, "toolResult");
  const a1 = p("a1", 500);
  const t2 = p("t2", 1000, "toolResult");
  const off1 = [sys, u1, t1];
  const off2 = [...off1, a1, t2];
  const on2 = [sys, u1, edited(t1, 500), a1, t2];
  // The system prompt is 1,000 tokens. Request 1 recorded its whole prompt; request 2 the guarded one
  // (4,000 + 500 + 1,000 + 500 = 5,000 with the edit in place).
  const rec1 = usage(0, 0, 23_000);
  const rec2 = usage(0, 3000, 2000);
  const requests = (withRec: boolean): MoneyRequest[] => [
    { n: 1, at: 0, model: M, off: off1, on: off1, outputChars: 0, usage: rec1, ...(withRec ? { rec: off1 } : {}) },
    { n: 2, at: MIN, model: M, off: off2, on: on2, outputChars: 0, usage: rec2, ...(withRec ? { rec: on2 } : {}) },
  ];

  it("prices guard off as the session without the edit, fitted on the request before it", () => {
    const m = priceSession(requests(true), profiles, [], "test");
    // Request 2 guard off: it reads the 23,000 request 1 wrote and writes the 1,500 new tokens.
    expect(m.off).toMatchObject({ input: 0, cacheRead: 23_000, cacheWrite: 23_000 + 1500 });
    expect(m.fit).toMatchObject({ requests: 1, of: 2, firstEdited: 2 });
    // Compared with the recording only where the recording is the guard-off prompt.
    expect(m.recorded?.cacheWrite).toBe(23_000);
    expect(m.error?.cacheWrite).toBe(0);
  });

  it("taken as the guard-off prompt, the guarded usage shrinks the guard-off arm (the bug)", () => {
    const m = priceSession(requests(false), profiles, [], "test");
    // Fitted to the guarded 5,000 tokens: the arm no longer holds the 20,000-token tool result.
    expect(m.off.cacheRead + m.off.cacheWrite + m.off.input).toBeLessThan(23_000 + 23_000);
    expect(m.fit).toMatchObject({ requests: 2, of: 2 });
  });

  it("a read cut short by the guard's own edit is no provider miss", () => {
    const m = priceSession(requests(true), profiles, [], "test");
    const model = m.models.find((x) => x.model === M);
    expect(model?.calibration?.partialMisses).toBe(0);
    expect(m.on.cacheRead).toBeGreaterThan(0);
  });
});

describe("a provider that honours part of the cache", () => {
  it("learns the share of writes it bills and prices the rest as uncached input", () => {
    const t = newTally();
    t.requests = 10;
    t.sim = { input: 0, cacheRead: 1_000_000, cacheWrite: 1_000_000, output: 0, dollars: 0 };
    // Billed: a quarter of the writes, the rest as input (MiniMax's Anthropic endpoint).
    t.recorded = { input: 750_000, cacheRead: 1_000_000, cacheWrite: 250_000, output: 0, dollars: 0 };
    t.recorded.dollars = (750_000 * 3 + 1_000_000 * 0.3 + 250_000 * 3.75) / 1e6;
    const h = learnHonour(t, SONNET);
    expect(h).toEqual({ cacheWrite: 0.25, cacheRead: 1 });
    expect(honoured(t.sim, h)).toEqual({ input: 750_000, cacheRead: 1_000_000, cacheWrite: 250_000, output: 0 });
  });

  it("keeps the full cache when the provider bills what the model simulates, or when it would fit worse", () => {
    const t = newTally();
    t.requests = 10;
    t.sim = { input: 0, cacheRead: 1_000_000, cacheWrite: 1_000_000, output: 0, dollars: 0 };
    t.recorded = { input: 50_000, cacheRead: 1_000_000, cacheWrite: 950_000, output: 0, dollars: 4.2 };
    expect(learnHonour(t, SONNET)).toBeUndefined();
    // Fewer writes, but the bill is the full cache's: shifting writes to input moves away from it.
    t.recorded = { input: 0, cacheRead: 1_000_000, cacheWrite: 500_000, output: 0, dollars: 4.05 };
    expect(learnHonour(t, SONNET)).toBeUndefined();
  });

  it("names a model whose fit still misses the recorded dollars by more than 10%", () => {
    const u1 = p("u1", 10_000, "question");
    const a = p("a", 100);
    // The provider billed the second request at three times what any cache model says.
    const m = priceSession(
      [
        { n: 1, at: 0, model: M, off: [sys, u1], on: [sys, u1], outputChars: 0, usage: usage(0, 0, 10_000) },
        {
          n: 2,
          at: MIN,
          model: M,
          off: [sys, u1, a],
          on: [sys, u1, a],
          outputChars: 0,
          usage: { ...usage(0, 10_000, 100), cost: 0.2 },
        },
      ],
      profiles,
      [],
      "test",
    );
    expect(m.misses).toEqual([M]);
    expect(m.models.find((x) => x.model === M)?.calibration?.misses).toBe(true);
  });
});
