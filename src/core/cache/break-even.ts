// Whether omitting old exchanges at run end is worth the prompt-cache rewrite it causes. An edit early in
// the context makes the next request re-send everything after it uncached, once; the saving is paid back
// on every later request. Only the extra rewrite the exchanges add on top of the pass's other edits counts.

import { argsJsonLength } from "../distill/run.ts";
import { formatCount } from "../shared/text.ts";
import type { Exchange, SnapEntry } from "../shared/types.ts";

/** How a provider's prompt cache reacts to an edit. */
export interface CacheModel {
  /** "none": the provider caches nothing, so an edit has no rewrite to pay for. */
  family: "anthropic" | "openai-codex" | "other" | "none";
}

/** Characters one image stands for when its size is unknown: 1,600 tokens at 4 characters each. */
export const IMAGE_CHARS = 1600 * 4;

/**
 * How many later requests the saving must be multiplied by to cover one rewrite, relative to its size.
 * A cache write costs several times a cached read, and "requests so far" is only a guess at what follows.
 */
export const REWRITE_FACTOR: Readonly<Record<CacheModel["family"], number>> = Object.freeze({
  anthropic: 16,
  "openai-codex": 13,
  other: 16,
  none: 0,
});

/**
 * The margin behind REWRITE_FACTOR: each fixed factor is about this margin times the price ratio below at
 * list prices (docs/edits-that-pay.md). It covers "requests so far" being only a guess at those to come.
 */
export const DEFAULT_BREAK_EVEN_MARGIN = 1.4;

/** A main model's prices in dollars per million tokens, as Pi's model registry lists them. */
export interface TokenPrices {
  input: number;
  cacheRead: number;
  cacheWrite: number;
}

/**
 * Requests of saving one rewritten character must be multiplied by: margin × (what a rewritten token costs
 * over a cached read) / (what a removed token saves per request, a cached read). Anthropic writes at its
 * cache-write price; OpenAI and others have no write premium, a rewritten token costs the input price.
 * Without usable prices (none listed, or no cache discount), the fixed factor scaled by the margin.
 */
export function rewriteFactor(
  family: CacheModel["family"],
  prices?: TokenPrices,
  margin = DEFAULT_BREAK_EVEN_MARGIN,
): number {
  if (family === "none") return 0;
  const fixed = (REWRITE_FACTOR[family] * margin) / DEFAULT_BREAK_EVEN_MARGIN;
  if (!prices || !(prices.input > 0) || !(prices.cacheRead > 0) || prices.cacheRead >= prices.input) return fixed;
  const write = family === "anthropic" && prices.cacheWrite > 0 ? prices.cacheWrite : prices.input;
  return (margin * Math.max(0, write - prices.cacheRead)) / prices.cacheRead;
}

const round1 = (x: number) => Math.round(x * 10) / 10;

function isSummary(e: SnapEntry): boolean {
  return e.role === "compactionSummary" || e.role === "branchSummary";
}

/** Model-visible size of one entry in characters: text, tool calls, summaries, images at a flat rate. */
export function entryChars(e: SnapEntry): number {
  if (!e.visible) return 0;
  let chars = isSummary(e) ? (e.summary ?? e.text).length : e.text.length;
  for (const call of e.toolCalls ?? []) chars += call.name.length + argsJsonLength(call.args);
  return chars + e.images * IMAGE_CHARS;
}

/** Requests the session has made so far: its model-visible assistant messages. */
export function sessionRequests(entries: readonly SnapEntry[]): number {
  let n = 0;
  for (const e of entries) if (e.visible && e.role === "assistant") n++;
  return n;
}

/**
 * Characters the next request re-sends uncached if the given entries are edited: everything from the
 * earliest of them to the end, or the whole context for OpenAI Codex, which loses its cache on any edit.
 * Ids that are not in `entries` are ignored; no edit costs nothing.
 */
export function rewriteChars(
  entries: readonly SnapEntry[],
  editedIds: Iterable<string>,
  family: CacheModel["family"],
): number {
  const ids = new Set(editedIds);
  if (ids.size === 0) return 0;
  let first = -1;
  for (let i = 0; i < entries.length; i++) {
    if (ids.has((entries[i] as SnapEntry).id)) {
      first = i;
      break;
    }
  }
  if (first < 0) return 0;
  const from = family === "openai-codex" ? 0 : first;
  let chars = 0;
  for (let i = from; i < entries.length; i++) chars += entryChars(entries[i] as SnapEntry);
  return chars;
}

export interface ExchangeGateInput {
  /** The projected entries of the branch, as the pass saw them. */
  entries: SnapEntry[];
  /** Exchanges the pass would omit. */
  omitted: Exchange[];
  /** Entries the pass edits anyway (tool outputs, images). */
  otherEditIds: string[];
  /** Model-visible assistant messages so far, standing in for the requests still to come. */
  sessionRequests: number;
  minSavingChars: number;
  family: CacheModel["family"];
  /** Requests-to-rewrite factor (rewriteFactor); the family's fixed one when absent. */
  factor?: number;
  /** The minimum saving holds even when the omission adds no rewrite (a checkpoint's). */
  minSavingAlways?: boolean;
}

export interface ExchangeGate {
  pass: boolean;
  reason: string;
  /** Rewrite the exchanges add on top of the pass's other edits. */
  marginalChars: number;
  /** Characters the omissions take out of every later request. */
  savingChars: number;
}

/** Context characters the exchanges' omission removes: their content minus the stubs left behind. */
export function exchangeSaving(omitted: readonly Exchange[]): number {
  let saving = 0;
  for (const x of omitted) saving += Math.max(0, x.chars - x.stub.length);
  return saving;
}

/**
 * Run-end gate for exchange omissions. Free when the other edits already rewrite as much; otherwise the
 * saving must reach `minSavingChars` and, over as many requests as the session has had, cover the
 * marginal rewrite `factor` times. A failed gate defers the exchanges: they are collected again next run
 * and, together with what joins them, tried again.
 */
export function exchangeGate(input: ExchangeGateInput): ExchangeGate {
  const { entries, omitted, otherEditIds, family } = input;
  const savingChars = exchangeSaving(omitted);
  if (omitted.length === 0) return { pass: true, reason: "no exchange to omit", marginalChars: 0, savingChars };
  const exchangeIds = omitted.map((x) => x.promptId);
  const withThem = rewriteChars(entries, [...otherEditIds, ...exchangeIds], family);
  const without = rewriteChars(entries, otherEditIds, family);
  const marginalChars = Math.max(0, withThem - without);
  const saves = `saves ${formatCount(savingChars)} chars`;
  if (marginalChars === 0 && !(input.minSavingAlways && savingChars < input.minSavingChars)) {
    return { pass: true, reason: `${saves}; no extra cache rewrite`, marginalChars, savingChars };
  }
  const costs = `rewrites ${formatCount(marginalChars)} more`;
  if (savingChars < input.minSavingChars) {
    const reason = `${saves}, below ${formatCount(input.minSavingChars)}; ${costs}`;
    return { pass: false, reason, marginalChars, savingChars };
  }
  const factor = input.factor ?? REWRITE_FACTOR[family];
  const requests = Math.max(0, input.sessionRequests);
  const pass = savingChars * requests >= factor * marginalChars;
  const verdict = pass ? "pays off" : "does not pay off";
  const reason = `${saves} × ${requests} requests ${pass ? "≥" : "<"} ${round1(factor)} × ${formatCount(marginalChars)} rewrite: ${verdict}`;
  return { pass, reason, marginalChars, savingChars };
}
