// What a sequence of main-model requests costs with the provider's prompt cache, request by request. The
// replay prices both arms (guard off, guard on) with it, so an edit's saving is weighed against the cache
// rewrite it causes. Pure: a request is its prompt as blocks (an identity key and a token count each, in
// the order the provider sees them), its time, its output and, for Anthropic, its cache breakpoints.
//
// - anthropic: explicit breakpoints. A request reads the longest cached prefix that ends at one of its
//   breakpoints or up to LOOKBACK_BLOCKS before one, writes the prefixes up to its breakpoints, and pays
//   input for what follows the last one. An entry lives `ttlMs` after its last read or write.
// - openai: automatic prefix caching: the longest prefix shared with a recent request, in steps of 128
//   tokens from 1,024 on; no write premium.
// - openai-codex: as openai, except that nothing is read after any change to what an earlier request
//   sent (Pi's Codex transport loses its continuation on an edit).
// - none: every input token at the input price.

import { cacheTtlMs } from "./cold-cache.ts";

export type CacheFamily = "anthropic" | "openai" | "openai-codex" | "none";

/** Dollars per million tokens, as Pi's model registry gives them. */
export interface Prices {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
}

export interface PromptBlock {
  /** Identity of the block's content: equal keys at the same position mean the same bytes. */
  key: string;
  tokens: number;
}

export interface CachedRequest {
  /** Epoch ms. */
  at: number;
  blocks: readonly PromptBlock[];
  /** Anthropic: indices of the blocks that carry a cache breakpoint. */
  breakpoints?: readonly number[];
  output: number;
}

export interface RequestCost {
  /** Input tokens billed at the input price. */
  input: number;
  cacheRead: number;
  cacheWrite: number;
  output: number;
  dollars: number;
}

export interface CacheOptions {
  /** How long an entry lives after its last use. Anthropic 5 min (1 h with the long retention). */
  ttlMs?: number;
  /** Smallest prefix a provider caches (Anthropic and OpenAI: 1,024 tokens for most models). */
  minTokens?: number;
}

/** Anthropic checks this many blocks back from a breakpoint for an earlier cache entry. */
const LOOKBACK_BLOCKS = 20;
/** Anthropic's default lifetime, unless the caller knows the session's. */
export const DEFAULT_TTL_MS = cacheTtlMs("anthropic");
const MIN_TOKENS = 1024;
const OPENAI_STEP = 128;

export function dollars(cost: Omit<RequestCost, "dollars">, prices: Prices): number {
  return (
    (cost.input * prices.input +
      cost.cacheRead * prices.cacheRead +
      cost.cacheWrite * prices.cacheWrite +
      cost.output * prices.output) /
    1e6
  );
}

/** The prefix identities of one prompt, kept to extend the next (which mostly repeats it). */
interface PrefixMemo {
  blockKeys: string[];
  chains: string[];
  keys: string[];
}

/**
 * Prefix identities: entry i names blocks 0..i (a rolling hash), so equal entries mean equal prefixes.
 * With a memo of an earlier prompt, the part both share is not hashed again (a long session's prompts
 * differ from the previous one only at the end).
 */
function prefixKeys(blocks: readonly PromptBlock[], memo?: PrefixMemo): { keys: string[]; memo: PrefixMemo } {
  let same = 0;
  if (memo) {
    const n = Math.min(memo.blockKeys.length, blocks.length);
    while (same < n && memo.blockKeys[same] === (blocks[same] as PromptBlock).key) same++;
  }
  const blockKeys = memo ? memo.blockKeys.slice(0, same) : [];
  const chains = memo ? memo.chains.slice(0, same) : [];
  const keys = memo ? memo.keys.slice(0, same) : [];
  let chain = same > 0 ? (chains[same - 1] as string) : "";
  for (let i = same; i < blocks.length; i++) {
    const key = (blocks[i] as PromptBlock).key;
    chain = hashOf(`${chain}|${key}`);
    blockKeys.push(key);
    chains.push(chain);
    keys.push(`${i}:${chain}`);
  }
  return { keys, memo: { blockKeys, chains, keys } };
}

/** A 64-bit hash of a string, as two 32-bit FNV-style halves (enough to tell prefixes apart in a session). */
function hashOf(text: string): string {
  let h1 = 0x811c9dc5;
  let h2 = 0x1000193;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 0x01000193) >>> 0;
    h2 = Math.imul(h2 ^ c, 0x5bd1e995) >>> 0;
  }
  return `${h1.toString(36)}${h2.toString(36)}`;
}

function cumulative(blocks: readonly PromptBlock[]): number[] {
  const out: number[] = [];
  let sum = 0;
  for (const b of blocks) {
    sum += b.tokens;
    out.push(sum);
  }
  return out;
}

/** The prompt cache of one session's main model. */
export class PromptCache {
  readonly family: CacheFamily;
  readonly prices: Prices;
  #ttl: number;
  #min: number;
  /** Anthropic: prefix key → expiry and the prefix's tokens. */
  #entries = new Map<string, { until: number; tokens: number }>();
  /** OpenAI: recent prompts (prefix keys, token sums) and their expiry. */
  #recent: Array<{ keys: string[]; sums: number[]; until: number }> = [];
  /** Codex: the previous request's prefix keys. */
  #previous: string[] | undefined;
  #memo: PrefixMemo | undefined;

  constructor(family: CacheFamily, prices: Prices, options: CacheOptions = {}) {
    this.family = family;
    this.prices = prices;
    this.#ttl = options.ttlMs ?? DEFAULT_TTL_MS;
    this.#min = options.minTokens ?? MIN_TOKENS;
  }

  /** Forgets every entry: the provider lost the cache (a miss the session recorded). */
  clear(): void {
    this.#entries.clear();
    this.#recent = [];
    this.#previous = undefined;
  }

  /**
   * Forgets every prefix longer than `lastBlock + 1` blocks: the provider read no further (a partial miss
   * the session recorded). Returns the most tokens a live forgotten prefix held (0: nothing was lost).
   */
  forgetBeyond(lastBlock: number, at: number): number {
    let lost = 0;
    for (const [key, e] of this.#entries) {
      if (Number(key.slice(0, key.indexOf(":"))) <= lastBlock) continue;
      if (e.until > at) lost = Math.max(lost, e.tokens);
      this.#entries.delete(key);
    }
    for (const p of this.#recent) {
      if (p.keys.length <= lastBlock + 1) continue;
      if (p.until > at) lost = Math.max(lost, p.sums.at(-1) ?? 0);
      p.keys = p.keys.slice(0, lastBlock + 1);
      p.sums = p.sums.slice(0, lastBlock + 1);
    }
    return lost;
  }

  /**
   * Anthropic: the last block before `below` whose prefix is a live cache entry, or -1. The guard pins
   * its read point there (an entry an earlier request wrote, before the first edit).
   */
  liveBefore(blocks: readonly PromptBlock[], below: number, at: number): number {
    const keys = this.#keysOf(blocks.slice(0, below));
    for (let i = keys.length - 1; i >= 0; i--) {
      const until = this.#entries.get(keys[i] as string)?.until;
      if (until !== undefined && until > at) return i;
    }
    return -1;
  }

  #keysOf(blocks: readonly PromptBlock[]): string[] {
    const { keys, memo } = prefixKeys(blocks, this.#memo);
    // A prefix of the last prompt (liveBefore's) is not kept: the next request extends the whole one.
    if (!this.#memo || blocks.length >= this.#memo.blockKeys.length) this.#memo = memo;
    return keys;
  }

  request(r: CachedRequest): RequestCost {
    const sums = cumulative(r.blocks);
    const total = sums.at(-1) ?? 0;
    let cost: Omit<RequestCost, "dollars">;
    if (this.family === "anthropic") cost = this.#anthropic(r, sums, total);
    else if (this.family === "openai" || this.family === "openai-codex") cost = this.#openai(r, sums, total);
    else cost = { input: total, cacheRead: 0, cacheWrite: 0, output: r.output };
    return { ...cost, dollars: dollars(cost, this.prices) };
  }

  #anthropic(r: CachedRequest, sums: number[], total: number): Omit<RequestCost, "dollars"> {
    const keys = this.#keysOf(r.blocks);
    const breakpoints = [...new Set(r.breakpoints ?? [])]
      .filter((b) => b >= 0 && b < keys.length)
      .sort((a, b) => a - b);
    // The longest live entry at a breakpoint or within the lookback before one.
    let read = -1;
    for (const b of breakpoints) {
      for (let i = b; i >= Math.max(0, b - LOOKBACK_BLOCKS + 1) && i > read; i--) {
        const until = this.#entries.get(keys[i] as string)?.until;
        if (until !== undefined && until > r.at) {
          read = i;
          break;
        }
      }
    }
    const readTokens = read >= 0 ? (sums[read] as number) : 0;
    if (read >= 0) this.#entries.set(keys[read] as string, { until: r.at + this.#ttl, tokens: readTokens });
    const last = breakpoints.at(-1);
    let written = readTokens;
    for (const b of breakpoints) {
      if (b <= read || (sums[b] as number) < this.#min) continue;
      this.#entries.set(keys[b] as string, { until: r.at + this.#ttl, tokens: sums[b] as number });
      written = sums[b] as number;
    }
    const cacheWrite = Math.max(0, written - readTokens);
    const cachedEnd = last === undefined ? readTokens : Math.max(readTokens, written);
    return { input: total - cachedEnd, cacheRead: readTokens, cacheWrite, output: r.output };
  }

  #openai(r: CachedRequest, sums: number[], total: number): Omit<RequestCost, "dollars"> {
    const keys = this.#keysOf(r.blocks);
    this.#recent = this.#recent.filter((p) => p.until > r.at);
    let shared = 0;
    const edited =
      this.family === "openai-codex" &&
      this.#previous !== undefined &&
      (this.#previous.length > keys.length || this.#previous.some((k, i) => keys[i] !== k));
    if (!edited) {
      for (const p of this.#recent) {
        let n = 0;
        while (n < p.keys.length && n < keys.length && p.keys[n] === keys[n]) n++;
        if (n > 0) shared = Math.max(shared, p.sums[n - 1] as number);
      }
    }
    const cacheRead = shared < this.#min ? 0 : this.#min + Math.floor((shared - this.#min) / OPENAI_STEP) * OPENAI_STEP;
    this.#recent.push({ keys, sums, until: r.at + this.#ttl });
    // A prompt used again keeps its prefixes alive; old ones beyond a few are not needed.
    if (this.#recent.length > 8) this.#recent.shift();
    this.#previous = keys;
    return { input: total - cacheRead, cacheRead, cacheWrite: 0, output: r.output };
  }
}
