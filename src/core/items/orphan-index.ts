// Which positions of a projection hold a tool result no call before it answers, kept as the projection
// changes one position at a time (an entry appended, an entry re-projected by an edit). A request is
// walked with the same rule (session/boundary-shape.ts, hasOrphan): an assistant message opens its calls,
// each result closes one, a system message changes nothing and any other message closes all. So a change
// only matters from the last message before it that opens or closes calls to the first one after it: the
// index re-walks that stretch (one turn's results, in practice), not the session.
import { callIdsOf } from "./tool-pairs.ts";

export interface OrphanMessage {
  role?: unknown;
  content?: unknown;
  toolCallId?: unknown;
  stopReason?: unknown;
}

/** The calls still open after one message, or undefined at a result apart from its call (open is reused). */
export function stepOpen(open: string[], m: OrphanMessage): string[] | undefined {
  if (m.role === "toolResult") {
    const k = open.indexOf(String(m.toolCallId ?? ""));
    if (k < 0) return undefined;
    open[k] = "";
    return open;
  }
  if (m.role === "assistant") return m.stopReason === "error" || m.stopReason === "aborted" ? [] : callIdsOf(m.content);
  return m.role === "system" ? open : [];
}

/** A message that sets the open calls whatever came before it. */
const resets = (m: OrphanMessage) => m.role !== "toolResult" && m.role !== "system";

/** Whether any message of the list stands apart from its call: the reference the index must equal. */
export function anyOrphan(groups: ReadonlyArray<readonly OrphanMessage[]>): boolean {
  let open: string[] = [];
  for (const group of groups) {
    for (const m of group) {
      const next = stepOpen(open, m);
      if (!next) return true;
      open = next;
    }
  }
  return false;
}

export class OrphanIndex {
  /** Positions holding a result apart from its call. */
  readonly #orphans = new Set<number>();
  readonly #at: (i: number) => readonly OrphanMessage[];
  #length = 0;

  /** `at(i)`: the messages position i shows now. */
  constructor(at: (i: number) => readonly OrphanMessage[]) {
    this.#at = at;
  }

  /** Some position holds a result apart from its call. */
  get any(): boolean {
    return this.#orphans.size > 0;
  }

  /** The positions that do, ascending. */
  get positions(): number[] {
    return [...this.#orphans].sort((a, b) => a - b);
  }

  /** The projection now has `length` positions, read again from the start. */
  reset(length: number): void {
    this.#orphans.clear();
    this.#length = length;
    this.#walk(0, [], -1);
  }

  /** Position `i` was appended (i = the old length) or shows other messages than before. */
  changed(i: number, length: number): void {
    const appended = i >= this.#length;
    this.#length = length;
    // An entry appended without messages (an edit, a record) changes no state and holds no result.
    if (appended && this.#at(i).length === 0) return;
    // Back to the last position before i that sets the open calls on its own: the walk starts from it.
    let from = i;
    while (from > 0 && !this.#at(from - 1).some(resets)) from--;
    let open: string[] = [];
    if (from > 0) {
      // Its messages up to its last reset are read for the state only; it keeps its own mark.
      for (const m of this.#at(from - 1)) open = stepOpen(open, m) ?? open;
    }
    this.#walk(from, open, i);
  }

  /** Re-marks positions from `from` until past `changed` at one that sets the open calls (or the end). */
  #walk(from: number, start: string[], changed: number): void {
    let open = start;
    for (let p = from; p < this.#length; p++) {
      const messages = this.#at(p);
      let orphan = false;
      for (const m of messages) {
        const next = stepOpen(open, m);
        if (next) open = next;
        else orphan = true;
      }
      if (orphan) this.#orphans.add(p);
      else this.#orphans.delete(p);
      if (p > changed && changed >= 0 && messages.some(resets)) return;
    }
  }
}
