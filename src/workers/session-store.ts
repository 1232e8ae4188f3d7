// The worker's copy of the session. Entries are immutable by id (an edited entry is resent, but without
// its raw text when this store already holds it), so the main thread sends each entry once and afterwards
// only the ids in projection order: the cost of a pass on the main thread grows with what is new, not
// with the size of the session.
import { randomUUID } from "node:crypto";
import type { SnapEntry } from "../core/types.ts";

/** Identifies this worker's store; a replaced worker starts empty under a new id. */
export const STORE_ID = randomUUID();

const entries = new Map<string, SnapEntry>();

/**
 * An entry as sent. `rawFromStore`: an edited entry sent without `rawText`, which is the text this store
 * holds for the id (the entry's unedited text, or the raw text of its previous edit).
 */
export type SyncEntry = SnapEntry & { rawFromStore?: true };

export interface SyncInput {
  /** The store the caller believes it filled; another id means the caller's bookkeeping is stale. */
  storeId?: string;
  /** Entries the store may not have, or whose content changed (edited ones). */
  fresh: SyncEntry[];
  /** Every entry id of the projection, in order. */
  order: string[];
}

export type SyncResult = { storeId: string; entries: SnapEntry[] } | { storeId: string; missing: string[] };

export function syncEntries(input: SyncInput): SyncResult {
  if (input.storeId !== undefined && input.storeId !== STORE_ID) {
    // The caller counted on entries a replaced worker had: start over so it resends everything.
    entries.clear();
    return { storeId: STORE_ID, missing: input.order };
  }
  const missing: string[] = [];
  for (const e of input.fresh) {
    if (!e.rawFromStore) {
      entries.set(e.id, e);
      continue;
    }
    const held = entries.get(e.id);
    const rawText = held?.edited ? held.rawText : held?.text;
    if (rawText === undefined) {
      // Not what the caller thinks this store holds: it resends everything.
      missing.push(e.id);
      continue;
    }
    const { rawFromStore: _, ...entry } = e;
    entries.set(e.id, { ...entry, rawText });
  }
  if (missing.length > 0) return { storeId: STORE_ID, missing };
  const out: SnapEntry[] = new Array(input.order.length);
  input.order.forEach((id, i) => {
    const e = entries.get(id);
    if (e) out[i] = e;
    else missing.push(id);
  });
  return missing.length > 0 ? { storeId: STORE_ID, missing } : { storeId: STORE_ID, entries: out };
}

export function storeSize(): number {
  return entries.size;
}
