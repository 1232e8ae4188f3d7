// The worker's copies of sessions, one store per client (a PassWorker on Pi's thread: one per session).
// Entries are immutable by id (an edited entry is resent, but without its raw text when the store already
// holds it), so the main thread sends each entry once, and the order of the projection as "keep the first
// k ids of the last order, then these": the cost of a pass on the main thread grows with what is new,
// not with the size of the session.
import { randomUUID } from "node:crypto";
import { PlanIndex } from "../../core/distill/plan-index.ts";
import type { SnapEntry } from "../../core/shared/types.ts";
import type { SyncInput } from "./protocol.ts";

class Store {
  /** Identifies this store; a replaced worker or a dropped store starts empty under a new id. */
  readonly id = randomUUID();
  readonly entries = new Map<string, SnapEntry>();
  /** Parts of texts too large for one message, by `${field}:${id}`, until their entry arrives. */
  readonly parts = new Map<string, { list: string[]; length: number }>();
  order: string[] = [];
  orderVersion: number | undefined;
  /** What plans read about the whole session, kept with the order (core/distill/plan-index.ts). */
  index = new PlanIndex();
  /** Ids received since the last order: the index looks at their positions for edits. */
  freshSince: string[] = [];
  /** The entries of the last order, as the last plan received them. */
  last: SnapEntry[] = [];
  clear(): void {
    this.entries.clear();
    this.parts.clear();
    this.order = [];
    this.orderVersion = undefined;
    this.index = new PlanIndex();
    this.freshSince = [];
    this.last = [];
  }
}

/** The client of callers that name none (tests, the inline backend's single user). */
export const DEFAULT_CLIENT = "default";

/** Sessions whose copies one thread keeps; the least recently used beyond this is dropped (it resends). */
export const MAX_STORES = 8;

/** The copies of sessions one thread keeps, by client (the thread's PassThread owns them). */
export class SessionStores {
  readonly #stores = new Map<string, Store>();

  /** How many clients have a store. */
  get size(): number {
    return this.#stores.size;
  }

  clients(): IterableIterator<string> {
    return this.#stores.keys();
  }

  /** Syncs a client's store (made when it has none) and returns the entries in the projection's order. */
  sync(input: SyncInput, client = DEFAULT_CLIENT): SyncResult {
    return syncEntries(input, this.#storeOf(client));
  }

  /** Empties a client's store, as a new worker starts. */
  clear(client = DEFAULT_CLIENT): void {
    this.#stores.get(client)?.clear();
  }

  /** Drops a client's store (its session ended). */
  drop(client: string): boolean {
    return this.#stores.delete(client);
  }

  #storeOf(client: string): Store {
    const stores = this.#stores;
    let store = stores.get(client);
    if (store) stores.delete(client);
    else store = new Store();
    stores.set(client, store);
    while (stores.size > MAX_STORES) stores.delete(stores.keys().next().value as string);
    return store;
  }
}

export type SyncResult =
  | { storeId: string; entries: SnapEntry[]; index?: PlanIndex }
  | { storeId: string; missing: string[] };

/** Forget everything: the caller resends it all. */
function startOver(store: Store, missing: string[]): SyncResult {
  store.clear();
  return { storeId: store.id, missing };
}

function joined(store: Store, key: string): string | undefined {
  const held = store.parts.get(key);
  store.parts.delete(key);
  return held?.list.join("");
}

/** The entries of `ids`, in order; the ids the store lacks go to `missing`. */
function placed(entries: ReadonlyMap<string, SnapEntry>, ids: readonly string[], missing: string[]): SnapEntry[] {
  const out: SnapEntry[] = new Array(ids.length);
  for (let i = 0; i < ids.length; i++) {
    const e = entries.get(ids[i] as string);
    if (e) out[i] = e;
    else missing.push(ids[i] as string);
  }
  return out;
}

/**
 * The last projection with `tail` after it and the entries received since in their places: what
 * `placed` gives for the whole order when the order only grew, without looking up every id. A copy, since
 * a held pass and the index keep the last one.
 */
function extended(store: Store, tail: readonly string[], missing: string[]): SnapEntry[] {
  const out = store.last.slice();
  for (const id of store.freshSince) {
    const at = store.index.positionOf(id);
    if (at >= 0 && at < out.length && out[at]?.id === id) out[at] = store.entries.get(id) as SnapEntry;
  }
  for (const e of placed(store.entries, tail, missing)) out.push(e);
  return out;
}

function syncEntries(input: SyncInput, store: Store): SyncResult {
  const { entries, parts } = store;
  // The caller counted on entries or an order this store does not have (a replaced worker, a sync the
  // caller never saw answered): start over so it resends everything.
  // A caller that knows no store yet sends everything: whatever this store held is dropped, not asked for.
  if (input.storeId === undefined) {
    if (input.base === undefined && store.orderVersion !== undefined) store.clear();
  } else if (input.storeId !== store.id) return startOver(store, []);
  if (input.base !== store.orderVersion) return startOver(store, []);
  for (const p of input.pieces ?? []) {
    const key = `${p.field}:${p.id}`;
    const held = parts.get(key);
    // A text starts over at offset 0 (what a failed pass left is dropped); a gap means lost pieces.
    if (p.offset === 0) parts.set(key, { list: [p.part], length: p.part.length });
    else if (held && held.length === p.offset) {
      held.list.push(p.part);
      held.length += p.part.length;
    } else return startOver(store, [p.id]);
  }
  const missing: string[] = [];
  for (const sent of input.fresh) {
    const { rawFromStore, textInPieces, rawInPieces, ...e } = sent;
    if (textInPieces) {
      const text = joined(store, `text:${e.id}`);
      if (text === undefined) missing.push(e.id);
      else e.text = text;
    }
    if (rawInPieces) {
      const rawText = joined(store, `rawText:${e.id}`);
      if (rawText === undefined) missing.push(e.id);
      else e.rawText = rawText;
    }
    if (rawFromStore) {
      const held = entries.get(e.id);
      const rawText = held?.edited ? held.rawText : held?.text;
      if (rawText === undefined) missing.push(e.id);
      else e.rawText = rawText;
    }
    entries.set(e.id, e);
    store.freshSince.push(e.id);
  }
  if (missing.length > 0) return startOver(store, missing);
  if (!input.order) return { storeId: store.id, entries: [] };
  const { keep, tail, version } = input.order;
  if (keep > store.order.length) return startOver(store, []);
  const appended = keep > 0 && keep === store.order.length && store.last.length === keep;
  const ids = appended ? store.order : keep === 0 ? tail : store.order.slice(0, keep).concat(tail);
  const out = appended ? extended(store, tail, missing) : placed(entries, ids, missing);
  if (missing.length > 0) return startOver(store, missing);
  if (appended) for (const id of tail) ids.push(id);
  store.order = ids;
  store.orderVersion = version;
  store.last = out;
  store.index.update(out, keep, store.freshSince);
  store.freshSince = [];
  return { storeId: store.id, entries: out, index: store.index };
}
