// The prompt of each request as pieces (one per model-visible entry, behind the system prompt), for the
// money view's cache model. Kept per growing entry list like ContextSize: appended per entry, rebuilt
// from Pi's projection after a context edit or a compaction. An edited entry's key names the edit, so the
// cache model sees where the prompt changed.
import {
  buildSessionProjection,
  type ProjectedSessionEntry,
  type SessionEntry,
  sessionEntryToContextMessages,
} from "@earendil-works/pi-coding-agent";
import { type Piece, type PieceKind, SYSTEM_ID } from "../../core/replay/calibrate.ts";
import { sumMessages } from "../../core/replay/replay-metrics.ts";
import { readContent } from "../pass/snapshot.ts";

const SYSTEM: Piece = { id: SYSTEM_ID, key: SYSTEM_ID, chars: 0, origChars: 0, kind: "system" };

/** The piece kind of an entry's messages. */
export function kindOf(messages: readonly unknown[]): PieceKind {
  const m = messages[0] as { role?: string; content?: unknown } | undefined;
  if (m?.role === "toolResult") return "toolResult";
  if (m?.role === "user" && readContent(m.content).text.trim() !== "") return "question";
  return "other";
}

/** A result of the guard's recall tool: the session without the guard has none (no note offered it). */
const isRecall = (e: SessionEntry): boolean => {
  const m = e.type === "message" ? (e.message as { role?: string; toolName?: string }) : undefined;
  return m?.role === "toolResult" && m.toolName === "recall";
};

/** An edit's entry as one that shows nothing: the list keeps its parent chain, Pi's projection drops it. */
const inert = (e: SessionEntry): SessionEntry =>
  e.type === "context_edit" ? ({ ...e, type: "custom", customType: "context-guard-inert" } as SessionEntry) : e;

export class PromptPieces {
  /** Whether context edits apply: the guard-off prompt is the session without any. */
  readonly #withEdits: boolean;
  #pieces: Piece[] = [SYSTEM];
  #dirty = false;
  /** The first piece changed since the last `current` (appends: where they start). */
  #from = 0;
  /** Target id → the latest context_edit entry that replaced it. */
  #edits = new Map<string, string>();

  constructor(withEdits = true) {
    this.#withEdits = withEdits;
  }

  add(entry: SessionEntry): void {
    if (entry.type === "context_edit") {
      if (!this.#withEdits) return;
      this.#edits.set(entry.targetId, entry.id);
      this.#dirty = true;
    } else if (entry.type === "compaction") this.#dirty = true;
    else if (!this.#dirty && !(isRecall(entry) && !this.#withEdits)) {
      const messages = sessionEntryToContextMessages(entry);
      if (messages.length === 0) return;
      const chars = sumMessages(messages);
      this.#pieces.push({ id: entry.id, key: entry.id, chars, origChars: chars, kind: kindOf(messages) });
    }
  }

  /**
   * The prompt before the next request, given the list the pieces were added from and, when the caller
   * keeps it, Pi's projection of that list (else it is built here). A copy.
   */
  current(list: readonly SessionEntry[], projected?: readonly ProjectedSessionEntry[]): Piece[] {
    return [...this.next(list, projected).pieces];
  }

  /**
   * As `current`, without a copy, and the first piece that may differ from what the previous call returned
   * (the money view prices what changed). The list is this object's own: read it before the next `add`.
   */
  next(
    list: readonly SessionEntry[],
    projected?: readonly ProjectedSessionEntry[],
  ): { pieces: readonly Piece[]; from: number } {
    let from = Math.min(this.#from, this.#pieces.length);
    if (this.#dirty) {
      const last = list[list.length - 1];
      const source = this.#withEdits ? (list as SessionEntry[]) : list.map(inert);
      const entries = projected ?? buildSessionProjection(source, last?.id ?? null).entries;
      const pieces = [SYSTEM];
      for (const p of entries) {
        if (p.messages.length === 0 || (!this.#withEdits && isRecall(p.sourceEntry))) continue;
        const id = p.sourceEntry.id;
        const edit = this.#edits.get(id);
        const chars = sumMessages(p.messages);
        const origChars = edit ? sumMessages(sessionEntryToContextMessages(p.sourceEntry)) : chars;
        pieces.push({ id, key: edit ? `${id}@${edit}` : id, chars, origChars, kind: kindOf(p.messages) });
      }
      // Projected again: the first piece that differs from before.
      const n = Math.min(pieces.length, this.#pieces.length);
      let same = 0;
      while (same < n && pieces[same]?.key === this.#pieces[same]?.key) same++;
      from = Math.min(from, same);
      this.#pieces = pieces;
      this.#dirty = false;
    }
    this.#from = this.#pieces.length;
    return { pieces: this.#pieces, from };
  }
}
