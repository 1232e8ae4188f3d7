import { describe, expect, it } from "vitest";
import type { Prices, PromptBlock } from "../../../../src/core/cache/prompt-cache.ts";
import { attributeRouting, type PrefixParts, routingMoney } from "../../../../src/core/routing/routing-money.ts";

// Anthropic's list prices for Sonnet: writes cost 1.25× input, reads 0.1×.
const prices: Prices = { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 };
const pricing = { family: "anthropic" as const, prices };
const M = 1e6;

/** A conversation that grows by one 2,000-token block per request, a minute apart. */
function tails(n: number): PromptBlock[][] {
  const out: PromptBlock[][] = [];
  for (let i = 1; i <= n; i++) out.push(Array.from({ length: i }, (_, j) => ({ key: `m${j}`, tokens: 2000 })));
  return out;
}

describe("routingMoney: the catalog's cost in both arms", () => {
  it("a smaller prefix that never changes is written once and read after, in both arms", () => {
    const requests = tails(3).map((tail, i) => ({
      at: i * 60_000,
      output: 0,
      tail,
      offPrefix: 30_000,
      onPrefix: 5_000,
      onChanged: false,
    }));
    const m = routingMoney(requests, pricing);
    // Request 1 writes everything; each later one reads what the previous wrote and writes its new block.
    const cost = (prefix: number) =>
      ((prefix + 2000) * prices.cacheWrite +
        (prefix + 2000) * prices.cacheRead +
        2000 * prices.cacheWrite +
        (prefix + 4000) * prices.cacheRead +
        2000 * prices.cacheWrite) /
      M;
    expect(m.off).toBeCloseTo(cost(30_000), 10);
    expect(m.on).toBeCloseTo(cost(5_000), 10);
    expect(m.off - m.on).toBeCloseTo((25_000 * (prices.cacheWrite + 2 * prices.cacheRead)) / M, 10);
  });

  it("a set change rewrites the whole prompt behind the prefix, not only the prefix", () => {
    const base = tails(3).map((tail, i) => ({
      at: i * 60_000,
      output: 0,
      tail,
      offPrefix: 10_000,
      onPrefix: 10_000,
      onChanged: false,
    }));
    const steady = routingMoney(base, pricing);
    const changed = routingMoney(
      base.map((r, i) => (i === 2 ? { ...r, onChanged: true } : r)),
      pricing,
    );
    expect(steady.on).toBeCloseTo(steady.off, 10);
    // Request 3 reads nothing and writes prefix and all three blocks instead of reading 14,000 tokens.
    const extra = ((10_000 + 4000) * (prices.cacheWrite - prices.cacheRead)) / M;
    expect(changed.on - steady.on).toBeCloseTo(extra, 10);
    expect(changed.perRequest[2]?.on).toBeCloseTo(((10_000 + 6000) * prices.cacheWrite) / M, 10);
  });

  it("a recorded cold cache costs both arms the same write, so it is no routing cost", () => {
    const requests = tails(2).map((tail, i) => ({
      at: i * 60_000,
      output: 0,
      tail,
      offPrefix: 8_000,
      onPrefix: 8_000,
      onChanged: i === 1,
      cold: i === 1,
    }));
    const m = routingMoney(requests, pricing);
    expect(m.on).toBeCloseTo(m.off, 10);
  });
});

describe("attributeRouting", () => {
  it("splits the effect into catalog, bodies, tools and rewrites that add up to the net", () => {
    const parts: PrefixParts = {
      base: 6000,
      catalogAll: 3000,
      catalogOn: 200,
      bodies: 1500,
      toolsAll: 9000,
      toolsOn: 1000,
    };
    const requests = tails(4).map((tail, i) => ({ at: i * 60_000, output: 100, tail, onChanged: i === 2, parts }));
    const a = attributeRouting(requests, pricing);
    expect(a.skillsSaved).toBeGreaterThan(0);
    expect(a.toolsSaved).toBeGreaterThan(a.skillsSaved);
    expect(a.bodiesPaid).toBeGreaterThan(0);
    expect(a.rewritesPaid).toBeGreaterThan(0);
    expect(a.skillsSaved + a.toolsSaved - a.bodiesPaid - a.rewritesPaid).toBeCloseTo(a.net, 10);
    expect(a.off - a.on).toBeCloseTo(a.net, 10);
  });
});
