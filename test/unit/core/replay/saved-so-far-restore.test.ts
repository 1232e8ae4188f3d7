// The live footer's arms around a restore and a recall: a restore shows the original from the moment the
// user asked (Pi's context event puts it back before the edit lands), the edit that lands with the original
// changes nothing more, and a recall's result is the guard's doing: the session without the guard has none.
import { describe, expect, it } from "vitest";
import type { CacheProfile } from "../../../../src/core/cache/cache-behaviour.ts";
import type { PieceKind } from "../../../../src/core/replay/calibrate.ts";
import { type LedgerEntry, savedSoFar } from "../../../../src/core/replay/saved-so-far.ts";

const M = "host/model";
/** No cache, $1 per million input tokens: an arm's dollars are its prompt tokens over a million. */
const profiles = new Map<string, CacheProfile>([
  [
    M,
    {
      behaviour: "none",
      behaviourSource: "pi",
      why: "test",
      pins: false,
      prices: { input: 1, output: 0, cacheRead: 0, cacheWrite: 0 },
      priceSource: "registry",
      ttlMs: 300_000,
      ttlWhy: "test",
      requests: 0,
      aside: [],
    },
  ],
]);

const entry = (id: string, chars: number, kind: PieceKind = "other", extra: Partial<LedgerEntry> = {}) =>
  ({ id, type: "message", chars, messages: 1, kind, ...extra }) as LedgerEntry;
const request = (id: string) => entry(id, 200, "other", { request: { at: 0, model: M, outputChars: 0 } });
const edit = (id: string, target: string, chars: number): LedgerEntry => ({
  id,
  type: "context_edit",
  chars: 0,
  messages: 0,
  kind: "other",
  edit: { targetId: target, chars, messages: 1 },
});

describe("the live arms around a restore and a recall", () => {
  it("a restore shows the original at once; a recall's result is in guard on only", () => {
    const ledger: LedgerEntry[] = [
      entry("q", 400, "question"),
      entry("t1", 40_000, "toolResult"),
      request("a1"),
      edit("e1", "t1", 800),
      request("a2"),
      // The user's /guard restore: the original is back in the very next request.
      { id: "p1", type: "custom", chars: 0, messages: 0, kind: "other", restore: ["t1"] },
      request("a3"),
      // The restore lands at the boundary as an edit with the original.
      edit("e2", "t1", 40_000),
      request("a4"),
      entry("r1", 8000, "toolResult", { recall: true }),
      request("a5"),
    ];
    const saved = savedSoFar(ledger, profiles);
    // Tokens (chars ÷ 4) of each request's prompt, guard on and off.
    const on = [10_100, 100 + 200 + 50, 10_100 + 100, 10_100 + 150, 10_100 + 200 + 2000];
    const off = [10_100, 10_100 + 50, 10_100 + 100, 10_100 + 150, 10_100 + 200];
    const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
    expect(saved.on * 1e6).toBeCloseTo(sum(on), 6);
    expect(saved.off * 1e6).toBeCloseTo(sum(off), 6);
  });
});
