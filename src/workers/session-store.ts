// The worker's copy of the session. Entries are immutable by id (an edited entry is resent whole), so
// the main thread sends each entry once and afterwards only the ids in projection order: the cost of a
// pass on the main thread grows with what is new, not with the size of the session.
import { randomUUID } from "node:crypto";
import type { SnapEntry } from "../core/types.ts";

/** Identifies this worker's store; a replaced worker starts empty under a new id. */
export const STORE_ID = randomUUID();

const entries = new Map<string, SnapEntry>();

export interface SyncInput {
  /** The store the caller believes it filled; another id means the caller's bookkeeping is stale. */
  storeId?: string;
  /** Entries the store may not have, or whose content changed (edited ones). */
  fresh: SnapEntry[];
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
  for (const e of input.fresh) entries.set(e.id, e);
  const out: SnapEntry[] = new Array(input.order.length);
  const missing: string[] = [];
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
