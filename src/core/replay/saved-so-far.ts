// What the guard has saved on a live branch so far, in dollars, net of the classifier: the branch as it is
// (guard on) against the same branch without any context edit (guard off), both priced by the replay's
// money model (money.ts). The recorded usage describes the branch as it is, so it fits the guarded prompt;
// the guard-off arm is fitted to it only on the requests no edit had reached. The branch arrives as a ledger of light entries (sizes, no text) that Pi's
// thread builds once per entry; this module rebuilds each request's prompt in both arms the way Pi's
// projection does (the latest compaction, then each entry with its latest edit) and prices them.

import type { CacheProfile } from "../cache/cache-behaviour.ts";
import type { CacheDoubt } from "../cache/cache-doubt.ts";
import { CHARS_PER_TOKEN } from "../shared/size.ts";
import type { Piece, PieceKind, Usage } from "./calibrate.ts";
import { promptTokens, SYSTEM_ID } from "./calibrate.ts";
import { MoneySimulator, type PassCost } from "./money.ts";

/** One branch entry, as much of it as the money model needs. */
export interface LedgerEntry {
  id: string;
  /** Pi's entry type (message, custom_message, compaction, context_edit, custom, …). */
  type: string;
  /** Model-visible characters of the entry unedited (a compaction: its summary); 0 when it shows nothing. */
  chars: number;
  /** Messages the entry gives the model unedited. */
  messages: number;
  kind: PieceKind;
  /** A system message: a compaction does not keep it. */
  system?: true;
  /** A compaction: the first entry it keeps. */
  firstKeptId?: string;
  /** A context edit: its target, and what the target shows with it (messages 0: removed). */
  edit?: { targetId: string; chars: number; messages: number };
  /** An assistant message: the request that produced it. */
  request?: { at: number; model: string; outputChars: number; usage?: Usage };
  /** A guard record: what its classifier cost. */
  record?: { costUsd: number };
  /** A result of the guard's recall tool: without the guard no note offered it, so guard off has none. */
  recall?: true;
  /**
   * A restore the user (or the model's recalls) asked for: these entries show their originals from here
   * on, through Pi's context event, before the edit that restores them lands at a boundary.
   */
  restore?: string[];
}

export interface SavedSoFar {
  /** Requests priced (assistant messages on the branch). */
  requests: number;
  /** Some request's model has dollars (recorded or registry prices). */
  priced: boolean;
  /** Dollars the branch cost without the guard, with it (classifier excluded), and the classifier's. */
  off: number;
  on: number;
  classifier: number;
  /** off − on − classifier: negative while the guard has cost more than it saved. */
  net: number;
  /** Prompt tokens the guard kept out, Σ over the requests. */
  tokens: number;
  /** The last request's prompt tokens in both arms, and its model's cached-input price ($/M tokens). */
  last?: { offTokens: number; onTokens: number; cacheRead?: number };
  /** Models whose fitted cache model misses their recorded dollars by more than 10%: not to gate with. */
  misses?: CacheDoubt[];
}

const SYSTEM: Piece = { id: SYSTEM_ID, key: SYSTEM_ID, chars: 0, origChars: 0, kind: "system" };

/** A restore, or an edit that puts the original back whole (what a restore lands as): the original shows. */
const restoring = (e: LedgerEntry, originalChars: number) =>
  e.restore !== undefined || (e.edit !== undefined && e.edit.messages > 0 && e.edit.chars === originalChars);

/** One entry of an arm's prompt: its piece unedited, and the piece it shows (none: omitted). */
interface Slot {
  base: Piece;
  shown: Piece | undefined;
}

/**
 * One arm's prompt as Pi projects the branch: from the latest compaction (its kept entries first), each
 * entry with its latest edit. Entries and edits are applied as they come and the prompt is rebuilt only
 * from the first entry an edit changed; a compaction projects the list again.
 */
class Arm {
  #slots: Slot[] = [{ base: SYSTEM, shown: SYSTEM }];
  /** Where each entry's slot stands. */
  #at = new Map<string, number>();
  #dirty = false;
  /** The latest edit of each target seen so far, compacted away or not. */
  readonly #edits = new Map<string, LedgerEntry>();
  /** The prompt handed out, the slot each piece index stands at, and the first slot changed since. */
  #pieces: Piece[] = [];
  #pos: number[] = [];
  #changedSlot = 0;
  /** Characters of the prompt handed out. */
  #chars = 0;

  readonly withEdits: boolean;

  constructor(withEdits: boolean) {
    this.withEdits = withEdits;
  }

  add(e: LedgerEntry): void {
    if (e.type === "context_edit") {
      if (!this.withEdits || !e.edit) return;
      this.#edits.set(e.edit.targetId, e);
      if (this.#dirty) return;
      const at = this.#at.get(e.edit.targetId);
      const slot = at === undefined ? undefined : this.#slots[at];
      if (at === undefined || !slot) return;
      slot.shown =
        e.edit.messages === 0
          ? undefined
          : restoring(e, slot.base.chars)
            ? slot.base
            : { ...slot.base, key: `${slot.base.id}@${e.id}`, chars: e.edit.chars };
      this.#changedSlot = Math.min(this.#changedSlot, at);
    } else if (e.restore) {
      if (!this.withEdits) return;
      for (const id of e.restore) {
        this.#edits.set(id, e);
        const at = this.#at.get(id);
        const slot = at === undefined ? undefined : this.#slots[at];
        if (this.#dirty || at === undefined || !slot) continue;
        // The original, the same content the provider saw before any edit: the same key.
        slot.shown = slot.base;
        this.#changedSlot = Math.min(this.#changedSlot, at);
      }
    } else if (e.type === "compaction") this.#dirty = true;
    else if (!this.#dirty && e.messages > 0 && !(e.recall && !this.withEdits)) {
      const piece: Piece = { id: e.id, key: e.id, chars: e.chars, origChars: e.chars, kind: e.kind };
      this.#at.set(e.id, this.#slots.length);
      this.#changedSlot = Math.min(this.#changedSlot, this.#slots.length);
      this.#slots.push({ base: piece, shown: piece });
    }
  }

  /**
   * The prompt before the next request, its characters, and the first piece that may differ from the
   * previous call's. The list is this object's own: read it before the next `add`.
   */
  current(list: readonly LedgerEntry[]): { pieces: readonly Piece[]; from: number; chars: number } {
    if (this.#dirty) {
      this.#slots = [{ base: SYSTEM, shown: SYSTEM }, ...this.#project(list)];
      this.#at = new Map(this.#slots.map((s, i) => [s.base.id, i]));
      this.#changedSlot = 0;
      this.#dirty = false;
    }
    const slot = this.#changedSlot;
    const from = slot < this.#pos.length ? (this.#pos[slot] as number) : this.#pieces.length;
    for (let i = from; i < this.#pieces.length; i++) this.#chars -= (this.#pieces[i] as Piece).chars;
    this.#pieces.length = from;
    this.#pos.length = Math.min(this.#pos.length, slot);
    for (let s = slot; s < this.#slots.length; s++) {
      this.#pos.push(this.#pieces.length);
      const shown = (this.#slots[s] as Slot).shown;
      if (!shown) continue;
      this.#pieces.push(shown);
      this.#chars += shown.chars;
    }
    this.#changedSlot = this.#slots.length;
    return { pieces: this.#pieces, from, chars: this.#chars };
  }

  /** Pi's projection: from the latest compaction (its kept entries first), each entry with its latest edit. */
  #project(list: readonly LedgerEntry[]): Slot[] {
    let compactionAt = -1;
    for (let i = list.length - 1; i >= 0; i--) {
      if (list[i]?.type === "compaction") {
        compactionAt = i;
        break;
      }
    }
    const context: LedgerEntry[] = [];
    if (compactionAt < 0) context.push(...list);
    else {
      const compaction = list[compactionAt] as LedgerEntry;
      context.push(compaction);
      let kept = false;
      for (let i = 0; i < compactionAt; i++) {
        const e = list[i] as LedgerEntry;
        if (e.id === compaction.firstKeptId) kept = true;
        if (kept && !e.system) context.push(e);
      }
      context.push(...list.slice(compactionAt + 1));
    }
    const edits = new Map<string, LedgerEntry>();
    if (this.withEdits) {
      for (const e of context) {
        if (e.type === "context_edit" && e.edit) edits.set(e.edit.targetId, e);
        for (const id of e.restore ?? []) edits.set(id, e);
      }
    }
    const slots: Slot[] = [];
    context.forEach((e, index) => {
      // Only the newest compaction, at the head, shows its summary.
      if ((e.type === "compaction" && index > 0) || e.messages === 0 || (e.recall && !this.withEdits)) return;
      const base: Piece = { id: e.id, key: e.id, chars: e.chars, origChars: e.chars, kind: e.kind };
      const edit = edits.get(e.id);
      if (edit?.edit?.messages === 0) {
        slots.push({ base, shown: undefined });
        return;
      }
      if (edit && restoring(edit, e.chars)) {
        slots.push({ base, shown: base });
        return;
      }
      const known = this.#edits.get(e.id);
      slots.push({
        base,
        shown: { ...base, key: known ? `${e.id}@${known.id}` : e.id, chars: edit?.edit ? edit.edit.chars : e.chars },
      });
    });
    return slots;
  }
}

/** Recorded usage with a prompt: the branch's requests are calibrated once one has it. */
const hasUsage = (e: LedgerEntry) => e.request?.usage !== undefined && promptTokens(e.request.usage) > 0;

/** Where one pricing of the branch stands: both arms, the simulated requests, the passes. */
class Pricing {
  readonly on = new Arm(true);
  readonly off = new Arm(false);
  readonly onList: LedgerEntry[] = [];
  readonly offList: LedgerEntry[] = [];
  readonly simulator: MoneySimulator;
  readonly passes: PassCost[] = [];
  requests = 0;
  editsSinceRecord = 0;
  /** Prompt tokens kept out, Σ over the requests (chars ÷ 4). */
  tokens = 0;
  last?: { model: string; offTokens: number; onTokens: number };

  constructor(calibrated: boolean, profiles: ReadonlyMap<string, CacheProfile>) {
    const heads = calibrated
      ? [{ n: 1, at: 0, model: "", usage: { input: 1, output: 0, cacheRead: 0, cacheWrite: 0, cost: 0 } }]
      : [];
    this.simulator = new MoneySimulator(heads, profiles);
  }

  add(e: LedgerEntry): void {
    if (e.request) {
      const off = this.off.current(this.offList);
      const on = this.on.current(this.onList);
      this.requests++;
      this.simulator.request({
        n: this.requests,
        at: e.request.at,
        model: e.request.model,
        off: off.pieces,
        on: on.pieces,
        offFrom: off.from,
        onFrom: on.from,
        // What the provider was sent and billed: the branch as it is.
        rec: on.pieces,
        recFrom: on.from,
        outputChars: e.request.outputChars,
        ...(e.request.usage ? { usage: e.request.usage } : {}),
      });
      const offTokens = off.chars / CHARS_PER_TOKEN;
      const onTokens = on.chars / CHARS_PER_TOKEN;
      this.tokens += Math.max(0, offTokens - onTokens);
      this.last = { model: e.request.model, offTokens, onTokens };
    }
    if (e.type === "context_edit") this.editsSinceRecord++;
    else if (e.record) {
      this.passes.push({
        pass: this.passes.length + 1,
        afterRequest: this.requests,
        edited: this.editsSinceRecord > 0,
        classifier: e.record.costUsd,
      });
      this.editsSinceRecord = 0;
    } else if (e.messages > 0) this.editsSinceRecord = 0;
    this.onList.push(e);
    this.on.add(e);
    if (e.type !== "context_edit") {
      this.offList.push(e);
      this.off.add(e);
    }
  }
}

/**
 * The branch priced as it grows: entries are appended as the branch gets them and priced a slice at a
 * time, so each new entry costs its own request's pricing, not the branch's. Guard on is the branch as it
 * is, guard off the same branch without its context edits; each model's cache profile is learned from the
 * branch's recorded usage as the replay learns it (main/replay/money-log's learnProfiles) and handed in as
 * it changes. A profile that changes how a model caches (behaviour, TTL) prices the branch again from its
 * start; new prices alone only change the dollars. Classifier dollars are the guard records' own.
 */
export class LivePricer {
  readonly #ledger: LedgerEntry[] = [];
  #profiles: ReadonlyMap<string, CacheProfile> = new Map();
  #pricing: Pricing | undefined;
  /** Ledger entries the pricing has taken. */
  #done = 0;
  #calibrated = false;

  /** Entries appended so far. */
  get length(): number {
    return this.#ledger.length;
  }

  /** Whether every appended entry is priced. */
  get priced(): boolean {
    return this.#pricing !== undefined && this.#done === this.#ledger.length;
  }

  /** The branch's next entries, in order. */
  append(entries: readonly LedgerEntry[]): void {
    for (const e of entries) {
      this.#ledger.push(e);
      if (!this.#calibrated && hasUsage(e)) {
        // Calibration on recorded usage covers every request: the branch is priced again.
        this.#calibrated = true;
        this.#pricing = undefined;
      }
    }
  }

  /** The profiles learned from the branch so far. */
  useProfiles(profiles: ReadonlyMap<string, CacheProfile>): void {
    this.#profiles = profiles;
    if (this.#pricing && !this.#pricing.simulator.useProfiles(profiles)) this.#pricing = undefined;
  }

  /**
   * Prices appended entries while `more()` says to go on (checked between entries, at least one is
   * priced); returns whether all are priced.
   */
  advance(more: () => boolean = () => true): boolean {
    if (!this.#pricing) {
      this.#pricing = new Pricing(this.#calibrated, this.#profiles);
      this.#done = 0;
    }
    const pricing = this.#pricing;
    do {
      const e = this.#ledger[this.#done];
      if (!e) break;
      pricing.add(e);
      this.#done++;
    } while (more());
    return this.#done === this.#ledger.length;
  }

  /** The figures of what is priced so far. */
  result(): SavedSoFar {
    const pricing = this.#pricing ?? new Pricing(this.#calibrated, this.#profiles);
    const money = pricing.simulator.finish(pricing.passes, "the guard's records");
    const last = pricing.last;
    const lastProfile = last ? this.#profiles.get(last.model) : undefined;
    // Dollars only for a model the session pays (a free plan or an unpriced model shows tokens).
    const lastPrices =
      lastProfile?.priceSource === "recorded" || lastProfile?.priceSource === "registry"
        ? lastProfile.prices
        : undefined;
    const misses = money.models
      .filter((m) => m.calibration?.misses)
      .map((m) => ({ model: m.model, error: m.calibration?.error.dollars ?? 0 }));
    return {
      requests: pricing.requests,
      priced: money.priced,
      off: money.off.dollars,
      on: money.on.dollars,
      classifier: money.classifier.dollars,
      net: money.net,
      tokens: Math.round(pricing.tokens),
      ...(misses.length > 0 ? { misses } : {}),
      ...(last
        ? {
            last: {
              offTokens: Math.round(last.offTokens),
              onTokens: Math.round(last.onTokens),
              ...(lastPrices ? { cacheRead: lastPrices.cacheRead || lastPrices.input } : {}),
            },
          }
        : {}),
    };
  }
}

/** The whole branch priced at once (LivePricer in one go). */
export function savedSoFar(ledger: readonly LedgerEntry[], profiles: ReadonlyMap<string, CacheProfile>): SavedSoFar {
  const pricer = new LivePricer();
  pricer.append(ledger);
  pricer.useProfiles(profiles);
  pricer.advance();
  return pricer.result();
}

/**
 * What each further request saves at today's context: the tokens kept out, read from a warm cache at the
 * last request's model price. Undefined without a price.
 */
export function perRequestAhead(saved: SavedSoFar): number | undefined {
  const l = saved.last;
  if (!l || l.cacheRead === undefined) return undefined;
  return (Math.max(0, l.offTokens - l.onTokens) * l.cacheRead) / 1e6;
}
