// Savings on the current branch, recomputed from the projection on every redraw, so they follow
// /tree, reloads and compaction without any state of our own.
import { formatCount } from "./text.ts";
import { GUARD_MARKER, type SnapEntry } from "./types.ts";

export interface Savings {
  /** Characters kept out of the model's context right now. */
  chars: number;
  /** Items currently replaced by the guard. */
  items: number;
}

/** Tool results whose visible text is the guard's replacement while the raw text is not. */
export function currentSavings(entries: readonly SnapEntry[]): Savings {
  let chars = 0;
  let items = 0;
  for (const e of entries) {
    if (!e.edited || e.role !== "toolResult" || e.rawText === undefined) continue;
    if (!e.text.startsWith(GUARD_MARKER) || e.rawText.startsWith(GUARD_MARKER)) continue;
    chars += Math.max(0, e.rawText.length - e.text.length);
    items++;
  }
  return { chars, items };
}

/** Footer text for the ready state: ≈ tokens kept out (chars ÷ 4) and items. */
export function savingsText(savings: Savings): string {
  if (savings.items === 0) return "🛡 0 saved";
  return `🛡 −${formatCount(savings.chars / 4)} · ${savings.items}`;
}
