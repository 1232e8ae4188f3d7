// What the guard has saved on a live branch so far, in dollars, net of the classifier: the branch as it is
// (guard on) against the same branch without any context edit (guard off), both priced by the replay's
// money model (money.ts). The branch arrives as a ledger of light entries (sizes, no text) that Pi's
// thread builds once per entry; this module rebuilds each request's prompt in both arms the way Pi's
// projection does (the latest compaction, then each entry with its latest edit) and prices them.

import type { CacheProfile } from "../cache/cache-behaviour.ts";
import { CHARS_PER_TOKEN } from "../shared/size.ts";
import type { Piece, PieceKind, Usage } from "./calibrate.ts";
import { SYSTEM_ID } from "./calibrate.ts";
import { type MoneyRequest, type PassCost, priceSession } from "./money.ts";

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
}

const SYSTEM: Piece = { id: SYSTEM_ID, key: SYSTEM_ID, chars: 0, origChars: 0, kind: "system" };

/** One arm's prompt, kept per entry and rebuilt after an edit or a compaction (PromptPieces' rule). */
class Arm {
  #pieces: Piece[] = [SYSTEM];
  #dirty = false;
  readonly #edits = new Map<string, LedgerEntry>();

  readonly withEdits: boolean;

  constructor(withEdits: boolean) {
    this.withEdits = withEdits;
  }

  add(e: LedgerEntry): void {
    if (e.type === "context_edit") {
      if (!this.withEdits || !e.edit) return;
      this.#edits.set(e.edit.targetId, e);
      this.#dirty = true;
    } else if (e.type === "compaction") this.#dirty = true;
    else if (!this.#dirty && e.messages > 0) {
      this.#pieces.push({ id: e.id, key: e.id, chars: e.chars, origChars: e.chars, kind: e.kind });
    }
  }

  current(list: readonly LedgerEntry[]): Piece[] {
    if (this.#dirty) {
      this.#pieces = [SYSTEM, ...this.#project(list)];
      this.#dirty = false;
    }
    return [...this.#pieces];
  }

  /** Pi's projection: from the latest compaction (its kept entries first), each entry with its latest edit. */
  #project(list: readonly LedgerEntry[]): Piece[] {
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
    if (this.withEdits) for (const e of context) if (e.type === "context_edit" && e.edit) edits.set(e.edit.targetId, e);
    const pieces: Piece[] = [];
    context.forEach((e, index) => {
      // Only the newest compaction, at the head, shows its summary.
      if (e.type === "compaction" && index > 0) return;
      const edit = edits.get(e.id);
      const messages = edit?.edit ? edit.edit.messages : e.messages;
      if (messages === 0 || e.messages === 0) return;
      const known = this.#edits.get(e.id);
      pieces.push({
        id: e.id,
        key: known ? `${e.id}@${known.id}` : e.id,
        chars: edit?.edit ? edit.edit.chars : e.chars,
        origChars: e.chars,
        kind: e.kind,
      });
    });
    return pieces;
  }
}

/**
 * Guard on (the branch) against guard off (the branch without its context edits), priced per request
 * with each model's cache profile, learned from the branch's recorded usage as the replay learns it
 * (main/replay/money-log's learnProfiles). Classifier dollars are the guard records' own.
 */
export function savedSoFar(ledger: readonly LedgerEntry[], profiles: ReadonlyMap<string, CacheProfile>): SavedSoFar {
  const on = new Arm(true);
  const off = new Arm(false);
  const onList: LedgerEntry[] = [];
  const offList: LedgerEntry[] = [];
  const requests: MoneyRequest[] = [];
  const passes: PassCost[] = [];
  let editsSinceRecord = 0;
  for (const e of ledger) {
    if (e.request) {
      requests.push({
        n: requests.length + 1,
        at: e.request.at,
        model: e.request.model,
        off: off.current(offList),
        on: on.current(onList),
        outputChars: e.request.outputChars,
        ...(e.request.usage ? { usage: e.request.usage } : {}),
      });
    }
    if (e.type === "context_edit") editsSinceRecord++;
    else if (e.record) {
      passes.push({
        pass: passes.length + 1,
        afterRequest: requests.length,
        edited: editsSinceRecord > 0,
        classifier: e.record.costUsd,
      });
      editsSinceRecord = 0;
    } else if (e.messages > 0) editsSinceRecord = 0;
    onList.push(e);
    on.add(e);
    if (e.type !== "context_edit") {
      offList.push(e);
      off.add(e);
    }
  }
  const money = priceSession(requests, profiles, passes, "the guard's records");
  const tokensOf = (pieces: readonly Piece[]) => pieces.reduce((a, p) => a + p.chars, 0) / CHARS_PER_TOKEN;
  let tokens = 0;
  for (const r of requests) tokens += Math.max(0, tokensOf(r.off) - tokensOf(r.on));
  const last = requests.at(-1);
  const lastProfile = last ? profiles.get(last.model) : undefined;
  // Dollars only for a model the session pays (a free plan or an unpriced model shows tokens).
  const lastPrices =
    lastProfile?.priceSource === "recorded" || lastProfile?.priceSource === "registry" ? lastProfile.prices : undefined;
  return {
    requests: requests.length,
    priced: money.priced,
    off: money.off.dollars,
    on: money.on.dollars,
    classifier: money.classifier.dollars,
    net: money.net,
    tokens: Math.round(tokens),
    ...(last
      ? {
          last: {
            offTokens: Math.round(tokensOf(last.off)),
            onTokens: Math.round(tokensOf(last.on)),
            ...(lastPrices ? { cacheRead: lastPrices.cacheRead || lastPrices.input } : {}),
          },
        }
      : {}),
  };
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
