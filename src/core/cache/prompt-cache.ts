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

/**
 * A prompt remembered for later (a recent prompt of OpenAI's cache, a model's previous request): its length,
 * the first block changed since, and its prefix sums from there on, kept as they are overwritten.
 */
export interface PromptMark {
  length: number;
  /** The smallest block index changed since the mark (Infinity: none). */
  since: number;
  /** Its block keys and prefix sums from `since` on, as they were before the change. */
  tailKeys: string[];
  tail: number[];
}

/**
 * A prompt as the cache model reads it, kept across requests: each request changes it from some block on
 * (a long session's prompts differ from the previous one only at the end), so its prefix sums and prefix
 * identities are computed once per block, and what an earlier prompt shares with this one is known from
 * the changes since, without comparing the two.
 */
export interface PromptView {
  readonly length: number;
  readonly total: number;
  /** Tokens of blocks 0..i. */
  sumAt(i: number): number;
  /** Identity of the prefix 0..i: equal identities mean equal prefixes. */
  keyAt(i: number): string;
  /** How many blocks from the start this prompt shares with the one `mark` remembers. */
  shared(mark: PromptMark): number;
  /** Tokens of blocks 0..i of the prompt `mark` remembers. */
  markSumAt(mark: PromptMark, i: number): number;
  /** Remembers this prompt; release the mark when it is no longer needed. */
  mark(): PromptMark;
  release(mark: PromptMark): void;
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

/** The prompt of one arm of a session, updated request by request from its first changed block on. */
export class PromptTrack implements PromptView {
  #keys: string[] = [];
  #tokens: number[] = [];
  #sums: number[] = [];
  #chains: string[] = [];
  readonly #marks = new Set<PromptMark>();

  get length(): number {
    return this.#keys.length;
  }

  get total(): number {
    return this.#sums.at(-1) ?? 0;
  }

  sumAt(i: number): number {
    return this.#sums[i] ?? 0;
  }

  keyAt(i: number): string {
    return `${i}:${this.#chains[i]}`;
  }

  tokenAt(i: number): number {
    return this.#tokens[i] ?? 0;
  }

  blockKeyAt(i: number): string {
    return this.#keys[i] ?? "";
  }

  /**
   * The prompt from block `from` on is `length - from` new blocks (`key(i)`, `tokens(i)` for each i from
   * `from`); the blocks before `from` are as they were.
   */
  update(from: number, length: number, key: (i: number) => string, tokens: (i: number) => number): void {
    let start = Math.max(0, Math.min(from, this.#keys.length, length));
    // What the caller did not change after all stays (its identity and sums are computed once).
    const same = Math.min(this.#keys.length, length);
    while (start < same && key(start) === this.#keys[start] && tokens(start) === this.#tokens[start]) start++;
    if (start === this.#keys.length && start === length) return;
    for (const m of this.#marks) {
      // A mark keeps the keys and sums it had where they are about to change.
      const end = Math.min(m.since, m.length);
      if (start >= end) continue;
      m.tailKeys = [...this.#keys.slice(start, end), ...m.tailKeys];
      m.tail = [...this.#sums.slice(start, end), ...m.tail];
      m.since = start;
    }
    this.#keys.length = start;
    this.#tokens.length = start;
    this.#sums.length = start;
    this.#chains.length = start;
    let sum = start > 0 ? (this.#sums[start - 1] as number) : 0;
    let chain = start > 0 ? (this.#chains[start - 1] as string) : "";
    for (let i = start; i < length; i++) {
      const k = key(i);
      const t = tokens(i);
      sum += t;
      chain = hashOf(`${chain}|${k}`);
      this.#keys.push(k);
      this.#tokens.push(t);
      this.#sums.push(sum);
      this.#chains.push(chain);
    }
  }

  /** Sets the prompt to `blocks`. */
  set(blocks: readonly PromptBlock[]): void {
    this.update(
      0,
      blocks.length,
      (i) => (blocks[i] as PromptBlock).key,
      (i) => (blocks[i] as PromptBlock).tokens,
    );
  }

  shared(mark: PromptMark): number {
    const n = Math.min(mark.length, this.#keys.length);
    let i = Math.min(mark.since, n);
    // Past the first change the prompt may hold the same blocks again (a prompt changed back).
    while (i < n && mark.tailKeys[i - mark.since] === this.#keys[i]) i++;
    return i;
  }

  markSumAt(mark: PromptMark, i: number): number {
    return i < mark.since ? this.sumAt(i) : (mark.tail[i - mark.since] ?? 0);
  }

  mark(): PromptMark {
    const m: PromptMark = { length: this.#keys.length, since: Number.POSITIVE_INFINITY, tailKeys: [], tail: [] };
    this.#marks.add(m);
    return m;
  }

  release(mark: PromptMark): void {
    this.#marks.delete(mark);
  }
}

/**
 * A prompt with every block scaled by `k` and rounded (a host trimmed the prompt the file holds): its sums
 * are its own, its identities and the changes its marks see are its base's. `lead` tokens of block 0 are
 * not the host's to trim (a prefix the recording did not carry) and stay whole.
 */
export class ScaledPrompt implements PromptView {
  readonly #base: PromptTrack;
  readonly #sums: number[] = [];

  constructor(base: PromptTrack, k: number, lead = 0) {
    this.#base = base;
    let sum = 0;
    for (let i = 0; i < base.length; i++) {
      const kept = i === 0 ? Math.min(lead, base.tokenAt(0)) : 0;
      sum += Math.round((base.tokenAt(i) - kept) * k) + kept;
      this.#sums.push(sum);
    }
  }

  get length(): number {
    return this.#base.length;
  }

  get total(): number {
    return this.#sums.at(-1) ?? 0;
  }

  sumAt(i: number): number {
    return this.#sums[i] ?? 0;
  }

  keyAt(i: number): string {
    return this.#base.keyAt(i);
  }

  shared(mark: PromptMark): number {
    return this.#base.shared(mark);
  }

  markSumAt(mark: PromptMark, i: number): number {
    return this.#base.markSumAt(mark, i);
  }

  /** A mark of a scaled prompt holds all of its sums: its base's are not the ones it had. */
  mark(): PromptMark {
    const m = this.#base.mark();
    m.since = 0;
    m.tailKeys = Array.from({ length: this.#base.length }, (_, i) => this.#base.blockKeyAt(i));
    m.tail = [...this.#sums];
    return m;
  }

  release(mark: PromptMark): void {
    this.#base.release(mark);
  }
}

/** The prompt cache of one session's main model. */
export class PromptCache {
  readonly family: CacheFamily;
  readonly prices: Prices;
  #ttl: number;
  #min: number;
  /** Anthropic: prefix key → expiry and the prefix's tokens. */
  #entries = new Map<string, { until: number; tokens: number }>();
  /** OpenAI: recent prompts (marked on the view they were sent from) and their expiry. */
  #recent: Array<{ mark: PromptMark; view: PromptView; until: number }> = [];
  /** Codex: the previous request's prompt. */
  #previous: { mark: PromptMark; view: PromptView } | undefined;
  /** The prompt of `request` calls, which hand in whole block lists. */
  readonly #own = new PromptTrack();

  constructor(family: CacheFamily, prices: Prices, options: CacheOptions = {}) {
    this.family = family;
    this.prices = prices;
    this.#ttl = options.ttlMs ?? DEFAULT_TTL_MS;
    this.#min = options.minTokens ?? MIN_TOKENS;
  }

  /** Forgets every entry: the provider lost the cache (a miss the session recorded). */
  clear(): void {
    this.#entries.clear();
    for (const p of this.#recent) p.view.release(p.mark);
    this.#recent = [];
    this.#previous?.view.release(this.#previous.mark);
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
      const length = p.mark.length;
      if (length <= lastBlock + 1) continue;
      if (p.until > at) lost = Math.max(lost, p.view.markSumAt(p.mark, length - 1));
      p.mark.length = lastBlock + 1;
      if (p.mark.since < p.mark.length) {
        p.mark.tail.length = p.mark.length - p.mark.since;
        p.mark.tailKeys.length = p.mark.length - p.mark.since;
      }
    }
    return lost;
  }

  /**
   * Anthropic: the last block before `below` whose prefix is a live cache entry, or -1. The guard pins
   * its read point there (an entry an earlier request wrote, before the first edit).
   */
  liveBefore(prompt: PromptView | readonly PromptBlock[], below: number, at: number): number {
    let view: PromptView;
    if (Array.isArray(prompt)) {
      const track = new PromptTrack();
      track.set(prompt);
      view = track;
    } else view = prompt as PromptView;
    for (let i = Math.min(below, view.length) - 1; i >= 0; i--) {
      const until = this.#entries.get(view.keyAt(i))?.until;
      if (until !== undefined && until > at) return i;
    }
    return -1;
  }

  /** A request that hands in its whole prompt as blocks (the cache keeps its own view of them). */
  request(r: CachedRequest): RequestCost {
    this.#own.set(r.blocks);
    return this.requestOn(this.#own, r);
  }

  /** A request whose prompt is `view`, a prompt the caller keeps across requests (PromptTrack). */
  requestOn(view: PromptView, r: Omit<CachedRequest, "blocks">): RequestCost {
    const total = view.total;
    let cost: Omit<RequestCost, "dollars">;
    if (this.family === "anthropic") cost = this.#anthropic(view, r, total);
    else if (this.family === "openai" || this.family === "openai-codex") cost = this.#openai(view, r, total);
    else cost = { input: total, cacheRead: 0, cacheWrite: 0, output: r.output };
    return { ...cost, dollars: dollars(cost, this.prices) };
  }

  #anthropic(view: PromptView, r: Omit<CachedRequest, "blocks">, total: number): Omit<RequestCost, "dollars"> {
    const breakpoints = [...new Set(r.breakpoints ?? [])]
      .filter((b) => b >= 0 && b < view.length)
      .sort((a, b) => a - b);
    // The longest live entry at a breakpoint or within the lookback before one.
    let read = -1;
    for (const b of breakpoints) {
      for (let i = b; i >= Math.max(0, b - LOOKBACK_BLOCKS + 1) && i > read; i--) {
        const until = this.#entries.get(view.keyAt(i))?.until;
        if (until !== undefined && until > r.at) {
          read = i;
          break;
        }
      }
    }
    const readTokens = read >= 0 ? view.sumAt(read) : 0;
    if (read >= 0) this.#entries.set(view.keyAt(read), { until: r.at + this.#ttl, tokens: readTokens });
    const last = breakpoints.at(-1);
    let written = readTokens;
    for (const b of breakpoints) {
      const sum = view.sumAt(b);
      if (b <= read || sum < this.#min) continue;
      this.#entries.set(view.keyAt(b), { until: r.at + this.#ttl, tokens: sum });
      written = sum;
    }
    const cacheWrite = Math.max(0, written - readTokens);
    const cachedEnd = last === undefined ? readTokens : Math.max(readTokens, written);
    return { input: total - cachedEnd, cacheRead: readTokens, cacheWrite, output: r.output };
  }

  #openai(view: PromptView, r: Omit<CachedRequest, "blocks">, total: number): Omit<RequestCost, "dollars"> {
    if (this.#recent.some((p) => p.until <= r.at)) {
      for (const p of this.#recent) if (p.until <= r.at) p.view.release(p.mark);
      this.#recent = this.#recent.filter((p) => p.until > r.at);
    }
    let shared = 0;
    const previous = this.#previous;
    const edited =
      this.family === "openai-codex" && previous !== undefined && view.shared(previous.mark) < previous.mark.length;
    if (!edited) {
      for (const p of this.#recent) {
        const n = view.shared(p.mark);
        if (n > 0) shared = Math.max(shared, p.view.markSumAt(p.mark, n - 1));
      }
    }
    const cacheRead = shared < this.#min ? 0 : this.#min + Math.floor((shared - this.#min) / OPENAI_STEP) * OPENAI_STEP;
    this.#recent.push({ mark: view.mark(), view, until: r.at + this.#ttl });
    // A prompt used again keeps its prefixes alive; old ones beyond a few are not needed.
    if (this.#recent.length > 8) {
      const [dropped] = this.#recent.splice(0, 1);
      dropped?.view.release(dropped.mark);
    }
    previous?.view.release(previous.mark);
    this.#previous = { mark: view.mark(), view };
    return { input: total - cacheRead, cacheRead, cacheWrite: 0, output: r.output };
  }
}
