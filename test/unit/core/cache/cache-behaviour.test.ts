// Cache behaviour and prices learned from hand-computed sessions, one per API family, recorded the way
// Pi's provider code records usage (input net of cache tokens; cost per token kind from the model's
// prices): the behaviour, the prices the session pays, how long a prefix lives, what is set aside and
// why, and the money view built on the profile.
import { describe, expect, it } from "vitest";
import { rewriteFactor } from "../../../../src/core/cache/break-even.ts";
import {
  type AssistantRecord,
  breakEvenView,
  checkRequest,
  learnProfile,
  type ModelInfo,
  priceRequest,
  profileFromMessages,
} from "../../../../src/core/cache/cache-behaviour.ts";
import type { Prices } from "../../../../src/core/cache/prompt-cache.ts";
import type { Piece, PieceKind } from "../../../../src/core/replay/calibrate.ts";
import { type MoneyRequest, priceSession } from "../../../../src/core/replay/money.ts";

const MIN = 60_000;
const OPUS: Prices = { input: 5, output: 25, cacheRead: 0.5, cacheWrite: 6.25 };
const GEMINI: Prices = { input: 0.5, output: 3, cacheRead: 0.05, cacheWrite: 0 };
const GPT: Prices = { input: 1.25, output: 10, cacheRead: 0.125, cacheWrite: 0 };

interface Tok {
  input: number;
  cacheRead?: number;
  cacheWrite?: number;
  output?: number;
}

/** An assistant message as Pi writes it, its cost computed from `prices` the way pi-ai's calculateCost does. */
function message(model: ModelInfo, at: number, t: Tok, prices: Prices): AssistantRecord & { role: "assistant" } {
  const u = { input: t.input, output: t.output ?? 100, cacheRead: t.cacheRead ?? 0, cacheWrite: t.cacheWrite ?? 0 };
  const cost = {
    input: (u.input * prices.input) / 1e6,
    output: (u.output * prices.output) / 1e6,
    cacheRead: (u.cacheRead * prices.cacheRead) / 1e6,
    cacheWrite: (u.cacheWrite * prices.cacheWrite) / 1e6,
    total: 0,
  };
  cost.total = cost.input + cost.output + cost.cacheRead + cost.cacheWrite;
  return {
    role: "assistant",
    api: model.api,
    provider: model.provider,
    model: model.id,
    timestamp: at,
    usage: { ...u, totalTokens: u.input + u.output + u.cacheRead + u.cacheWrite, cost },
  };
}

const session = (model: ModelInfo, prices: Prices, toks: Tok[], gap = MIN) =>
  toks.map((t, i) => message(model, i * gap, t, prices));

describe("one session per API family", () => {
  it("bedrock-converse-stream with cachePoint: explicit writes with a premium, at the recorded prices", () => {
    // Pi marks the system prompt and the last user message with cachePoint; Bedrock reports inputTokens
    // net of the cache tokens (Pi's issue 8752 asks whether it always does: recorded usage decides here).
    const bedrock = {
      api: "bedrock-converse-stream",
      provider: "amazon-bedrock",
      id: "global.anthropic.claude-opus-4-5-v1:0",
    };
    const msgs = session(bedrock, OPUS, [
      { input: 40, cacheWrite: 12_000 },
      { input: 30, cacheRead: 12_000, cacheWrite: 3000 },
      { input: 20, cacheRead: 15_000, cacheWrite: 2500 },
    ]);
    const p = profileFromMessages(msgs, bedrock, OPUS);
    expect(p).toMatchObject({
      behaviour: "explicit",
      behaviourSource: "recorded",
      priceSource: "recorded",
      pins: false,
    });
    expect(p.prices?.cacheWrite).toBeCloseTo(6.25, 9);
    expect(p.prices?.cacheRead).toBeCloseTo(0.5, 9);
    expect(breakEvenView(p)).toMatchObject({ family: "anthropic", pins: false });
  });

  const automatic: Array<[string, ModelInfo, Prices]> = [
    [
      "google-generative-ai (implicit caching)",
      { api: "google-generative-ai", provider: "google", id: "gemini-3-flash-preview" },
      GEMINI,
    ],
    [
      "google-vertex (implicit caching)",
      { api: "google-vertex", provider: "google-vertex", id: "gemini-2.5-flash" },
      GEMINI,
    ],
    [
      "openai-completions without cache_control",
      { api: "openai-completions", provider: "deepseek", id: "deepseek-chat" },
      GPT,
    ],
    ["openai-responses", { api: "openai-responses", provider: "openai", id: "gpt-5.1-codex" }, GPT],
    ["azure-openai-responses", { api: "azure-openai-responses", provider: "azure", id: "gpt-5.1" }, GPT],
    ["mistral-conversations", { api: "mistral-conversations", provider: "mistral", id: "devstral-2512" }, GPT],
  ];
  for (const [name, model, prices] of automatic) {
    it(`${name}: reads without writes`, () => {
      const msgs = session(model, prices, [
        { input: 9000 },
        { input: 1200, cacheRead: 8960 },
        { input: 700, cacheRead: 10_112 },
      ]);
      const p = profileFromMessages(msgs, model, prices);
      expect(p).toMatchObject({ behaviour: "automatic", priceSource: "recorded" });
      expect(p.prices?.cacheRead).toBeCloseTo(prices.cacheRead, 9);
      expect(breakEvenView(p).family).toBe("other");
    });
  }

  it("openai-completions with cache_control (OpenRouter's anthropic/*): explicit", () => {
    const model = { api: "openai-completions", provider: "openrouter", id: "anthropic/claude-opus-4.5" };
    const msgs = session(model, OPUS, [
      { input: 10, cacheWrite: 8000 },
      { input: 10, cacheRead: 8000, cacheWrite: 900 },
    ]);
    expect(profileFromMessages(msgs, model, OPUS)).toMatchObject({ behaviour: "explicit", pins: false });
    // With no usage yet, Pi's code is the prior.
    expect(profileFromMessages([], model, OPUS)).toMatchObject({
      behaviour: "explicit",
      behaviourSource: "pi",
      priceSource: "registry",
    });
  });

  it("openai-codex-responses: reads without writes stay Codex (the prefix is lost after a change)", () => {
    const model = { api: "openai-codex-responses", provider: "openai-codex", id: "gpt-5.4" };
    const msgs = session(model, GPT, [
      { input: 9000 },
      { input: 800, cacheRead: 8960 },
      { input: 500, cacheRead: 9728 },
    ]);
    const p = profileFromMessages(msgs, model, GPT);
    expect(p.behaviour).toBe("codex");
    expect(breakEvenView(p).family).toBe("openai-codex");
  });

  it("a host that never reports a cache token: no caching, and an edit has nothing to pay for", () => {
    const model = { api: "openai-completions", provider: "lm-studio", id: "qwen3-14b" };
    const msgs = session(model, GPT, [{ input: 2000 }, { input: 2500 }, { input: 3000 }]);
    const p = profileFromMessages(msgs, model, GPT);
    expect(p.behaviour).toBe("none");
    const view = breakEvenView(p);
    expect(view.family).toBe("none");
    expect(rewriteFactor(view.family, view.prices)).toBe(0);
    // Two such requests are not yet evidence: Pi's prior (automatic caching) still weighs the rewrite.
    const early = breakEvenView(profileFromMessages(msgs.slice(0, 2), model, GPT));
    expect(early.family).toBe("other");
    expect(rewriteFactor(early.family, early.prices)).toBeGreaterThan(0);
  });
});

describe("plans, prices and untrusted usage", () => {
  const kimi = { api: "anthropic-messages", provider: "kimi-coding", id: "kimi-k2-thinking" };
  const LIST: Prices = { input: 0.6, output: 2.5, cacheRead: 0.15, cacheWrite: 0 };

  it("a free plan ($0 billed at a listed price): dollars not meaningful, decisions keep the list's ratios", () => {
    const msgs = session(kimi, { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, [
      { input: 5000, cacheWrite: 0 },
      { input: 300, cacheRead: 5000 },
      { input: 200, cacheRead: 5300 },
    ]);
    const p = profileFromMessages(msgs, kimi, LIST);
    expect(p).toMatchObject({ priceSource: "free", behaviour: "automatic" });
    expect(priceRequest({ input: 100, output: 1, cacheRead: 0, cacheWrite: 0 }, p)).toBeUndefined();
    expect(breakEvenView(p).prices).toEqual({ input: 0.6, cacheRead: 0.15, cacheWrite: 0 });
  });

  it("sets aside mirrors, empty usage, negative and absurd costs, and says why", () => {
    const gpt = { api: "openai-responses", provider: "openai", id: "gpt-5.1" };
    const good = message(gpt, 0, { input: 1000 }, GPT);
    const at = (n: number, m: object) => checkRequest(n, m, 0, GPT);
    expect(at(1, good).aside).toBeUndefined();
    expect(at(2, { provider: "openclaw", model: "delivery-mirror", usage: { input: 0 } }).aside).toMatch(/openclaw/);
    expect(at(3, { ...good, usage: { input: 0, output: 0 } }).aside).toMatch(/no usage/);
    expect(at(4, { ...good, usage: { input: "many" } }).aside).toBe("usage unreadable");
    expect(at(5, { ...good, usage: { input: 1000, cost: { total: -881_000 } } }).aside).toMatch(/negative cost/);
    const tiny = { input: 1000, output: 100, cost: { input: 1.25e-9, output: 1e-9, total: 2.25e-9 } };
    expect(at(6, { ...good, usage: tiny }).aside).toMatch(/× the list price/);
    // Tokens of a request whose cost is set aside still count; its cost does not.
    expect(at(6, { ...good, usage: tiny }).tokens?.input).toBe(1000);
  });

  it("sets aside token counts no context holds and costs no request has (issue 44)", () => {
    const gpt = { api: "openai-responses", provider: "openai", id: "gpt-5.1" };
    const good = message(gpt, 0, { input: 1000 }, GPT);
    const at = (m: object, list?: Prices) => checkRequest(1, m, 0, list);
    const usage = (u: object) => ({ ...good, usage: u });
    // As a session file holds them: JSON can carry 1e300 and MAX_VALUE; 1e309 parses to Infinity.
    const parsed = JSON.parse(
      `[{"input":1e300,"output":10},{"input":${Number.MAX_VALUE},"cacheRead":${Number.MAX_VALUE}},{"input":1e309}]`,
    ) as object[];
    const [huge, overflow, infinite] = parsed;
    for (const list of [GPT, undefined]) {
      for (const u of [huge, overflow, { input: 100, output: Number.MAX_VALUE }, { input: 10, cacheWrite1h: 1e300 }]) {
        const c = at(usage(u as object), list);
        expect(c.aside).toMatch(/token counts no context holds/);
        // Not even the tokens count: priced, they overflow the dollars.
        expect(c.tokens).toBeUndefined();
      }
      expect(at(usage(infinite as object), list)).toMatchObject({ aside: "usage unreadable" });
      expect(at(usage(infinite as object), list).tokens).toBeUndefined();
      // A cost of thousands of dollars for one request is set aside; its tokens still count.
      for (const cost of [{ total: 1e300 }, { input: 5000, total: 5000 }, { output: Number.MAX_VALUE }]) {
        const c = at(usage({ input: 1000, output: 100, cost }), list);
        expect(c.aside).toMatch(/cost no request has/);
        expect(c.cost).toBeUndefined();
        expect(c.tokens?.input).toBe(1000);
      }
    }
    // At the bounds, a real request still counts: a full 1M-token context at gpt-5.4-pro's long-context price.
    const full = { input: 1_000_000, output: 100_000, cost: { input: 60, output: 27, total: 87 } };
    expect(at(usage(full), { input: 60, output: 270, cacheRead: 0, cacheWrite: 0 })).toMatchObject({
      tokens: { input: 1_000_000 },
      cost: { total: 87 },
    });
    expect(at(usage(full), { input: 60, output: 270, cacheRead: 0, cacheWrite: 0 }).aside).toBeUndefined();
    // A plausible total hiding an absurd kind (2 cache-read tokens billed a cent) gives no price of that kind.
    const rounded = {
      input: 1000,
      cacheRead: 2,
      output: 100,
      cost: { input: 0.00125, output: 0.001, cacheRead: 0.01 },
    };
    const p = learnProfile(gpt, [at(usage(rounded), GPT)], GPT);
    expect(p.priceSource).toBe("recorded");
    expect(p.prices?.cacheRead).toBe(GPT.cacheRead);
    expect(p.prices?.input).toBeCloseTo(GPT.input, 9);
  });

  it("one bad entry moves no live decision", () => {
    const model = { api: "anthropic-messages", provider: "anthropic", id: "claude-opus-4-5" };
    const msgs = session(model, OPUS, [
      { input: 40, cacheWrite: 12_000 },
      { input: 30, cacheRead: 12_000, cacheWrite: 3000 },
      { input: 20, cacheRead: 15_000, cacheWrite: 2500 },
    ]);
    const base = breakEvenView(profileFromMessages(msgs, model, OPUS));
    const same = (v: ReturnType<typeof breakEvenView>) => {
      expect(v).toMatchObject({ family: base.family, pins: base.pins });
      for (const k of ["input", "cacheRead", "cacheWrite"] as const)
        expect(v.prices?.[k]).toBeCloseTo(base.prices?.[k] ?? -1, 9);
    };
    const bad = [
      message(model, 4 * MIN, { input: 10, cacheRead: 17_500, cacheWrite: 100 }, { ...OPUS, cacheWrite: 6250 }),
      { ...msgs[0], usage: { input: 5, cacheRead: 1, cost: { total: -881_000 } } },
      { ...msgs[0], usage: { input: 0, output: 0 } },
    ];
    for (const b of bad) same(breakEvenView(profileFromMessages([...msgs, b], model, OPUS)));
    // Nor does a single request showing writes turn an automatic cache into an explicit one.
    const gpt = { api: "openai-responses", provider: "openai", id: "gpt-5.1" };
    const reads = session(gpt, GPT, [
      { input: 9000 },
      { input: 100, cacheRead: 8960 },
      { input: 100, cacheRead: 9088 },
    ]);
    const odd = message(gpt, 9 * MIN, { input: 10, cacheRead: 9000, cacheWrite: 200 }, GPT);
    expect(profileFromMessages([...reads, odd], gpt, GPT).behaviour).toBe("automatic");
  });

  it("a prefix read after a long idle gap lives at least that long; 1-hour writes live an hour", () => {
    const model = { api: "anthropic-messages", provider: "anthropic", id: "claude-opus-4-5" };
    const msgs = [
      message(model, 0, { input: 10, cacheWrite: 10_000 }, OPUS),
      message(model, 20 * MIN, { input: 10, cacheRead: 10_000, cacheWrite: 500 }, OPUS),
    ];
    expect(profileFromMessages(msgs, model, OPUS).ttlMs).toBe(20 * MIN + 1);
    const long = { ...msgs[0], usage: { ...(msgs[0]?.usage as object), cacheWrite1h: 10_000 } };
    expect(profileFromMessages([long], model, OPUS).ttlMs).toBe(60 * MIN);
  });
});

describe("the money view on learned profiles", () => {
  const sys: Piece = { id: "system", key: "system", chars: 0, origChars: 0, kind: "system" };
  const piece = (id: string, tokens: number, kind: PieceKind = "other"): Piece => ({
    id,
    key: id,
    chars: tokens * 4,
    origChars: tokens * 4,
    kind,
  });
  const anthropic = { api: "anthropic-messages", provider: "anthropic", id: "claude-opus-4-5" };
  const M = "anthropic/claude-opus-4-5";

  function requests(model: string, msgs: ReturnType<typeof message>[], prompts: Piece[][], from = 1): MoneyRequest[] {
    return msgs.map((m, i) => {
      const c = checkRequest(from + i, m, 0);
      return {
        n: from + i,
        at: c.at,
        model,
        off: prompts[i] as Piece[],
        on: prompts[i] as Piece[],
        outputChars: 0,
        ...(c.tokens ? { usage: { ...c.tokens, cost: c.cost?.total ?? 0 } } : {}),
      };
    });
  }

  it("a cache that expired early: the provider read only the system prompt, replayed in both arms and named", () => {
    // Request 2 comes 2 minutes later but reads only the 7,272-token system prompt and writes the rest.
    const u1 = piece("u1", 20_000, "question");
    const a1 = piece("a1", 500);
    const u2 = piece("u2", 1000, "question");
    const msgs = [
      message(anthropic, 0, { input: 0, cacheWrite: 27_272 }, OPUS),
      message(anthropic, 2 * MIN, { input: 0, cacheRead: 7272, cacheWrite: 21_500 }, OPUS),
      message(anthropic, 3 * MIN, { input: 0, cacheRead: 28_772, cacheWrite: 200 }, OPUS),
    ];
    const prompts = [
      [sys, u1],
      [sys, u1, a1, u2],
      [sys, u1, a1, u2, piece("a2", 200)],
    ];
    const profile = learnProfile(
      anthropic,
      msgs.map((m, i) => checkRequest(i + 1, m, 0, OPUS)),
      OPUS,
    );
    const m = priceSession(requests(M, msgs, prompts), new Map([[M, profile]]), [], "t");
    expect(m.off).toMatchObject({ cacheRead: 7272 + 28_772, cacheWrite: 27_272 + 21_500 + 200, input: 0 });
    expect(m.error?.dollars).toBeCloseTo(0, 9);
    const cal = m.models[0]?.calibration;
    expect(cal?.partialMisses).toBe(1);
    expect(cal?.partings[0]).toMatchObject({ n: 2, recRead: 7272, simRead: 7272, lost: 27_272 });
  });

  it("a session that switches models prices each with its own profile, once, and names the free one", () => {
    const codex = { api: "openai-codex-responses", provider: "openai-codex", id: "gpt-5.4" };
    const free = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
    const a = [
      message(anthropic, 0, { input: 0, cacheWrite: 10_000 }, free),
      message(anthropic, MIN, { input: 0, cacheRead: 10_000, cacheWrite: 1000 }, free),
    ];
    const c = [
      message(codex, 2 * MIN, { input: 12_000 }, GPT),
      message(codex, 3 * MIN, { input: 1000, cacheRead: 11_904 }, GPT),
    ];
    const s1 = [sys, piece("u1", 10_000, "question")];
    const s2 = [...s1, piece("a1", 1000)];
    const s3 = [...s2, piece("u2", 1000, "question")];
    const s4 = [...s3, piece("a2", 1000)];
    const profiles = new Map([
      [M, profileFromMessages(a, anthropic, OPUS)],
      ["openai-codex/gpt-5.4", profileFromMessages(c, codex, GPT)],
    ]);
    const m = priceSession(
      [...requests(M, a, [s1, s2]), ...requests("openai-codex/gpt-5.4", c, [s3, s4], 3)],
      profiles,
      [],
      "t",
    );
    expect(m.models.map((x) => [x.model, x.behaviour, x.priceSource])).toEqual([
      [M, "explicit", "free"],
      ["openai-codex/gpt-5.4", "codex", "recorded"],
    ]);
    expect(m).toMatchObject({ priced: true, unpriced: [M] });
    // Dollars are the Codex requests' alone: the new model reads nothing the other one wrote.
    // Request 4 shares request 3's 12,000 tokens: 1,024 + 85 steps of 128 read, 1,000 uncached.
    const codexDollars = ((12_000 + 1000) * 1.25 + 11_904 * 0.125 + 200 * 10) / 1e6;
    expect(m.off.dollars).toBeCloseTo(codexDollars, 9);
    expect(m.recorded?.dollars).toBeCloseTo(codexDollars, 9);
  });
});
