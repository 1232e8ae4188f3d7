// Main-thread bookkeeping of which entries the pass worker already holds (see workers/session-store.ts).
import type { SnapEntry } from "../core/types.ts";
import type { SyncEntry, SyncInput } from "../workers/session-store.ts";

/** Unedited entries are immutable by id; edited ones can change with every edit and are compared. */
const stable = (e: SnapEntry) => !e.edited && e.type !== "custom_message";

/** Plain-data equality (what a structured clone preserves); anything unusual counts as different. */
function same(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!same(a[i], b[i])) return false;
    return true;
  }
  const pa = Object.getPrototypeOf(a);
  if ((pa !== Object.prototype && pa !== null) || Object.getPrototypeOf(b) !== pa) return false;
  const ka = Object.keys(a);
  if (ka.length !== Object.keys(b).length) return false;
  for (const k of ka) {
    if (!Object.hasOwn(b, k) || !same((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]))
      return false;
  }
  return true;
}

export class WorkerMirror {
  #storeId: string | undefined;
  /** The text of each unedited entry the store holds, by id. */
  #stable = new Map<string, string>();
  /**
   * The version the store holds of each entry that can change (edited entries, custom messages). An
   * entry equal to it is not sent again: without this, every pass would resend every distilled output
   * of the session, raw text included, and the per-pass cost would grow with the session.
   */
  #held = new Map<string, SnapEntry>();
  /** Entries sent without their raw text (the store fills it in), mapped to the full snapshot. */
  #slim = new WeakMap<SyncEntry, SnapEntry>();

  /** The store the mirror's bookkeeping refers to. */
  get storeId(): string | undefined {
    return this.#storeId;
  }

  prepare(entries: readonly SnapEntry[]): SyncInput {
    const fresh: SyncEntry[] = [];
    const order: string[] = new Array(entries.length);
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i] as SnapEntry;
      order[i] = e.id;
      if (stable(e)) {
        if (!this.#stable.has(e.id)) fresh.push(e);
        continue;
      }
      const held = this.#held.get(e.id);
      if (same(held, e)) continue;
      // A new edit of an output the store holds: its raw text is already there, only the edit travels.
      const storeRaw = this.#stable.get(e.id) ?? held?.rawText;
      if (e.rawText !== undefined && storeRaw === e.rawText) {
        const { rawText: _, ...rest } = e;
        const slim: SyncEntry = { ...rest, rawFromStore: true };
        this.#slim.set(slim, e);
        fresh.push(slim);
      } else fresh.push(e);
    }
    return { storeId: this.#storeId, fresh, order };
  }

  /** The store answered: remember what it now holds. */
  accept(storeId: string, sync: SyncInput): void {
    if (storeId !== this.#storeId) this.reset(storeId);
    for (const sent of sync.fresh) {
      const e = this.#slim.get(sent) ?? sent;
      if (stable(e)) {
        this.#stable.set(e.id, e.text);
        this.#held.delete(e.id);
      } else {
        this.#stable.delete(e.id);
        this.#held.set(e.id, e);
      }
    }
  }

  /** The store is new or was cleared: everything must be sent again. */
  reset(storeId: string): void {
    this.#storeId = storeId;
    this.#stable.clear();
    this.#held.clear();
  }
}
