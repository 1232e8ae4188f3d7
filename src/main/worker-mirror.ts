// Main-thread bookkeeping of which entries the pass worker already holds (see workers/session-store.ts).
import type { SnapEntry } from "../core/types.ts";
import type { SyncInput } from "../workers/session-store.ts";

/** Unedited entries are immutable by id; edited ones change with every edit and are always resent. */
const stable = (e: SnapEntry) => !e.edited && e.type !== "custom_message";

export class WorkerMirror {
  #storeId: string | undefined;
  #sent = new Set<string>();

  prepare(entries: readonly SnapEntry[]): SyncInput {
    const fresh: SnapEntry[] = [];
    const order: string[] = new Array(entries.length);
    entries.forEach((e, i) => {
      order[i] = e.id;
      if (!stable(e) || !this.#sent.has(e.id)) fresh.push(e);
    });
    return { storeId: this.#storeId, fresh, order };
  }

  /** The store answered: remember what it now holds. */
  accept(storeId: string, sync: SyncInput): void {
    if (storeId !== this.#storeId) this.reset(storeId);
    for (const e of sync.fresh) {
      if (stable(e)) this.#sent.add(e.id);
      else this.#sent.delete(e.id);
    }
  }

  /** The store is new or was cleared: everything must be sent again. */
  reset(storeId: string): void {
    this.#storeId = storeId;
    this.#sent.clear();
  }
}
