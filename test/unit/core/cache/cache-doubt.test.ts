// A cache model the bill contradicts is not acted on. A branch billed at a long-context tier the learned
// prices cannot explain misses its recorded dollars; the live money view names the model, and the gates'
// view for it falls back from "no cache, every edit free" to the dearer prior (automatic caching at list
// prices), without pins. `/guard` says which view the last pass gated on.
import { describe, expect, it } from "vitest";
import { rewriteFactor } from "../../../../src/core/cache/break-even.ts";
import { breakEvenView } from "../../../../src/core/cache/cache-behaviour.ts";
import { gateView } from "../../../../src/core/cache/cache-doubt.ts";
import type { Prices } from "../../../../src/core/cache/prompt-cache.ts";
import type { PieceKind } from "../../../../src/core/replay/calibrate.ts";
import { type LedgerEntry, savedSoFar } from "../../../../src/core/replay/saved-so-far.ts";
import { DEFAULT_CONFIG } from "../../../../src/core/shared/config.ts";
import { hostCacheView } from "../../../../src/main/pass/pass-pipeline.ts";
import { type AssistantLike, learnProfiles } from "../../../../src/main/replay/money-log.ts";
import type { PriceBook } from "../../../../src/main/replay/prices.ts";
import { statusReport } from "../../../../src/main/session/report.ts";

const LIST: Prices = { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 };
const model = { api: "openai-completions", provider: "host", id: "tiered" };
const KEY = "host/tiered";
const book: PriceBook = { model: () => ({ info: model, list: LIST }) };
/** Above this prompt the host bills ten times the input price (a long-context tier). */
const TIER = 50_000;

/** A reply as Pi records it on a host without a cache: the tier's price above TIER prompt tokens. */
function reply(at: number, input: number): AssistantLike {
  const rate = input > TIER ? 10 * LIST.input : LIST.input;
  const cost = { input: (input * rate) / 1e6, output: (50 * LIST.output) / 1e6, cacheRead: 0, cacheWrite: 0 };
  return {
    api: model.api,
    provider: model.provider,
    model: model.id,
    timestamp: at,
    usage: { input, output: 50, cacheRead: 0, cacheWrite: 0, cost: { ...cost, total: cost.input + cost.output } },
  };
}

const entry = (id: string, chars: number, kind: PieceKind, extra: Partial<LedgerEntry> = {}): LedgerEntry => ({
  id,
  type: "message",
  chars,
  messages: 1,
  kind,
  ...extra,
});

/** Two long requests first (a 240k-character read), then short ones once it was edited away. */
function tieredBranch() {
  const replies = [reply(0, 61_000), reply(60_000, 62_000)];
  for (let i = 2; i < 8; i++) replies.push(reply(i * 60_000, 2_000 + 100 * i));
  const { profiles, heads } = learnProfiles(
    replies.map((message, i) => ({ n: i + 1, message, entryTime: i * 60_000 })),
    book,
  );
  const ledger: LedgerEntry[] = [entry("q1", 400, "question"), entry("t1", 240_000, "toolResult")];
  heads.forEach((h, i) => {
    if (i === 2) {
      const edit = { targetId: "t1", chars: 200, messages: 1 };
      ledger.push({ id: "e1", type: "context_edit", chars: 0, messages: 0, kind: "other", edit });
    }
    if (i >= 2) ledger.push(entry(`q${i}`, 400, "question"));
    ledger.push(
      entry(`a${i}`, 200, "other", {
        request: { at: h.at, model: KEY, outputChars: 200, ...(h.usage ? { usage: h.usage } : {}) },
      }),
    );
  });
  return { ledger, profiles };
}

describe("a cache model the bill contradicts", () => {
  it("the live money view names the model whose fit misses its recorded dollars", () => {
    const { ledger, profiles } = tieredBranch();
    expect(profiles.get(KEY)?.behaviour).toBe("none");
    const saved = savedSoFar(ledger, profiles);
    expect(saved.misses?.map((m) => m.model)).toEqual([KEY]);
    expect(saved.misses?.[0]?.error).toBeLessThan(-0.1);
  });

  it("the gates act on the dearer of the learned view and the prior, without pins", () => {
    const learned = breakEvenView(tieredBranch().profiles.get(KEY) as never);
    expect(learned.family).toBe("none");
    expect(gateView(learned, undefined, model, LIST)).toBe(learned);
    const doubted = gateView(learned, { model: KEY, error: -0.4 }, model, LIST);
    expect(doubted).toMatchObject({ family: "other", pins: false, doubt: { model: KEY } });
    // Learned, an edit's rewrite is free; doubted, it must pay back over as many requests as the prior says.
    expect(rewriteFactor(learned.family, learned.prices)).toBe(0);
    expect(rewriteFactor(doubted.family, doubted.prices)).toBeGreaterThan(10);
    // An Anthropic model whose lesson is already the dearer one keeps it, pins dropped.
    const explicit = { family: "anthropic" as const, prices: LIST, pins: true };
    const anthropic = { api: "anthropic-messages", provider: "anthropic", id: "claude" };
    expect(gateView(explicit, { model: "anthropic/claude", error: 0.2 }, anthropic, LIST)).toMatchObject({
      family: "anthropic",
      pins: false,
    });
  });

  it("hostCacheView gives the pass the conservative view only for the model the doubts name", () => {
    const replies = [reply(0, 3000), reply(1000, 3100), reply(2000, 3200)];
    const context = replies.map((m) => ({ messages: [{ role: "assistant", ...m }] })) as never;
    const ctxModel = { ...model, cost: LIST };
    expect(hostCacheView(context, ctxModel).family).toBe("none");
    expect(hostCacheView(context, ctxModel, [{ model: "other/model", error: 0.5 }]).family).toBe("none");
    const view = hostCacheView(context, ctxModel, [{ model: KEY, error: -0.4 }]);
    expect(view).toMatchObject({ family: "other", pins: false, doubt: { model: KEY, error: -0.4 } });
  });

  it("/guard says the lesson is not acted on, and which view the last pass gated on", () => {
    const base = {
      config: DEFAULT_CONFIG,
      found: { ok: true } as never,
      savings: { items: 0, chars: 0 } as never,
      branch: [],
      paused: { kind: "closed" } as never,
    };
    const dollars = { ...savedSoFar([], new Map()), misses: [{ model: KEY, error: -0.42 }] };
    const before = statusReport({ ...base, dollars });
    expect(before).toContain(`Cache model: ${KEY} misses its recorded dollars by −42.0% after fitting`);
    expect(before).toContain("the next pass gates edits on the conservative view");
    const after = statusReport({ ...base, dollars, gate: { family: "other", doubt: { model: KEY, error: -0.42 } } });
    expect(after.replace(/\s+/g, " ")).toContain(
      "the last pass gated edits on the conservative view (automatic prefix caching, the dearer of the learned one",
    );
  });
});
