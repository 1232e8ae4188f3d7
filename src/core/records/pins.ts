// What the user put back or protected (`/guard restore`, `/guard pin`): custom entries on the branch, so
// they follow /tree, reloads and compaction like the guard's own records, and nothing is kept in memory.
// Every pass leaves a pinned entry alone; a restored entry is pinned too. Read defensively: these come
// back from session files.

/** The custom entry type of a restore or pin request. */
export const PIN_TYPE = "context-guard-pin";

export type PinAction = "pin" | "restore";

/** The data of a `context-guard-pin` entry: the entries restored (an exchange: its prompt first) or pinned. */
export interface PinData {
  v: 1;
  action: PinAction;
  ids: string[];
  /** A restore the model's recalls asked for: the recall results it turned into notes (pinned too). */
  notes?: string[];
}

/** The parts of a branch entry (raw, or a snapshot) these functions read. */
export interface PinEntryLike {
  type: string;
  customType?: string;
  data?: unknown;
  /** context_edit entries: the entry they edit. */
  targetId?: string;
}

export interface Pins {
  /** Every entry no pass may judge again: the pinned and the restored ones. */
  pinned: Set<string>;
  /** The entries a restore request named (a subset of `pinned`). */
  restored: Set<string>;
  /** The items restored: the first entry of each request (an exchange's prompt). */
  restoredItems: Set<string>;
  /** Recall results turned into notes when their entry came back (never listed as out of context). */
  notes: Set<string>;
}

export function pinData(action: PinAction, ids: readonly string[], notes?: readonly string[]): PinData {
  return notes?.length ? { v: 1, action, ids: [...ids], notes: [...notes] } : { v: 1, action, ids: [...ids] };
}

/** The request an entry holds, or undefined when it is none (or a damaged one). */
export function readPinData(e: PinEntryLike): PinData | undefined {
  if (e.type !== "custom" || e.customType !== PIN_TYPE) return undefined;
  const d = e.data as Partial<PinData> | undefined;
  if (typeof d !== "object" || d === null || (d.action !== "pin" && d.action !== "restore")) return undefined;
  if (!Array.isArray(d.ids)) return undefined;
  const ids = d.ids.filter((id): id is string => typeof id === "string" && id.length > 0);
  const notes = Array.isArray(d.notes) ? d.notes.filter((id): id is string => typeof id === "string") : [];
  return ids.length > 0 ? pinData(d.action, ids, notes) : undefined;
}

export function noPins(): Pins {
  return { pinned: new Set(), restored: new Set(), restoredItems: new Set(), notes: new Set() };
}

/** Adds what one entry pins or restores (none: nothing) to `pins`. */
export function addPins(pins: Pins, e: PinEntryLike): void {
  const d = readPinData(e);
  if (!d) return;
  if (d.action === "restore") pins.restoredItems.add(d.ids[0] as string);
  for (const id of d.ids) {
    pins.pinned.add(id);
    if (d.action === "restore") pins.restored.add(id);
  }
  for (const id of d.notes ?? []) {
    pins.pinned.add(id);
    pins.notes.add(id);
  }
}

/** The pinned and restored entries named by the requests among `entries` (in any order). */
export function readPins(entries: readonly PinEntryLike[]): Pins {
  const pins = noPins();
  for (const e of entries) addPins(pins, e);
  return pins;
}

/** Whether an item touching these entries may be judged: none of them is pinned. */
export function unpinned(pins: Pins, ...ids: readonly string[]): boolean {
  if (pins.pinned.size === 0) return true;
  for (const id of ids) if (pins.pinned.has(id)) return false;
  return true;
}

/**
 * Entries a restore request named that no `context_edit` has targeted since (in branch order): their
 * restoring edit is still to be appended at the next boundary, and until then the request sent to the
 * model is given the original. Any later edit of the target ends the wait: Pi shows the latest edit.
 */
export function pendingRestores(branch: readonly PinEntryLike[]): string[] {
  const pending = new Set<string>();
  for (const e of branch) {
    if (e.type === "context_edit") {
      if (typeof e.targetId === "string") pending.delete(e.targetId);
      continue;
    }
    const d = readPinData(e);
    if (d?.action === "restore") for (const id of d.ids) pending.add(id);
  }
  return [...pending];
}

/** How many items were restored, and how many other entries pinned (for `/guard` and the footer). */
export function pinCounts(pins: Pins): { restored: number; pinned: number } {
  let pinned = 0;
  for (const id of pins.pinned) if (!pins.restored.has(id) && !pins.notes.has(id)) pinned++;
  return { restored: pins.restoredItems.size, pinned };
}
