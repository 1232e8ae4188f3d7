// Calibrated token counts of edited pieces. A short question can take in a recorded growth far beyond its
// characters (the host added something beside it); an edit that lengthens it (an omitted exchange's stub
// on its prompt) must add the stub's own tokens, not multiply that growth, so a prompt with fewer
// characters is never priced above a larger one.
import { describe, expect, it } from "vitest";
import type { CacheProfile } from "../../../../src/core/cache/cache-behaviour.ts";
import { type Piece, type PieceKind, TokenCalibrator, type Usage } from "../../../../src/core/replay/calibrate.ts";
import { type MoneyRequest, priceSession } from "../../../../src/core/replay/money.ts";

const sys: Piece = { id: "system", key: "system", chars: 0, origChars: 0, kind: "system" };
const p = (id: string, chars: number, kind: PieceKind = "other"): Piece => ({
  id,
  key: id,
  chars,
  origChars: chars,
  kind,
});
const edited = (of: Piece, chars: number): Piece => ({ ...of, key: `${of.id}@edit`, chars });
const usage = (input: number): Usage => ({ input, output: 0, cacheRead: 0, cacheWrite: 0, cost: 0 });

/** A calibrator whose question `u2` (92 characters, 23 tokens by estimate) took in 4,000 recorded tokens. */
function swollen(): { cal: TokenCalibrator; u2: Piece } {
  const cal = new TokenCalibrator();
  const u1 = p("u1", 400, "question");
  const u2 = p("u2", 92, "question");
  cal.off([sys, u1], 1100);
  cal.off([sys, u1, u2], 5100);
  return { cal, u2 };
}

describe("an edited piece's tokens", () => {
  it("grow by the estimate of the characters added, and shrink with the characters kept", () => {
    const { cal, u2 } = swollen();
    expect(cal.onPiece(u2)).toBe(4000);
    expect(cal.onPiece(edited(u2, 92 + 600))).toBe(4000 + 150);
    expect(cal.onPiece(edited(u2, 46))).toBe(2000);
  });

  it("never count more than the original plus what was added, nor fewer for more characters", () => {
    const { cal, u2 } = swollen();
    let before = -1;
    for (let chars = 0; chars <= 2000; chars += 23) {
      const t = cal.onPiece(edited(u2, chars));
      expect(t).toBeLessThanOrEqual(4000 + Math.max(0, Math.ceil((chars - 92) / 4)));
      expect(t).toBeGreaterThanOrEqual(before);
      before = t;
    }
  });
});

describe("a smaller guard-on prompt", () => {
  it("is never priced with more uncached tokens than the guard-off one", () => {
    const model = "openrouter/qwen/qwen3-coder";
    const profile: CacheProfile = {
      behaviour: "none",
      behaviourSource: "pi",
      why: "test",
      pins: false,
      prices: { input: 0.22, output: 0.95, cacheRead: 0, cacheWrite: 0 },
      priceSource: "registry",
      ttlMs: 0,
      ttlWhy: "test",
      requests: 0,
      aside: [],
    };
    const u1 = p("u1", 400, "question");
    const u2 = p("u2", 92, "question");
    const a2 = p("a2", 200);
    const t2 = p("t2", 4000, "toolResult");
    const off = [sys, u1, u2, a2, t2];
    // The exchange of u2 omitted: its stub (longer than the question) stands in for it, its output is gone.
    const on = [sys, u1, edited(u2, 692), a2];
    const req = (n: number, offPieces: Piece[], onPieces: Piece[], input: number): MoneyRequest => ({
      n,
      at: n * 60_000,
      model,
      off: offPieces,
      on: onPieces,
      outputChars: 0,
      usage: usage(input),
    });
    const m = priceSession(
      [req(1, [sys, u1], [sys, u1], 1100), req(2, [sys, u1, u2], [sys, u1, u2], 5100), req(3, off, on, 6150)],
      new Map([[model, profile]]),
      [{ pass: 1, afterRequest: 2, edited: true, classifier: 0 }],
      "test",
    );
    const chars = (ps: Piece[]) => ps.reduce((a, x) => a + x.chars, 0);
    expect(chars(on)).toBeLessThan(chars(off));
    // Requests 1 and 2 are alike; request 3's guard-on prompt drops t2's 1,000 tokens and adds the stub's 150.
    expect(m.off.input - m.on.input).toBe(1000 - 150);
    expect(m.on.dollars).toBeLessThan(m.off.dollars);
  });
});
