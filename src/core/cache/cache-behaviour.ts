// How one main model's prompt cache behaves and what each token kind costs, learned from the requests a
// session recorded, with what Pi's provider code sends as the prior for a model without history. The live
// guard's break-even rules and the replay's two arms both read the profile made here, so the guard decides
// with the numbers the report shows. Recorded usage is untrusted: a request whose usage is unreadable, a
// message the host wrote itself, or a cost no price list explains is set aside, with the reason, and
// prices are medians over requests, so no single entry moves a decision. Pure.
//
// Behaviours, from Pi 1.6's provider code:
// - explicit: cache points in the request, a write premium (Anthropic `cache_control`, Bedrock `cachePoint`
//   for Claude models, OpenRouter's `anthropic/*` models and any `cacheControlFormat: "anthropic"` model
//   behind openai-completions). Bedrock reports `inputTokens` net of cache tokens as Anthropic does; Pi's
//   own issue 8752 asks whether that always holds, so a Bedrock profile trusts recorded usage over the prior.
// - automatic: the provider caches prefixes by itself, reads are discounted, nothing is written (OpenAI's
//   Responses and Chat Completions with `prompt_cache_key`, Azure, Google's implicit caching on Gemini and
//   Vertex, Mistral with `promptCacheKey`, DeepSeek's disk cache, Bedrock's Nova models).
// - codex: as automatic, but Pi's Codex transport loses the whole prefix after any change.
// - none: nothing cached: Bedrock models Pi sends no cachePoint for, and any model whose recorded
//   requests never report a cache token (local servers, many OpenAI-compatible hosts).
// An API Pi's code does not know keeps the automatic prior whatever its usage shows, except "none".

import { z } from "zod";
import type { CacheModel, TokenPrices } from "./break-even.ts";
import type { CacheFamily, Prices } from "./prompt-cache.ts";

export type CacheBehaviour = "explicit" | "automatic" | "codex" | "none";

/** What Pi's registry or an assistant message says about the model. */
export interface ModelInfo {
  api?: string;
  provider?: string;
  /** Model id. */
  id?: string;
  name?: string;
  /** Pi model compat settings; only `cacheControlFormat` matters here. */
  compat?: object;
}

export interface Prior {
  behaviour: CacheBehaviour;
  why: string;
  /** The guard can place its own breakpoints in the request (Anthropic's Messages API only). */
  pins: boolean;
  /** Pi's code does not know the API (an extension's, Pi's faux test model): only "none" is learned. */
  unknown?: boolean;
}

const MINUTE = 60_000;
/** How long a prefix lives with no evidence: Anthropic, Bedrock and OpenAI all keep 5 idle minutes at least. */
export const PRIOR_TTL_MS = 5 * MINUTE;
/** The longest retention any provider offers by default (Anthropic's and Bedrock's 1-hour writes). */
export const MAX_TTL_MS = 60 * MINUTE;
/** Requests that must agree before recorded usage overrides the prior's behaviour. */
export const MIN_EVIDENCE = 2;
/** Requests without a single cache token after which a model is taken not to cache. */
export const NO_CACHE_EVIDENCE = 3;
/** A recorded cost this many times above or below the list price is not a price. */
const ABSURD_RATIO = 1000;
/** Without a list price: dollars per million tokens no provider charges. */
const ABSURD_PER_MILLION = { high: 1000, low: 1e-4 };
/**
 * Tokens no single request holds: twice the largest context window in Pi 1.6's registry (Llama 4 Scout's
 * 10M). Beyond it the counts are broken, and priced they would make sums of 1e294 dollars or overflow.
 */
export const MAX_REQUEST_TOKENS = 20_000_000;
/**
 * Dollars no single request costs: ten times the dearest one Pi 1.6's registry allows (about $100, a full
 * context of gpt-5.4-pro or o1-pro with its longest answer).
 */
export const MAX_REQUEST_DOLLARS = 1000;

/** Bedrock sends cache points for Claude models Pi knows to support them (supportsPromptCaching). */
function bedrockCaches(model: ModelInfo): boolean {
  const s = `${model.id ?? ""} ${model.name ?? ""}`.toLowerCase();
  if (!s.includes("claude")) return false;
  return /(fable|opus|sonnet|haiku)-5|-4-|claude-3-7-sonnet|claude-3-5-haiku/.test(s);
}

/** What a model without recorded history must assume, from how Pi 1.6 builds its requests. */
export function priorFor(model: ModelInfo | undefined): Prior {
  const api = model?.api ?? "";
  const provider = model?.provider ?? "";
  const id = model?.id ?? "";
  const none = (why: string): Prior => ({ behaviour: "none", why, pins: false });
  if (api === "anthropic-messages") return { behaviour: "explicit", why: "cache_control breakpoints", pins: true };
  if (api === "openai-codex-responses" || provider === "openai-codex") {
    return { behaviour: "codex", why: "Codex loses its prefix after a change", pins: false };
  }
  if (api === "bedrock-converse-stream") {
    if (bedrockCaches(model ?? {})) return { behaviour: "explicit", why: "Bedrock cachePoint blocks", pins: false };
    if (/nova/i.test(id)) return { behaviour: "automatic", why: "Nova caches by itself", pins: false };
    return none("Pi sends no cachePoint for this Bedrock model");
  }
  if (api === "openai-completions") {
    const format = (model?.compat as { cacheControlFormat?: unknown } | undefined)?.cacheControlFormat;
    const anthropicFormat =
      format === "anthropic" || (format === undefined && provider === "openrouter" && id.startsWith("anthropic/"));
    if (anthropicFormat) return { behaviour: "explicit", why: "cache_control in Chat Completions", pins: false };
    return { behaviour: "automatic", why: "automatic prefix caching", pins: false };
  }
  if (api === "openai-responses" || api === "azure-openai-responses") {
    return { behaviour: "automatic", why: "prompt_cache_key, automatic prefix caching", pins: false };
  }
  if (api === "google-generative-ai" || api === "google-vertex") {
    return { behaviour: "automatic", why: "Gemini implicit caching", pins: false };
  }
  if (api === "mistral-conversations") return { behaviour: "automatic", why: "promptCacheKey", pins: false };
  // Unknown to Pi's code (pi-messages, an extension's API): a cache is assumed until usage shows none, so
  // an edit is never taken for free on a guess.
  return {
    behaviour: "automatic",
    why: api ? `${api}: assumed to cache prefixes` : "unknown API",
    pins: false,
    unknown: true,
  };
}

/** The PromptCache family that simulates a behaviour. */
export function familyOfBehaviour(b: CacheBehaviour): CacheFamily {
  return b === "explicit" ? "anthropic" : b === "automatic" ? "openai" : b === "codex" ? "openai-codex" : "none";
}

/** The break-even rules' family for a behaviour. */
export function breakEvenFamily(b: CacheBehaviour): CacheModel["family"] {
  return b === "explicit" ? "anthropic" : b === "codex" ? "openai-codex" : b === "none" ? "none" : "other";
}

const finite = z.number().finite();
const UsageSchema = z.object({
  input: finite.default(0),
  output: finite.default(0),
  cacheRead: finite.default(0),
  cacheWrite: finite.default(0),
  cacheWrite1h: finite.optional(),
  cost: z
    .object({
      input: finite.default(0),
      output: finite.default(0),
      cacheRead: finite.default(0),
      cacheWrite: finite.default(0),
      total: finite.optional(),
    })
    .optional(),
});

/** Tokens of one request as recorded (its prompt is input + cacheRead + cacheWrite). */
export interface RecordedTokens {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  cacheWrite1h?: number;
}

/** One recorded assistant message, checked. */
export interface CheckedRequest {
  n: number;
  at: number;
  /** Usable token counts, or undefined when the entry is not a request. */
  tokens?: RecordedTokens;
  /** Dollars per token kind, when the cost is plausible. */
  cost?: { input: number; output: number; cacheRead: number; cacheWrite: number; total: number };
  /** Why the tokens or the cost were set aside. */
  aside?: string;
}

/** Hosts that write assistant messages themselves (OpenClaw's mirrors): never requests. */
const HOST_WRITTEN = /^(openclaw|clawdbot)$/;

export function listDollars(t: RecordedTokens, p: Prices): number {
  return (t.input * p.input + t.output * p.output + t.cacheRead * p.cacheRead + t.cacheWrite * p.cacheWrite) / 1e6;
}

/**
 * Checks one assistant message's usage. Tokens are kept when readable, non-negative and within
 * MAX_REQUEST_TOKENS; the cost only when it is non-negative, within MAX_REQUEST_DOLLARS and within a factor
 * of a thousand of the list price (or, without one, of any price).
 */
export function checkRequest(
  n: number,
  message: { provider?: unknown; model?: unknown; timestamp?: unknown; usage?: unknown },
  at: number,
  list?: Prices,
): CheckedRequest {
  const out: CheckedRequest = { n, at: typeof message.timestamp === "number" ? message.timestamp : at };
  if (typeof message.provider === "string" && HOST_WRITTEN.test(message.provider)) {
    return { ...out, aside: `written by ${message.provider}, not a request` };
  }
  const parsed = UsageSchema.safeParse(message.usage ?? {});
  if (!parsed.success) return { ...out, aside: "usage unreadable" };
  const u = parsed.data;
  const tokens: RecordedTokens = {
    input: u.input,
    output: u.output,
    cacheRead: u.cacheRead,
    cacheWrite: u.cacheWrite,
    ...(u.cacheWrite1h && u.cacheWrite1h > 0 ? { cacheWrite1h: u.cacheWrite1h } : {}),
  };
  if (Object.values(tokens).some((x) => x < 0)) return { ...out, aside: "negative token counts" };
  // Summed, two counts near Number.MAX_VALUE make Infinity, which is above the bound too.
  const counted = tokens.input + tokens.cacheRead + tokens.cacheWrite + tokens.output;
  if (counted > MAX_REQUEST_TOKENS || (tokens.cacheWrite1h ?? 0) > MAX_REQUEST_TOKENS) {
    return { ...out, aside: `token counts no context holds (over ${MAX_REQUEST_TOKENS / 1e6}M)` };
  }
  if (counted === 0) {
    return { ...out, aside: "no usage (not billed: an error before the answer)" };
  }
  const c = u.cost ?? { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
  const total = c.total ?? c.input + c.output + c.cacheRead + c.cacheWrite;
  const cost = { input: c.input, output: c.output, cacheRead: c.cacheRead, cacheWrite: c.cacheWrite, total };
  if (Object.values(cost).some((x) => x < 0)) return { ...out, tokens, aside: `negative cost ($${total})` };
  if (Object.values(cost).some((x) => x > MAX_REQUEST_DOLLARS)) {
    return { ...out, tokens, aside: `cost no request has (over $${MAX_REQUEST_DOLLARS})` };
  }
  if (total > 0) {
    const expected = list ? listDollars(tokens, list) : 0;
    if (expected > 0) {
      const ratio = total / expected;
      if (ratio > ABSURD_RATIO || ratio < 1 / ABSURD_RATIO) {
        return { ...out, tokens, aside: `cost ${ratio.toPrecision(2)}× the list price` };
      }
    } else {
      const perMillion = (total / counted) * 1e6;
      if (perMillion > ABSURD_PER_MILLION.high || perMillion < ABSURD_PER_MILLION.low) {
        return { ...out, tokens, aside: `cost of $${perMillion.toPrecision(2)} per million tokens` };
      }
    }
  }
  return { ...out, tokens, cost };
}

/** Where a profile's prices come from. "free": the session billed $0 (a plan or a user price of 0). */
export type ProfilePriceSource = "recorded" | "registry" | "free" | "none";

export interface CacheProfile {
  behaviour: CacheBehaviour;
  /** "recorded" once the session's usage decided it, else "pi" (the prior). */
  behaviourSource: "recorded" | "pi";
  why: string;
  pins: boolean;
  /** Dollars per million tokens the session pays: recorded medians, else the list ($0 for a free plan). */
  prices?: Prices;
  priceSource: ProfilePriceSource;
  /** List prices from Pi's registry, when it has them. */
  list?: Prices;
  /** How long an idle prefix is still read. */
  ttlMs: number;
  ttlWhy: string;
  /** Plausible requests learned from. */
  requests: number;
  /** Requests whose tokens or cost were set aside, and why. */
  aside: Array<{ n: number; reason: string }>;
}

const prompt = (t: RecordedTokens) => t.input + t.cacheRead + t.cacheWrite;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

function learnBehaviour(prior: Prior, billed: readonly RecordedTokens[]): { behaviour: CacheBehaviour; why: string } {
  const writes = billed.filter((t) => t.cacheWrite > 0).length;
  const reads = billed.filter((t) => t.cacheRead > 0).length;
  // Where Pi's code does not say how requests are built, how an edit meets the cache is unknown too: the
  // neutral prior stays, unless the requests show no cache at all.
  if (prior.unknown && reads + writes > 0) return { behaviour: prior.behaviour, why: prior.why };
  if (writes >= MIN_EVIDENCE) return { behaviour: "explicit", why: `cache writes in ${writes} requests` };
  if (reads >= MIN_EVIDENCE && writes === 0) {
    const behaviour = prior.behaviour === "codex" ? "codex" : "automatic";
    return { behaviour, why: `cache reads without writes in ${reads} requests` };
  }
  if (billed.length >= NO_CACHE_EVIDENCE && reads + writes === 0) {
    return { behaviour: "none", why: `no cache token in ${billed.length} requests` };
  }
  return { behaviour: prior.behaviour, why: prior.why };
}

/** Per-kind medians of the recorded dollars per million tokens; a kind never seen keeps the fallback. */
function recordedPrices(priced: readonly CheckedRequest[], fallback: Prices): Prices {
  const per = (k: keyof Prices): number => {
    const xs: number[] = [];
    for (const r of priced) {
      const t = r.tokens?.[k] ?? 0;
      if (!(t > 0 && r.cost)) continue;
      // A plausible total can still hide an absurd kind (a few tokens billed a whole cent): no such price.
      const perMillion = (r.cost[k] / t) * 1e6;
      if (perMillion <= ABSURD_PER_MILLION.high) xs.push(perMillion);
    }
    return xs.length ? median(xs) : fallback[k];
  };
  return { input: per("input"), output: per("output"), cacheRead: per("cacheRead"), cacheWrite: per("cacheWrite") };
}

/**
 * The longest idle gap after which a request still read most of the previous prompt from the cache, when
 * longer than the prior's: the provider kept the prefix at least that long.
 */
function learnTtl(billed: readonly CheckedRequest[]): { ttlMs: number; why: string } {
  let ttl = PRIOR_TTL_MS;
  let why = "5 idle minutes (no longer read seen)";
  let previous: CheckedRequest | undefined;
  for (const r of billed) {
    const t = r.tokens as RecordedTokens;
    if ((t.cacheWrite1h ?? 0) > 0 && ttl < MAX_TTL_MS) {
      ttl = MAX_TTL_MS;
      why = "1-hour cache writes";
    }
    const before = previous?.tokens;
    if (previous && before && t.cacheRead >= prompt(before) / 2 && r.at - previous.at + 1 > ttl) {
      ttl = Math.min(MAX_TTL_MS, r.at - previous.at + 1);
      why = `read after ${Math.round((r.at - previous.at) / 1000)} idle seconds (request ${r.n})`;
    }
    previous = r;
  }
  return { ttlMs: ttl, why };
}

/**
 * The model's profile from its checked requests so far (oldest first), its prior and its list prices.
 * Recorded usage decides the behaviour once MIN_EVIDENCE requests agree, and the prices once one plausible
 * request is priced; a session whose plausible requests all cost $0 is "free".
 */
export function learnProfile(
  model: ModelInfo | undefined,
  requests: readonly CheckedRequest[],
  list?: Prices,
): CacheProfile {
  const prior = priorFor(model);
  const aside = requests.filter((r) => r.aside).map((r) => ({ n: r.n, reason: r.aside as string }));
  const billed = requests.filter((r) => r.tokens && prompt(r.tokens) > 0 && !r.aside);
  const learned = learnBehaviour(
    prior,
    billed.map((r) => r.tokens as RecordedTokens),
  );
  const priced = billed.filter((r) => (r.cost?.total ?? 0) > 0);
  const free = billed.length > 0 && priced.length === 0;
  const listed = list && (list.input > 0 || list.output > 0) ? list : undefined;
  let prices: Prices | undefined;
  let priceSource: ProfilePriceSource = "none";
  if (priced.length > 0) {
    prices = recordedPrices(priced, listed ?? { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 });
    priceSource = "recorded";
  } else if (free) {
    prices = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
    priceSource = "free";
  } else if (listed) {
    prices = { ...listed };
    priceSource = "registry";
  }
  // A write without a listed premium is billed as input (Z.ai's and others' lists say $0).
  if (prices && learned.behaviour === "explicit" && prices.cacheWrite === 0) prices.cacheWrite = prices.input;
  const ttl = learnTtl(billed);
  return {
    behaviour: learned.behaviour,
    behaviourSource: learned.why === prior.why ? "pi" : "recorded",
    why: learned.why,
    pins: prior.pins && learned.behaviour === "explicit",
    ...(prices ? { prices } : {}),
    priceSource,
    ...(listed ? { list: listed } : {}),
    ttlMs: ttl.ttlMs,
    ttlWhy: ttl.why,
    requests: billed.length,
    aside,
  };
}

/** What the break-even rules take from a profile. */
export interface BreakEvenView {
  family: CacheModel["family"];
  /** Prices whose ratios weigh a rewrite: what the session pays, or the list for a free plan. */
  prices?: TokenPrices;
  /** The guard may pin its own breakpoints. */
  pins: boolean;
}

export function breakEvenView(profile: CacheProfile): BreakEvenView {
  const ratios = profile.priceSource === "free" ? profile.list : profile.prices;
  return {
    family: breakEvenFamily(profile.behaviour),
    ...(ratios ? { prices: { input: ratios.input, cacheRead: ratios.cacheRead, cacheWrite: ratios.cacheWrite } } : {}),
    pins: profile.pins,
  };
}

/**
 * Dollars of one recorded request at the profile's prices, or undefined when dollars mean nothing for the
 * model (no price known, or a free plan: show tokens). For the live footer.
 */
export function priceRequest(tokens: RecordedTokens, profile: CacheProfile): number | undefined {
  if (!profile.prices || profile.priceSource === "free" || profile.priceSource === "none") return undefined;
  return listDollars(tokens, profile.prices);
}

/** Key of a model in a session: provider/id, as the replay names it. */
export const modelKey = (m: { provider?: string; model?: string }) => `${m.provider ?? "?"}/${m.model ?? "?"}`;

/** An assistant message as the session holds it (untrusted). */
export interface AssistantRecord {
  api?: unknown;
  provider?: unknown;
  model?: unknown;
  timestamp?: unknown;
  usage?: unknown;
}

/** Checks already made, per message object: a pass checks only the messages new since the last one. */
const checkedBefore = new WeakMap<object, { list?: Prices; checked: CheckedRequest }>();

/** Whether two list prices are the same (a check made under one stays valid under the other). */
export const sameList = (a: Prices | undefined, b: Prices | undefined) =>
  a === b ||
  (a !== undefined &&
    b !== undefined &&
    a.input === b.input &&
    a.output === b.output &&
    a.cacheRead === b.cacheRead &&
    a.cacheWrite === b.cacheWrite);

/**
 * The profile of `model` from a branch's assistant messages so far: only that provider/model's requests
 * count. Messages are numbered from 1 in order.
 */
export function profileFromMessages(
  messages: readonly AssistantRecord[],
  model: ModelInfo | undefined,
  list?: Prices,
): CacheProfile {
  const checked: CheckedRequest[] = [];
  messages.forEach((m, i) => {
    if (m.provider !== model?.provider || m.model !== model?.id) return;
    const before = checkedBefore.get(m);
    if (before && sameList(before.list, list)) {
      checked.push({ ...before.checked, n: i + 1 });
      return;
    }
    const c = checkRequest(i + 1, m, 0, list);
    checkedBefore.set(m, { ...(list ? { list: { ...list } } : {}), checked: c });
    checked.push(c);
  });
  return learnProfile(model, checked, list);
}
