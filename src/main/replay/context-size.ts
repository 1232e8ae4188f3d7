import {
  buildSessionProjection,
  type SessionEntry,
  sessionEntryToContextMessages,
} from "@earendil-works/pi-coding-agent";
import { sumMessages } from "../../core/replay/replay-metrics.ts";

/** Keeps the context size of a growing entry list: added per entry, recomputed after edits and compactions. */
export class ContextSize {
  #chars = 0;
  #dirty = false;
  add(entry: SessionEntry): void {
    if (entry.type === "context_edit" || entry.type === "compaction") this.#dirty = true;
    else if (!this.#dirty) this.#chars += sumMessages(sessionEntryToContextMessages(entry));
  }
  current(list: SessionEntry[]): number {
    if (this.#dirty) {
      const last = list[list.length - 1];
      this.#chars = sumMessages(buildSessionProjection(list, last?.id ?? null).messages);
      this.#dirty = false;
    }
    return this.#chars;
  }
}
