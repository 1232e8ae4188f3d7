// Pi's projection of the session's active branch, kept by the guard between boundaries, so a checkpoint
// can start outside `turn_end` (whose context Pi rebuilds from the whole branch after every handler) and
// the hooks that run at every event read what is new, not the session. Each update walks back from the
// leaf only to the last entry it saw and adds what is new (replay/branch-projection.ts equals Pi's
// buildSessionProjection after every entry); a leaf that is not a descendant of it (/tree, /fork) rebuilds
// from the branch. Along with it: which positions hold a tool result apart from its call, and how many
// messages a request built from it carries.
import type { ExtensionContext, ProjectedSessionEntry, SessionEntry } from "@earendil-works/pi-coding-agent";
import { OrphanIndex, type OrphanMessage } from "../../core/items/orphan-index.ts";
import { traceSwallowed } from "../platform/swallowed.ts";
import { BranchProjection } from "../replay/branch-projection.ts";

type SessionView = Pick<ExtensionContext["sessionManager"], "getLeafEntry" | "getEntry" | "getBranch">;
type Message = ProjectedSessionEntry["messages"][number];

const requestMessages = (messages: readonly Message[]) => {
  let n = 0;
  for (const m of messages) if ((m as { role?: string }).role !== "system") n++;
  return n;
};

export class LiveProjection {
  #projection = new BranchProjection();
  #at = new Map<string, number>();
  #orphans = new OrphanIndex((i) => this.#messagesAt(i));
  /** Messages a request built from the projection carries (Pi's `context` leaves out system messages). */
  #messages = 0;

  constructor() {
    this.#listen();
  }

  #messagesAt(i: number): readonly OrphanMessage[] {
    return (this.#projection.entries[i]?.messages ?? []) as readonly OrphanMessage[];
  }

  #listen(): void {
    const projection = this.#projection;
    projection.listen(
      (before, after) => {
        const id = after.sourceEntry.id;
        let at = before === undefined ? undefined : this.#at.get(id);
        if (at === undefined) {
          at = projection.entries.length - 1;
          this.#at.set(id, at);
        }
        this.#messages += requestMessages(after.messages) - (before ? requestMessages(before) : 0);
        this.#orphans.changed(at, projection.entries.length);
      },
      () => this.#reindex(),
    );
  }

  #reindex(): void {
    const entries = this.#projection.entries;
    this.#at.clear();
    this.#messages = 0;
    entries.forEach((p, i) => {
      this.#at.set(p.sourceEntry.id, i);
      this.#messages += requestMessages(p.messages);
    });
    this.#orphans.reset(entries.length);
  }

  /** Brings the projection to the leaf. Returns its entries as they are (read them now; `sync` copies). */
  update(sm: SessionView): readonly ProjectedSessionEntry[] {
    const known = this.#projection.leafId;
    const fresh: SessionEntry[] = [];
    let cursor = sm.getLeafEntry();
    while (cursor && cursor.id !== known) {
      fresh.push(cursor);
      cursor = cursor.parentId ? sm.getEntry(cursor.parentId) : undefined;
    }
    if (!cursor && known !== null) {
      // Left the branch it knew: start again from the whole branch.
      this.#projection = new BranchProjection();
      this.#listen();
      this.#reindex();
      fresh.length = 0;
      fresh.push(...[...sm.getBranch()].reverse());
    }
    const branch = () => sm.getBranch();
    for (let i = fresh.length - 1; i >= 0; i--) this.#projection.add(fresh[i] as SessionEntry, branch);
    return this.#projection.entries;
  }

  /** The projected entries of the branch as it is now (a copy the caller may keep). */
  sync(sm: SessionView): ProjectedSessionEntry[] {
    return this.update(sm).slice();
  }

  /**
   * Whether a request's messages are known to hold no tool result apart from its call without reading
   * them: the projection holds none, and the messages are the projection's (as many, and the same last
   * one).
   */
  requestWhole(sm: SessionView, messages: readonly unknown[]): boolean {
    this.update(sm);
    if (this.#orphans.any || messages.length !== this.#messages) return false;
    const last = messages.at(-1) as { role?: unknown; timestamp?: unknown } | undefined;
    const entries = this.#projection.entries;
    for (let i = entries.length - 1; i >= 0; i--) {
      const shown = (entries[i] as ProjectedSessionEntry).messages;
      for (let j = shown.length - 1; j >= 0; j--) {
        const m = shown[j] as { role?: unknown; timestamp?: unknown };
        if (m.role === "system") continue;
        return last !== undefined && m.role === last.role && m.timestamp === last.timestamp;
      }
    }
    return last === undefined;
  }

  /**
   * Whether a boundary's context is known to hold no tool result apart from its call: the projection
   * holds none and the context is it (as long, ending with the same entry; another extension's drafts
   * before ours make it another).
   */
  contextWhole(sm: SessionView, context: ReadonlyArray<{ sourceEntry: { id: string } }>): boolean {
    try {
      const entries = this.update(sm);
      return (
        !this.#orphans.any &&
        context.length === entries.length &&
        context.at(-1)?.sourceEntry.id === entries.at(-1)?.sourceEntry.id
      );
    } catch (error) {
      // The boundary reads its context, as before.
      traceSwallowed("live-projection.context-whole", error);
      return false;
    }
  }

  /** Positions of the projection that hold a result apart from its call (for the tests). */
  get orphanPositions(): number[] {
    return this.#orphans.positions;
  }
}
