// Main-thread bookkeeping of which entries the pass worker already holds (see workers/pass/session-store.ts).
import { randomUUID } from "node:crypto";
import type { SnapEntry } from "../../core/shared/types.ts";
import type { OrderDelta, SyncEntry, SyncInput } from "../../workers/pass/protocol.ts";
import { drain, PACE_STRIDE, paced, type Steps } from "../platform/pace.ts";

/**
 * Unedited messages are immutable by id. Edited ones change with every edit, and what other entries show
 * can change with their position (an older compaction inside a newer one's range shows nothing): those
 * are compared.
 */
const stable = (e: SnapEntry) => e.type === "message" && !e.edited;

/** Plain-data equality (what a structured clone preserves); anything unusual counts as different. */
export function same(a: unknown, b: unknown): boolean {
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

/** Tells where a snapshot array may differ from an earlier one (the SnapshotBuilder that built both). */
export interface ChangeSource {
  changesBetween(
    then: readonly SnapEntry[],
    now: readonly SnapEntry[],
  ): { from: number; changed: readonly number[] } | undefined;
}

export class WorkerMirror {
  /** Names the worker's store this mirror keeps track of (a thread keeps the stores of several sessions). */
  readonly client = randomUUID();
  readonly #builder: ChangeSource | undefined;
  #storeId: string | undefined;
  /** The text of each unedited entry the store holds, by id. */
  #stable = new Map<string, string>();
  /**
   * The version the store holds of each entry that can change (edited entries, custom messages). An
   * entry equal to it is not sent again: without this, every pass would resend every distilled output
   * of the session, raw text included, and the per-pass cost would grow with the session.
   */
  #held = new Map<string, SnapEntry>();
  /** Entries sent in another shape than their snapshot (raw text left out, text in pieces), mapped back. */
  #sentAs = new WeakMap<SyncEntry, SnapEntry>();
  /**
   * The projection the store last accepted as its order, and that order's version. A snapshot at the same
   * position as then is the very object the store holds, so it needs no lookup; the order itself is sent
   * as "keep the first k ids, then these".
   */
  #order: readonly SnapEntry[] = [];
  #orderVersion: number | undefined;
  #nextVersion = 1;
  /** The projection each prepared order stands for, until the store accepts it. */
  #placing = new WeakMap<SyncInput, readonly SnapEntry[]>();
  /** Ids sent outside an order since the last accepted order: their position in #order may be stale. */
  #sentSince = new Set<string>();

  /** With the builder of the snapshots, a pass skips the positions that still hold what the store has. */
  constructor(builder?: ChangeSource) {
    this.#builder = builder;
  }

  /** The store the mirror's bookkeeping refers to. */
  get storeId(): string | undefined {
    return this.#storeId;
  }

  /** The order version the store holds as far as this mirror knows (every sync carries it). */
  get orderVersion(): number | undefined {
    return this.#orderVersion;
  }

  /** The sync for a plan: what the store lacks, and the projection's order. */
  prepare(entries: readonly SnapEntry[]): SyncInput {
    return drain(this.steps(entries));
  }

  /** The same, handing the event loop back between slices of a large projection. */
  preparePaced(entries: readonly SnapEntry[]): Promise<SyncInput> {
    return paced(this.steps(entries));
  }

  /** An entry the store does not hold as it is now, in the shape to send it; undefined if it does. */
  toSend(e: SnapEntry): SyncEntry | undefined {
    if (stable(e)) return this.#stable.has(e.id) ? undefined : e;
    const held = this.#held.get(e.id);
    if (same(held, e)) return undefined;
    // A new edit of an output the store holds: its raw text is already there, only the edit travels.
    const storeRaw = this.#stable.get(e.id) ?? held?.rawText;
    if (e.rawText !== undefined && storeRaw === e.rawText) {
      const { rawText: _, ...rest } = e;
      return this.sentAs({ ...rest, rawFromStore: true }, e);
    }
    return e;
  }

  /** The snapshot an entry from `prepare` stands for. */
  fullOf(sent: SyncEntry): SnapEntry {
    return this.#sentAs.get(sent) ?? sent;
  }

  /** Records that `sent` stands for the snapshot `full` (a slimmed or split copy). */
  sentAs(sent: SyncEntry, full: SnapEntry): SyncEntry {
    this.#sentAs.set(sent, full);
    return sent;
  }

  *steps(entries: readonly SnapEntry[]): Steps<SyncInput> {
    const fresh: SyncEntry[] = [];
    const last = this.#order;
    const checkSent = this.#sentSince.size > 0;
    // Which positions can hold another snapshot than the accepted order: from the snapshot builder when
    // it can tell (then a steady pass looks only at what is new or re-edited), else every position.
    const changes = checkSent || last.length === 0 ? undefined : this.#builder?.changesBetween(last, entries);
    let keep = 0;
    let prefix = true;
    let visits = 0;
    const visit = (i: number): void => {
      const e = entries[i] as SnapEntry;
      const was = last[i];
      // The same snapshot object as in the accepted order is the common case: no field is read.
      if (was === e) {
        if (prefix) keep = i + 1;
        if (!(checkSent && this.#sentSince.has(e.id))) return;
      } else if (prefix) {
        if (was !== undefined && was.id === e.id) keep = i + 1;
        else prefix = false;
      }
      const send = this.toSend(e);
      if (send) fresh.push(send);
    };
    if (changes) {
      // Positions left out hold the very objects of the accepted order, so the kept prefix runs on
      // through them.
      for (const i of changes.changed) {
        if ((++visits & (PACE_STRIDE - 1)) === 0) yield;
        if (prefix) keep = i;
        visit(i);
      }
      if (prefix) keep = changes.from;
      for (let i = changes.from; i < entries.length; i++) {
        if ((++visits & (PACE_STRIDE - 1)) === 0) yield;
        visit(i);
      }
    } else {
      for (let i = 0; i < entries.length; i++) {
        if ((++visits & (PACE_STRIDE - 1)) === 0) yield;
        visit(i);
      }
    }
    const tail: string[] = new Array(entries.length - keep);
    for (let i = keep; i < entries.length; i++) tail[i - keep] = (entries[i] as SnapEntry).id;
    const order: OrderDelta = { keep, tail, version: this.#nextVersion++ };
    const sync: SyncInput = { storeId: this.#storeId, base: this.#orderVersion, fresh, order };
    this.#placing.set(sync, entries);
    return sync;
  }

  /** The store answered: remember what it now holds (and, for a plan's sync, its order). */
  accept(storeId: string, sync: SyncInput): void {
    if (storeId !== this.#storeId) this.reset(storeId);
    for (const sent of sync.fresh) {
      const e = this.#sentAs.get(sent) ?? sent;
      if (stable(e)) {
        this.#stable.set(e.id, e.text);
        this.#held.delete(e.id);
      } else {
        this.#stable.delete(e.id);
        this.#held.set(e.id, e);
      }
      if (!sync.order) this.#sentSince.add(e.id);
    }
    const placed = sync.order ? this.#placing.get(sync) : undefined;
    if (placed && sync.order) {
      this.#order = placed;
      this.#orderVersion = sync.order.version;
      this.#sentSince.clear();
    }
  }

  /** The store is new or was cleared (or is unknown: none named): everything must be sent again. */
  reset(storeId?: string): void {
    this.#storeId = storeId;
    this.#stable.clear();
    this.#held.clear();
    this.#order = [];
    this.#orderVersion = undefined;
    this.#sentSince.clear();
  }
}
