// Which calls show the latest view of a file the context holds: a read, an edit or a write of a path that
// no later call reads, edits or writes. An old exchange omitted whole would take that view with it, and
// the work that later edits or quotes the file would have nothing current to go on.

import { samePath } from "../replay/proxy-tokens.ts";
import { basename } from "../shared/tokens.ts";
import type { SnapEntry, SnapToolCall } from "../shared/types.ts";
import { callPath } from "./superseded.ts";

const VIEW_TOOLS = new Set(["read", "edit", "write", "multiedit", "apply_patch", "str_replace"]);

/** The file a call shows or changes whole (not a listing or a search). */
export function viewedPath(call: Pick<SnapToolCall, "name" | "args">): string | undefined {
  return VIEW_TOOLS.has(call.name) ? callPath(call.args ?? {}) : undefined;
}

/** Where each file was last read, edited or written in a snapshot; one pass over the entries. */
export class LatestViews {
  /** By base name; paths under one name are told apart with samePath. */
  readonly #last = new Map<string, Array<{ path: string; at: number }>>();

  constructor(entries: readonly SnapEntry[]) {
    for (let i = 0; i < entries.length; i++) {
      for (const call of entries[i]?.toolCalls ?? []) {
        const path = viewedPath(call);
        if (path === undefined) continue;
        const views = this.#last.get(basename(path)) ?? [];
        const same = views.find((v) => samePath(v.path, path));
        if (same) same.at = i;
        else views.push({ path, at: i });
        this.#last.set(basename(path), views);
      }
    }
  }

  /** No call after index `at` views `path`. */
  isLatest(path: string, at: number): boolean {
    return !(this.#last.get(basename(path)) ?? []).some((v) => v.at > at && samePath(v.path, path));
  }
}
