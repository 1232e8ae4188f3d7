// Pi's projection of the replayed branch, kept entry by entry. Rebuilding it with Pi's SessionManager at
// every boundary made each boundary cost the whole branch, so a replay without compaction was quadratic.
// Appending an entry only adds its projected entry; a context edit re-projects its target; a compaction
// (rare) rebuilds with Pi's own buildSessionProjection. The result equals Pi's projection of the branch
// (test/unit/main/replay/branch-projection.test.ts pins that), and the guard's drafts are checked as Pi's
// appendContextEdit checks them.
import { randomUUID } from "node:crypto";
import {
  buildSessionProjection,
  type ContextEditEntry,
  type ProjectedSessionEntry,
  type SessionEntry,
  sessionEntryToContextMessages,
} from "@earendil-works/pi-coding-agent";
import type { ContextEditDraft } from "../../core/shared/types.ts";

type Message = ProjectedSessionEntry["messages"][number];

/** What Pi shows of one entry under its latest context edit (Pi's projectContextEntry, not exported). */
export function projectEntry(entry: SessionEntry, edit: ContextEditEntry | undefined): Message[] {
  const messages = sessionEntryToContextMessages(entry);
  if (!edit) return messages;
  const replacement = edit.replacement;
  if (replacement === null) return [];
  return messages.map((message) => {
    const role = (message as { role?: string }).role;
    if (role !== "user" && role !== "assistant" && role !== "toolResult" && role !== "custom") return message;
    const content =
      (role === "assistant" || role === "toolResult") && typeof replacement.content === "string"
        ? [{ type: "text", text: replacement.content }]
        : replacement.content;
    return { ...message, content } as Message;
  });
}

/** Told when a projected entry's messages change: `before` is undefined for a new entry. */
export type ProjectionListener = (before: readonly Message[] | undefined, after: ProjectedSessionEntry) => void;

export class BranchProjection {
  #entries: ProjectedSessionEntry[] = [];
  /** Position of each projected entry. */
  #at = new Map<string, number>();
  /** Target id → its latest context_edit among the projected entries. */
  #edits = new Map<string, ContextEditEntry>();
  /** Every entry of the branch, by id (Pi checks a draft's target against the branch). */
  #branch = new Map<string, SessionEntry>();
  #leaf: string | null = null;
  #listeners: Array<{ change: ProjectionListener; reset: () => void }> = [];

  /** Follows every change (`reset`: a compaction rebuilt the projection; read `entries` again). */
  listen(change: ProjectionListener, reset: () => void): void {
    this.#listeners.push({ change, reset });
  }

  /** The projected entries now. The array changes as entries are added: copy it to keep it. */
  get entries(): readonly ProjectedSessionEntry[] {
    return this.#entries;
  }

  get leafId(): string | null {
    return this.#leaf;
  }

  /** Adds the next entry of the branch; `branch` is the whole branch with it (read only at a compaction). */
  add(entry: SessionEntry, branch: () => SessionEntry[]): void {
    this.#branch.set(entry.id, entry);
    this.#leaf = entry.id;
    if (entry.type === "compaction") {
      this.#rebuild(branch(), entry.id);
      return;
    }
    if (entry.type === "context_edit") {
      this.#edits.set(entry.targetId, entry);
      const at = this.#at.get(entry.targetId);
      const target = at === undefined ? undefined : this.#entries[at];
      // Pi shows an older compaction inside the newest one's range as nothing, edited or not.
      if (target && !(at !== 0 && target.sourceEntry.type === "compaction")) {
        const next = { sourceEntry: target.sourceEntry, messages: projectEntry(target.sourceEntry, entry) };
        this.#entries[at as number] = next;
        for (const l of this.#listeners) l.change(target.messages, next);
      }
    }
    const projected = { sourceEntry: entry, messages: projectEntry(entry, this.#edits.get(entry.id)) };
    this.#at.set(entry.id, this.#entries.length);
    this.#entries.push(projected);
    for (const l of this.#listeners) l.change(undefined, projected);
  }

  #rebuild(branch: SessionEntry[], leafId: string): void {
    this.#entries = buildSessionProjection(branch, leafId).entries;
    this.#at.clear();
    this.#edits.clear();
    this.#entries.forEach((p, i) => {
      this.#at.set(p.sourceEntry.id, i);
      if (p.sourceEntry.type === "context_edit") this.#edits.set(p.sourceEntry.targetId, p.sourceEntry);
    });
    for (const l of this.#listeners) l.reset();
  }

  /**
   * The entries Pi's appendContextEdit and appendCustomEntry would append for these drafts below the
   * leaf, or Pi's error for the first draft it would reject (then none is appended). Not added yet.
   */
  entriesFor(edits: readonly ContextEditDraft[], customType: string, data: unknown): SessionEntry[] {
    const out: SessionEntry[] = [];
    const ids = new Set<string>();
    const newId = () => {
      for (let i = 0; i < 100; i++) {
        const id = randomUUID().slice(0, 8);
        if (!this.#branch.has(id) && !ids.has(id)) return id;
      }
      return randomUUID();
    };
    let parentId = this.#leaf;
    const next = () => {
      const id = newId();
      ids.add(id);
      const base = { id, parentId, timestamp: new Date().toISOString() };
      parentId = id;
      return base;
    };
    for (const { targetId, replacement } of edits) {
      if (
        replacement !== null &&
        (typeof replacement !== "object" ||
          !("content" in replacement) ||
          (typeof replacement.content !== "string" && !Array.isArray(replacement.content)))
      ) {
        throw new Error("Context edit replacement must be null or contain string/array content");
      }
      const target = this.#branch.get(targetId);
      // The replay's branch is one path, so every entry it holds is on the active branch.
      if (!target) throw new Error(`Entry ${targetId} not found`);
      const role = target.type === "message" ? (target.message as { role?: string }).role : "custom";
      const editable =
        target.type === "custom_message" ||
        (target.type === "message" && (role === "user" || role === "assistant" || role === "toolResult"));
      if (!editable) throw new Error(`Entry ${targetId} does not contribute editable model content`);
      const normalized =
        replacement !== null &&
        (role === "assistant" || role === "toolResult") &&
        typeof replacement.content === "string"
          ? { content: [{ type: "text" as const, text: replacement.content }] }
          : replacement;
      out.push({ type: "context_edit", ...next(), targetId, replacement: normalized } as SessionEntry);
    }
    out.push({ type: "custom", customType, data, ...next() } as SessionEntry);
    return out;
  }
}
