// Pi's projection of the session's active branch, kept by the guard between boundaries, so a checkpoint
// can start outside `turn_end` (whose context Pi rebuilds from the whole branch after every handler).
// Each sync walks back from the leaf only to the last entry it saw and adds what is new
// (replay/branch-projection.ts equals Pi's buildSessionProjection after every entry); a leaf that is not
// a descendant of it (/tree, /fork) rebuilds from the branch.
import type { ExtensionContext, ProjectedSessionEntry, SessionEntry } from "@earendil-works/pi-coding-agent";
import { BranchProjection } from "../replay/branch-projection.ts";

type SessionView = Pick<ExtensionContext["sessionManager"], "getLeafEntry" | "getEntry" | "getBranch">;

export class LiveProjection {
  #projection = new BranchProjection();

  /** The projected entries of the branch as it is now (a copy the caller may keep). */
  sync(sm: SessionView): ProjectedSessionEntry[] {
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
      fresh.length = 0;
      fresh.push(...[...sm.getBranch()].reverse());
    }
    const branch = () => sm.getBranch();
    for (let i = fresh.length - 1; i >= 0; i--) this.#projection.add(fresh[i] as SessionEntry, branch);
    return this.#projection.entries.slice();
  }
}
