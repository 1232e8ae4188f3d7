// What the likely-needed removals cost, in the report's units: items, characters and dollars. Each
// likely-needed removal is charged one `recall` round trip just before the request that used it (the
// whole guarded prompt read once more, plus the call's output), and its recalled text is kept in the
// context from then on (written to the cache once, read by every later request until a compaction drops it).
// So a saving quoted "after recalls" already pays for the guard's mistakes, as far as the proxy finds them.
import type { Prices } from "../cache/prompt-cache.ts";

const CHARS_PER_TOKEN = 4;
/** Output tokens of one `recall` call with a short preamble. */
export const RECALL_CALL_TOKENS = 40;

export interface RemovedItem {
  chars: number;
  /** Line of the later message that used it, when the proxy finds it likely needed. */
  neededAtLine?: number;
}

export interface RequestAt {
  /** Line of the assistant message in the session file. */
  line: number;
  /** Context characters with the guard's edits so far. */
  on: number;
}

export interface RecallHarm {
  removedItems: number;
  removedChars: number;
  /** Likely-needed items and the characters they hold. */
  items: number;
  chars: number;
  /** Dollars the recalls would cost; 0 without prices. */
  dollars: number;
}

/**
 * Harm of the likely-needed removals of one session. `prices` are the main model's (per million tokens);
 * `cached` says whether its provider caches prompts (else every token is billed as input);
 * `compactionLines` are the session file's lines of its compactions, in order.
 */
export function recallHarm(
  removed: readonly RemovedItem[],
  requests: readonly RequestAt[],
  prices: Prices | undefined,
  cached: boolean,
  compactionLines: readonly number[] = [],
): RecallHarm {
  const harm: RecallHarm = { removedItems: removed.length, removedChars: 0, items: 0, chars: 0, dollars: 0 };
  const read = prices ? (cached ? prices.cacheRead : prices.input) : 0;
  const write = prices ? (cached ? prices.cacheWrite : prices.input) : 0;
  const output = prices?.output ?? 0;
  for (const item of removed) {
    harm.removedChars += item.chars;
    if (item.neededAtLine === undefined) continue;
    harm.items++;
    harm.chars += item.chars;
    const at = requests.findIndex((r) => r.line >= (item.neededAtLine as number));
    if (at === -1) continue;
    const tokens = item.chars / CHARS_PER_TOKEN;
    const prompt = (requests[at] as RequestAt).on / CHARS_PER_TOKEN;
    // The recalled text rides along until the next compaction summarises it away.
    const line = (requests[at] as RequestAt).line;
    const dropAt = compactionLines.find((c) => c > line);
    const end = dropAt === undefined ? requests.length : requests.findIndex((r) => r.line > dropAt);
    const later = (end === -1 ? requests.length : end) - at - 1;
    harm.dollars += (prompt * read + RECALL_CALL_TOKENS * output + tokens * write + later * tokens * read) / 1e6;
  }
  return harm;
}
