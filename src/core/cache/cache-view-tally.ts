// The break-even view of a growing context, kept as counts instead of learned again from every assistant
// message at every pass: profileFromMessages walks, checks and sorts the whole history, which made each
// boundary of a long replay cost the session so far. The view is what breakEvenView(profileFromMessages(
// messages, model, list)) gives (test/unit/core/cache/cache-view-tally.test.ts pins that); the counts
// follow the messages by identity, so a pass that only added messages adds only those.

import {
  type AssistantRecord,
  type BreakEvenView,
  breakEvenFamily,
  type CheckedRequest,
  checkRequest,
  MIN_EVIDENCE,
  type ModelInfo,
  NO_CACHE_EVIDENCE,
  priorFor,
} from "./cache-behaviour.ts";
import type { Prices } from "./prompt-cache.ts";

type Kind = "input" | "cacheRead" | "cacheWrite";
const KINDS: readonly Kind[] = ["input", "cacheRead", "cacheWrite"];

/** What one message adds to the counts (undefined: another model's, or not billed). */
interface Counted {
  write: boolean;
  read: boolean;
  /** Dollars per million tokens by kind, for a priced request. */
  ratios?: Partial<Record<Kind, number>>;
}

/** The first index of `sorted` whose value is not below `x`. */
function lowerBound(sorted: readonly number[], x: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((sorted[mid] as number) < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function insert(sorted: number[], x: number): void {
  sorted.splice(lowerBound(sorted, x), 0, x);
}

function drop(sorted: number[], x: number): void {
  const at = lowerBound(sorted, x);
  if (sorted[at] === x) sorted.splice(at, 1);
}

function median(s: readonly number[]): number {
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

export class CacheViewTally {
  #key: string | undefined;
  #model: ModelInfo | undefined;
  #list: Prices | undefined;
  /** The assistant messages counted, in context order, and what each added. */
  #messages: AssistantRecord[] = [];
  #counted = new Map<AssistantRecord, Counted | undefined>();
  #billed = 0;
  #writes = 0;
  #reads = 0;
  #priced = 0;
  #ratios: Record<Kind, number[]> = { input: [], cacheRead: [], cacheWrite: [] };

  /** The view for the context's assistant messages (oldest first), the model and its list prices. */
  view(messages: readonly AssistantRecord[], model: ModelInfo | undefined, list?: Prices): BreakEvenView {
    const key = JSON.stringify([model?.api, model?.provider, model?.id, model?.name, model?.compat, list]);
    if (key !== this.#key) this.#reset(key, model, list);
    this.#follow(messages);
    return this.#result();
  }

  #reset(key: string, model: ModelInfo | undefined, list: Prices | undefined): void {
    this.#key = key;
    this.#model = model;
    this.#list = list ? { ...list } : undefined;
    this.#messages = [];
    this.#counted.clear();
    this.#billed = this.#writes = this.#reads = this.#priced = 0;
    this.#ratios = { input: [], cacheRead: [], cacheWrite: [] };
  }

  #follow(messages: readonly AssistantRecord[]): void {
    const before = this.#messages;
    let same = messages.length >= before.length;
    for (let i = 0; same && i < before.length; i++) same = messages[i] === before[i];
    if (same) {
      for (let i = before.length; i < messages.length; i++) this.#add(messages[i] as AssistantRecord);
    } else {
      // Messages left the context (an omitted exchange) or the context is another one: count the difference.
      const now = new Set(messages);
      for (const m of before) if (!now.has(m)) this.#remove(m);
      for (const m of messages) if (!this.#counted.has(m)) this.#add(m);
    }
    this.#messages = messages.slice();
  }

  #check(m: AssistantRecord): Counted | undefined {
    const model = this.#model;
    if (m.provider !== model?.provider || m.model !== model?.id) return undefined;
    const r: CheckedRequest = checkRequest(0, m, 0, this.#list);
    const t = r.tokens;
    if (!t || t.input + t.cacheRead + t.cacheWrite <= 0 || r.aside) return undefined;
    const counted: Counted = { write: t.cacheWrite > 0, read: t.cacheRead > 0 };
    if ((r.cost?.total ?? 0) > 0 && r.cost) {
      counted.ratios = {};
      for (const k of KINDS) {
        const n = t[k] ?? 0;
        if (n > 0) counted.ratios[k] = (r.cost[k] / n) * 1e6;
      }
    }
    return counted;
  }

  #add(m: AssistantRecord): void {
    const c = this.#check(m);
    this.#counted.set(m, c);
    if (!c) return;
    this.#billed++;
    if (c.write) this.#writes++;
    if (c.read) this.#reads++;
    if (!c.ratios) return;
    this.#priced++;
    for (const k of KINDS) if (c.ratios[k] !== undefined) insert(this.#ratios[k], c.ratios[k] as number);
  }

  #remove(m: AssistantRecord): void {
    const c = this.#counted.get(m);
    this.#counted.delete(m);
    if (!c) return;
    this.#billed--;
    if (c.write) this.#writes--;
    if (c.read) this.#reads--;
    if (!c.ratios) return;
    this.#priced--;
    for (const k of KINDS) if (c.ratios[k] !== undefined) drop(this.#ratios[k], c.ratios[k] as number);
  }

  /** learnProfile's behaviour, prices and pins from the counts, as breakEvenView shows them. */
  #result(): BreakEvenView {
    const prior = priorFor(this.#model);
    const writes = this.#writes;
    const reads = this.#reads;
    let behaviour = prior.behaviour;
    if (prior.unknown && reads + writes > 0) behaviour = prior.behaviour;
    else if (writes >= MIN_EVIDENCE) behaviour = "explicit";
    else if (reads >= MIN_EVIDENCE && writes === 0) behaviour = prior.behaviour === "codex" ? "codex" : "automatic";
    else if (this.#billed >= NO_CACHE_EVIDENCE && reads + writes === 0) behaviour = "none";
    const list = this.#list;
    const listed = list && (list.input > 0 || list.output > 0) ? list : undefined;
    const free = this.#billed > 0 && this.#priced === 0;
    let ratios: Pick<Prices, Kind> | undefined;
    if (this.#priced > 0) {
      const fallback = listed ?? { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
      const per = (k: Kind) => (this.#ratios[k].length ? median(this.#ratios[k]) : fallback[k]);
      ratios = { input: per("input"), cacheRead: per("cacheRead"), cacheWrite: per("cacheWrite") };
      if (behaviour === "explicit" && ratios.cacheWrite === 0) ratios.cacheWrite = ratios.input;
    } else if (free) {
      ratios = listed;
    } else if (listed) {
      ratios = { ...listed };
      if (behaviour === "explicit" && ratios.cacheWrite === 0) ratios.cacheWrite = ratios.input;
    }
    return {
      family: breakEvenFamily(behaviour),
      ...(ratios
        ? { prices: { input: ratios.input, cacheRead: ratios.cacheRead, cacheWrite: ratios.cacheWrite } }
        : {}),
      pins: prior.pins && behaviour === "explicit",
    };
  }
}
