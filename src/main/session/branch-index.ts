// An incremental view of the active branch: walks back from the leaf only until it meets an entry it
// already knows, so a hook that needs positions and tool-call ids costs what is new, not the session.
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";

export interface IndexedEntry {
  id: string;
  type: string;
  parentId?: string | null;
  targetId?: string;
  message?: { role?: string; toolCallId?: string; stopReason?: string; content?: unknown };
}

type SessionView = Pick<ExtensionContext["sessionManager"], "getLeafEntry" | "getEntry">;

export class BranchIndex {
  readonly entries: IndexedEntry[] = [];
  readonly position = new Map<string, number>();
  /** Tool result entry id → its tool call id, and back. */
  readonly callOf = new Map<string, string>();
  readonly entryOfCall = new Map<string, string>();
  /** How many times a sync dropped known entries (the branch changed under them): readers start over. */
  resets = 0;

  /** Brings the index to the current leaf and returns it. */
  sync(sm: SessionView): this {
    const fresh: IndexedEntry[] = [];
    let cursor = sm.getLeafEntry() as IndexedEntry | undefined;
    while (cursor && !this.position.has(cursor.id)) {
      fresh.push(cursor);
      cursor = cursor.parentId ? (sm.getEntry(cursor.parentId) as IndexedEntry | undefined) : undefined;
    }
    // The branch now continues after the known ancestor (or from the root): drop what is past it.
    const keep = cursor ? (this.position.get(cursor.id) as number) + 1 : 0;
    this.#truncate(keep);
    for (let i = fresh.length - 1; i >= 0; i--) this.#push(fresh[i] as IndexedEntry);
    return this;
  }

  #push(e: IndexedEntry): void {
    this.position.set(e.id, this.entries.length);
    this.entries.push(e);
    const callId = e.type === "message" && e.message?.role === "toolResult" ? e.message.toolCallId : undefined;
    if (callId) {
      this.callOf.set(e.id, callId);
      this.entryOfCall.set(callId, e.id);
    }
  }

  #truncate(length: number): void {
    if (this.entries.length > length) this.resets++;
    while (this.entries.length > length) {
      const e = this.entries.pop() as IndexedEntry;
      this.position.delete(e.id);
      const callId = this.callOf.get(e.id);
      if (callId !== undefined) {
        this.callOf.delete(e.id);
        if (this.entryOfCall.get(callId) === e.id) this.entryOfCall.delete(callId);
      }
    }
  }
}
