// What was made while the guard was off. `/guard off` (or a run started with `"enabled": false`) leaves a
// switch entry on the branch, and the first run or command with the guard on again leaves another; the
// entries between them are never judged later, by any kind of item, unless the user asks (`/guard judge`).
// Read from the branch like the pins, so it follows /tree, reloads and compaction. Pure.

/** The custom entry type of a switch of the guard on the branch. */
export const SWITCH_TYPE = "context-guard-switch";

/** The data of a switch entry: on or off from here; `from` names the off switch an "on" switch ends. */
export interface SwitchData {
  v: 1;
  on: boolean;
  from?: string;
  /** `/guard judge`: what was made while off is judged like anything else from now on. */
  judge?: true;
}

/** The parts of a branch entry (raw, or a snapshot) read here. */
export interface SwitchEntryLike {
  id: string;
  type: string;
  customType?: string;
  data?: unknown;
}

export function switchData(on: boolean, from?: string, judge?: boolean): SwitchData {
  return { v: 1, on, ...(from ? { from } : {}), ...(judge ? { judge: true as const } : {}) };
}

/** The switch an entry holds, or undefined (read defensively: it comes back from session files). */
export function readSwitch(e: SwitchEntryLike): SwitchData | undefined {
  if (e.type !== "custom" || e.customType !== SWITCH_TYPE) return undefined;
  const d = e.data as Partial<SwitchData> | undefined;
  if (typeof d !== "object" || d === null || typeof d.on !== "boolean") return undefined;
  return switchData(d.on, typeof d.from === "string" ? d.from : undefined, d.judge === true);
}

/**
 * The ids of the entries made while the guard was off. An "on" switch whose off switch is not among the
 * entries (a compaction dropped it) covers everything before it: what was kept was made after the off.
 */
export function madeWhileOff(entries: readonly SwitchEntryLike[]): Set<string> {
  const fold = new OffSpans();
  for (const e of entries) fold.add(e);
  return fold.off;
}

/** madeWhileOff entry by entry: `off` holds the answer for the entries added so far. */
export class OffSpans {
  readonly off = new Set<string>();
  #isOff = false;
  #seen = new Set<string>();

  add(e: SwitchEntryLike): void {
    const s = readSwitch(e);
    if (!s) {
      if (this.#isOff) this.off.add(e.id);
      this.#seen.add(e.id);
      return;
    }
    if (s.judge) this.off.clear();
    else if (s.on && !this.#isOff && s.from !== undefined && !this.#seen.has(s.from))
      for (const id of this.#seen) this.off.add(id);
    this.#isOff = !s.on;
    this.#seen.add(e.id);
    // Only entries after the newest switch can still be covered by an "on" whose "off" is gone.
    if (s.on) this.#seen = new Set();
  }
}

/** Whether the guard is switched off at the end of these entries (no switch: on). */
export function switchedOff(entries: readonly SwitchEntryLike[]): { off: boolean; at?: string } {
  for (let i = entries.length - 1; i >= 0; i--) {
    const e = entries[i] as SwitchEntryLike;
    const s = readSwitch(e);
    if (s) return { off: !s.on, at: e.id };
  }
  return { off: false };
}
