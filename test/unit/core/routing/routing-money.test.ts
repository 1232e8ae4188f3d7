// Routing's dollars through the money view's simulator: with no prefix to route every arm is pruning's
// guard-off arm to the cent; a prefix is priced in its arm and never calibrated away; a set change makes
// the next request write the prompt again; the parts add up to net.
import { describe, expect, it } from "vitest";
import type { CacheBehaviour, CacheProfile } from "../../../../src/core/cache/cache-behaviour.ts";
import type { Prices } from "../../../../src/core/cache/prompt-cache.ts";
import type { Piece, PieceKind, Usage } from "../../../../src/core/replay/calibrate.ts";
import { type MoneyRequest, priceSession } from "../../../../src/core/replay/money.ts";
import { type PrefixParts, RoutingMoney, type RoutingRequest } from "../../../../src/core/routing/routing-money.ts";

const SONNET: Prices = { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 };
const M = "anthropic/claude-sonnet-4-5";
const MIN = 60_000;
const sys: Piece = { id: "system", key: "system", chars: 0, origChars: 0, kind: "system" };
const p = (id: string, tokens: number, kind: PieceKind = "other"): Piece => ({
  id,
  key: id,
  chars: tokens * 4,
  origChars: tokens * 4,
  kind,
});
const profiles = (behaviour: CacheBehaviour) =>
  new Map<string, CacheProfile>([
    [
      M,
      {
        behaviour,
        behaviourSource: "pi",
        why: "test",
        pins: false,
        prices: SONNET,
        priceSource: "registry",
        ttlMs: 5 * MIN,
        ttlWhy: "test",
        requests: 0,
        aside: [],
      },
    ],
  ]);
const NO_PREFIX: PrefixParts = { catalogAll: 0, catalogOn: 0, bodies: 0, toolsAll: 0, toolsOn: 0 };
const ROUTED: PrefixParts = { catalogAll: 3000, catalogOn: 500, bodies: 0, toolsAll: 6000, toolsOn: 1000 };

/** A conversation growing by a question and a 2,000-token tool result per request, a minute apart. */
function session(n: number, usage?: (i: number, prompt: number) => Usage) {
  const prompts: Piece[][] = [];
  let pieces: Piece[] = [sys];
  for (let i = 0; i < n; i++) {
    pieces = [...pieces, p(`q${i}`, 100, "question"), p(`t${i}`, 2000, "toolResult")];
    prompts.push(pieces);
  }
  return prompts.map((off, i) => {
    const prompt = (i + 1) * 2100 + 4000;
    const u = usage?.(i, prompt);
    return { n: i + 1, at: i * MIN, model: M, off, on: off, outputChars: 400, ...(u ? { usage: u } : {}) };
  });
}

function routed(requests: MoneyRequest[], behaviour: CacheBehaviour, parts: (i: number) => PrefixParts, changeAt = -1) {
  const heads = requests.map(({ n, at, model, usage }) => ({ n, at, model, ...(usage ? { usage } : {}) }));
  const money = new RoutingMoney(heads, profiles(behaviour));
  requests.forEach((r, i) => {
    const { n, at, model, usage } = r;
    const request: RoutingRequest = {
      head: { n, at, model, ...(usage ? { usage } : {}) },
      off: r.off,
      outputChars: r.outputChars,
      parts: parts(i),
      onChanged: i === changeAt,
    };
    money.request(request);
  });
  return money.finish();
}

/** Usage an Anthropic provider records for a prompt that grows at its end: the new part written. */
const recorded = (i: number, prompt: number): Usage => {
  const read = i === 0 ? 0 : prompt - 2100;
  return { input: 0, output: 100, cacheRead: read, cacheWrite: prompt - read, cost: 0 };
};

describe("RoutingMoney: routing priced as pruning's guard-off arm", () => {
  for (const behaviour of ["explicit", "automatic", "none"] as const) {
    it(`with nothing to route, every arm is pruning's guard-off arm (${behaviour}, calibrated)`, () => {
      const requests = session(6, recorded);
      const pruning = priceSession(requests, profiles(behaviour), [], "");
      const r = routed(requests, behaviour, () => NO_PREFIX);
      expect(r.off).toBe(pruning.off.dollars);
      expect(r.on).toBe(pruning.off.dollars);
      expect(r.net).toBe(0);
    });
  }

  it("prices a prefix the recording did not hold on top of it, without calibrating it away", () => {
    const requests = session(4, (_i, prompt) => ({ input: prompt, output: 100, cacheRead: 0, cacheWrite: 0, cost: 0 }));
    const r = routed(requests, "none", () => ROUTED);
    // No cache: each request bills its recorded prompt plus the prefix, at the input price.
    const prompts = [1, 2, 3, 4].reduce((a, k) => a + k * 2100 + 4000, 0);
    const output = (4 * 100 * SONNET.output) / 1e6;
    expect(r.off).toBeCloseTo(((prompts + 4 * 9000) * SONNET.input) / 1e6 + output, 10);
    expect(r.on).toBeCloseTo(((prompts + 4 * 1500) * SONNET.input) / 1e6 + output, 10);
    expect(r.skillsSaved).toBeCloseTo((4 * 2500 * SONNET.input) / 1e6, 10);
    expect(r.toolsSaved).toBeCloseTo((4 * 5000 * SONNET.input) / 1e6, 10);
  });

  it("keeps the prefix whole where the host trimmed the recorded prompt", () => {
    // The host sent half of what the file holds: the conversation is scaled, the prefix is not.
    const requests = session(3, (_i, prompt) => ({
      input: Math.round(prompt / 2),
      output: 0,
      cacheRead: 0,
      cacheWrite: 0,
      cost: 0,
    }));
    const bare = routed(requests, "none", () => NO_PREFIX);
    const r = routed(requests, "none", () => ROUTED);
    expect(r.off - bare.off).toBeCloseTo((3 * 9000 * SONNET.input) / 1e6, 6);
  });

  it("a set change makes the next request write the whole prompt again; the parts add up to net", () => {
    const requests = session(6, recorded);
    const steady = routed(requests, "explicit", () => ROUTED);
    const changed = routed(requests, "explicit", (i) => (i < 3 ? ROUTED : { ...ROUTED, toolsOn: 1200 }), 3);
    expect(steady.rewritesPaid).toBe(0);
    expect(changed.rewritesPaid).toBeGreaterThan(0);
    // The rewrite at request 4 is the prompt read before, written again instead.
    const before = 3 * 2100 + 4000 + 500 + 1200;
    expect(changed.rewritesPaid).toBeCloseTo((before * (SONNET.cacheWrite - SONNET.cacheRead)) / 1e6, 6);
    const c = changed;
    expect(c.skillsSaved + c.toolsSaved - c.bodiesPaid - c.rewritesPaid).toBeCloseTo(c.net, 10);
    expect(c.net).toBeCloseTo(c.off - c.on, 10);
  });
});
