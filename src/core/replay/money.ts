// What the replayed session costs in dollars, guard off and on, with the main model's prompt cache. Both
// arms run the same cost model (PromptCache) over calibrated token counts; the guard-off arm is checked
// against what the session recorded. The guard-on arm carries the guard's own Anthropic pins: the last
// question, and after an edit a read point on the last live entry before the first changed piece and a
// write anchor on the tool-result batch holding it. Pure: the driver gathers the requests.

import { cacheTtlMs } from "../cache/cold-cache.ts";
import {
  type CacheFamily,
  DEFAULT_TTL_MS,
  type Prices,
  type PromptBlock,
  PromptCache,
  type RequestCost,
} from "../cache/prompt-cache.ts";
import { type Piece, promptTokens, TokenCalibrator, type Usage } from "./calibrate.ts";

export interface MoneyRequest {
  /** 1-based request number (as in RequestPoint). */
  n: number;
  /** Epoch ms. */
  at: number;
  /** provider/model of the request. */
  model: string;
  off: readonly Piece[];
  on: readonly Piece[];
  /** Characters of the answer (its output when no usage was recorded). */
  outputChars: number;
  usage?: Usage;
}

/** Pi's registry for the model; its recorded cost per token type; the same model's list price elsewhere. */
export type PriceSource = "registry" | "recorded" | "reference" | "none";

export interface ModelPricing {
  family: CacheFamily;
  prices?: Prices;
  priceSource: PriceSource;
  /** provider/id whose list price stands in (priceSource "reference"). */
  priceRef?: string;
}

export interface Split {
  input: number;
  cacheRead: number;
  cacheWrite: number;
  output: number;
  dollars: number;
}

export interface ModelView {
  model: string;
  family: CacheFamily;
  /** Why the family differs from the provider's default, when it does. */
  familyNote?: string;
  priceSource: PriceSource;
  priceRef?: string;
  prices?: Prices;
  requests: number;
}

export interface PassMoney {
  pass: number;
  afterRequest: number;
  /** On − off dollars of the request after the pass: the cache rewrite it caused, less what it saved at once. */
  rewrite: number;
  classifier: number;
  /** Request at which the savings since the pass covered its cost; undefined: never (before the next edit). */
  paidBackAt?: number;
}

export interface SessionMoney {
  /** The session recorded usage to calibrate on. */
  calibrated: boolean;
  /** Every billed request has prices (registry or recorded). */
  priced: boolean;
  models: ModelView[];
  off: Split;
  on: Split;
  recorded?: Split;
  /** (simulated − recorded) / recorded, per field, guard off; dollars only when the session recorded a cost. */
  error?: { input: number; cacheRead: number; cacheWrite: number; dollars?: number };
  classifier: { dollars: number; source: string };
  /** off − on − classifier. */
  net: number;
  /** Cumulative dollars after each request (classifier cost included in `on` at its pass). */
  cumulative: Array<{ n: number; off: number; on: number }>;
  passes: PassMoney[];
}

export interface PassCost {
  pass: number;
  afterRequest: number;
  /** The pass edited the context. */
  edited: boolean;
  classifier: number;
}

const OUTPUT_CHARS_PER_TOKEN = 4;
/** Anthropic's long retention: the longest a cache entry lives. */
const LONG_TTL_MS = cacheTtlMs("anthropic", true);
/** With this many requests recorded and not one cache token among them, the provider does not cache. */
const NO_CACHE_EVIDENCE = 3;

const zero = (): Split => ({ input: 0, cacheRead: 0, cacheWrite: 0, output: 0, dollars: 0 });

function addTo(into: Split, c: Omit<Split, "dollars"> & { dollars?: number }): void {
  into.input += c.input;
  into.cacheRead += c.cacheRead;
  into.cacheWrite += c.cacheWrite;
  into.output += c.output;
  into.dollars += c.dollars ?? 0;
}

const relative = (sim: number, rec: number) => (rec === 0 ? (sim === 0 ? 0 : 1) : (sim - rec) / rec);

/** Anthropic breakpoints: Pi's (system, end) guard off; the guard's pins guard on. */
function anthropicPins(
  cache: PromptCache,
  pieces: readonly Piece[],
  blocks: readonly PromptBlock[],
  changedAt: number | undefined,
  at: number,
): number[] {
  const last = pieces.length - 1;
  const marks = [last];
  for (let i = last; i >= 0; i--) {
    if (pieces[i]?.kind === "question") {
      marks.push(i);
      break;
    }
  }
  if (changedAt !== undefined) {
    const read = cache.liveBefore(blocks, changedAt, at);
    if (read >= 0) marks.push(read);
    let anchor = changedAt;
    while (pieces[anchor + 1]?.kind === "toolResult") anchor++;
    marks.push(anchor);
  }
  return [...new Set(marks)].slice(0, 4);
}

function toBlocks(pieces: readonly Piece[], tokens: readonly number[]): PromptBlock[] {
  return pieces.map((p, i) => ({ key: p.key, tokens: tokens[i] as number }));
}

/** First index where the prompt differs from the previous one (an edit), if any before its end. */
function firstChange(previous: readonly Piece[] | undefined, pieces: readonly Piece[]): number | undefined {
  if (!previous) return undefined;
  const n = Math.min(previous.length, pieces.length);
  for (let i = 0; i < n; i++) if (previous[i]?.key !== pieces[i]?.key) return i;
  return undefined;
}

/**
 * How long the model's cache entries live: the 1-hour retention when the session wrote with it, else
 * 5 minutes, or longer when the session read its cache after a longer idle gap (providers keep entries
 * at least that long; the recorded misses are replayed as such).
 */
function ttlFor(requests: readonly RequestHead[], model: string, calibrated: boolean): number {
  let ttl = DEFAULT_TTL_MS;
  let previous: number | undefined;
  for (const r of requests) {
    if (r.model !== model || !r.usage || promptTokens(r.usage) === 0) continue;
    if ((r.usage.cacheWrite1h ?? 0) > 0) ttl = Math.max(ttl, LONG_TTL_MS);
    if (calibrated && previous !== undefined && r.usage.cacheRead > 0) ttl = Math.max(ttl, r.at - previous + 1);
    previous = r.at;
  }
  return Math.min(ttl, LONG_TTL_MS);
}

/** The family a model's requests follow: its provider's, unless its recorded usage shows no cache at all. */
export function effectiveFamily(family: CacheFamily, usages: readonly Usage[]): { family: CacheFamily; note?: string } {
  const billed = usages.filter((u) => promptTokens(u) > 0);
  if (
    family !== "none" &&
    billed.length >= NO_CACHE_EVIDENCE &&
    billed.every((u) => u.cacheRead + u.cacheWrite === 0)
  ) {
    return { family: "none", note: `no cache read or write in ${billed.length} recorded requests` };
  }
  return { family };
}

export function priceSession(
  requests: readonly MoneyRequest[],
  pricing: ReadonlyMap<string, ModelPricing>,
  passes: readonly PassCost[],
  classifierSource: string,
): SessionMoney {
  const simulator = new MoneySimulator(requests, pricing);
  for (const r of requests) simulator.request(r);
  return simulator.finish(passes, classifierSource);
}

/** What priceSession needs of every request before the first is priced: no prompt. */
export type RequestHead = Pick<MoneyRequest, "n" | "at" | "model" | "usage">;

/**
 * priceSession one request at a time, for a replay that cannot keep every request's prompt: the heads
 * of all requests are known up front (they decide calibration, cache families and lifetimes), each
 * prompt is priced as it comes and only the last one is kept.
 */
export class MoneySimulator {
  #heads: readonly RequestHead[];
  #pricing: ReadonlyMap<string, ModelPricing>;
  #calibrated: boolean;
  #usagesBy = new Map<string, Usage[]>();
  #models = new Map<string, ModelView>();
  #caches = new Map<string, { off: PromptCache; on: PromptCache; previous?: readonly Piece[] }>();
  #calibrator = new TokenCalibrator();
  #off = zero();
  #on = zero();
  #recorded = zero();
  #priced = true;
  /** Requests priced so far, in order, with their dollars when billed. */
  #done: Array<{ n: number; cost?: { off: number; on: number } }> = [];

  constructor(heads: readonly RequestHead[], pricing: ReadonlyMap<string, ModelPricing>) {
    this.#heads = heads;
    this.#pricing = pricing;
    this.#calibrated = heads.some((r) => r.usage && promptTokens(r.usage) > 0);
    for (const r of heads) {
      if (!r.usage) continue;
      const list = this.#usagesBy.get(r.model);
      if (list) list.push(r.usage);
      else this.#usagesBy.set(r.model, [r.usage]);
    }
  }

  request(r: MoneyRequest): void {
    const calibrated = this.#calibrated;
    const total = r.usage ? promptTokens(r.usage) : 0;
    // A request that recorded nothing (an error before the answer) was not billed; it stays in the history.
    const billed = !calibrated || total > 0;
    let view = this.#models.get(r.model);
    const given = this.#pricing.get(r.model) ?? { family: "none" as const, priceSource: "none" as const };
    if (!view) {
      const eff = calibrated
        ? effectiveFamily(given.family, this.#usagesBy.get(r.model) ?? [])
        : { family: given.family };
      view = {
        model: r.model,
        family: eff.family,
        ...(eff.note ? { familyNote: eff.note } : {}),
        priceSource: given.priceSource,
        ...(given.priceRef ? { priceRef: given.priceRef } : {}),
        ...(given.prices ? { prices: given.prices } : {}),
        requests: 0,
      };
      this.#models.set(r.model, view);
    }
    if (!billed) {
      this.#done.push({ n: r.n });
      return;
    }
    const offTokens = this.#calibrator.off(r.off, calibrated ? total : undefined);
    const onTokens = this.#calibrator.on(r.on);
    const prices = given.prices ?? { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
    if (!given.prices) this.#priced = false;
    let arm = this.#caches.get(r.model);
    if (!arm) {
      const options = { ttlMs: ttlFor(this.#heads, r.model, calibrated) };
      arm = { off: new PromptCache(view.family, prices, options), on: new PromptCache(view.family, prices, options) };
      this.#caches.set(r.model, arm);
    }
    // A miss the provider recorded (nothing read) happened whatever the guard did: cold in both arms.
    if (calibrated && r.usage && r.usage.cacheRead === 0) {
      arm.off.clear();
      arm.on.clear();
    }
    const output = r.usage ? r.usage.output : Math.round(r.outputChars / OUTPUT_CHARS_PER_TOKEN);
    const offBlocks = toBlocks(r.off, offTokens);
    const onBlocks = toBlocks(r.on, onTokens);
    const changedAt = firstChange(arm.previous, r.on);
    const offCost: RequestCost = arm.off.request({
      at: r.at,
      blocks: offBlocks,
      breakpoints: [0, r.off.length - 1],
      output,
    });
    const onCost: RequestCost = arm.on.request({
      at: r.at,
      blocks: onBlocks,
      breakpoints: view.family === "anthropic" ? anthropicPins(arm.on, r.on, onBlocks, changedAt, r.at) : [],
      output,
    });
    arm.previous = r.on;
    view.requests++;
    addTo(this.#off, offCost);
    addTo(this.#on, onCost);
    if (r.usage) addTo(this.#recorded, { ...r.usage, dollars: r.usage.cost });
    this.#done.push({ n: r.n, cost: { off: offCost.dollars, on: onCost.dollars } });
  }

  finish(passes: readonly PassCost[], classifierSource: string): SessionMoney {
    const calibrated = this.#calibrated;
    const off = this.#off;
    const on = this.#on;
    const recorded = this.#recorded;
    const classifierAfter = new Map<number, number>();
    for (const p of passes)
      classifierAfter.set(p.afterRequest, (classifierAfter.get(p.afterRequest) ?? 0) + p.classifier);
    const cumulative: SessionMoney["cumulative"] = [];
    const perRequest = new Map<number, { off: number; on: number }>();
    let cumOff = 0;
    let cumOn = classifierAfter.get(0) ?? 0;
    for (const r of this.#done) {
      if (r.cost) {
        cumOff += r.cost.off;
        cumOn += r.cost.on;
        perRequest.set(r.n, r.cost);
      }
      cumOn += classifierAfter.get(r.n) ?? 0;
      cumulative.push({ n: r.n, off: cumOff, on: cumOn });
    }
    const classifier = passes.reduce((a, p) => a + p.classifier, 0);
    const error = calibrated
      ? {
          input: relative(off.input, recorded.input),
          cacheRead: relative(off.cacheRead, recorded.cacheRead),
          cacheWrite: relative(off.cacheWrite, recorded.cacheWrite),
          ...(recorded.dollars > 0 ? { dollars: relative(off.dollars, recorded.dollars) } : {}),
        }
      : undefined;
    return {
      calibrated,
      priced: this.#priced,
      models: [...this.#models.values()],
      off,
      on,
      ...(calibrated ? { recorded, error } : {}),
      classifier: { dollars: classifier, source: classifierSource },
      net: off.dollars - on.dollars - classifier,
      cumulative,
      passes: passPayback(passes, perRequest, this.#done.at(-1)?.n ?? 0),
    };
  }
}

/** Each editing pass: the first request's extra cost and the request at which the savings since covered it. */
function passPayback(
  passes: readonly PassCost[],
  perRequest: ReadonlyMap<number, { off: number; on: number }>,
  lastRequest: number,
): PassMoney[] {
  const edits = passes.filter((p) => p.edited);
  return edits.map((p, i) => {
    const until = edits[i + 1]?.afterRequest ?? lastRequest;
    const first = perRequest.get(p.afterRequest + 1);
    const out: PassMoney = {
      pass: p.pass,
      afterRequest: p.afterRequest,
      rewrite: first ? first.on - first.off : 0,
      classifier: p.classifier,
    };
    let saved = -p.classifier;
    for (let n = p.afterRequest + 1; n <= until; n++) {
      const c = perRequest.get(n);
      if (!c) continue;
      saved += c.off - c.on;
      if (saved >= 0) {
        out.paidBackAt = n;
        break;
      }
    }
    return out;
  });
}
