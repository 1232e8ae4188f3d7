// Where a replayed prompt changed since the previous one, where its cache read ends, and where Anthropic's
// breakpoints sit, guard off and on (money.ts prices the requests with them).
import type { PromptBlock, PromptCache, PromptView } from "../cache/prompt-cache.ts";
import type { Piece } from "./calibrate.ts";

/** Block sizes are estimates: a recorded read this close past a block boundary still reaches it. */
const READ_SLACK = { share: 0.03, tokens: 256 };

/** Anthropic breakpoints: Pi's (system, end) guard off; the guard's pins guard on, the system prompt's when one is spare. */
export function anthropicPins(
  cache: PromptCache,
  pieces: readonly Piece[],
  view: PromptView,
  changedAt: number | undefined,
  at: number,
): number[] {
  const last = pieces.length - 1;
  const marks = [last];
  for (let i = last; i >= 0; i--) {
    if (pieces[i]?.kind === "question") {
      marks.push(i);
      break;
    }
  }
  if (changedAt !== undefined) {
    const read = cache.liveBefore(view, changedAt, at);
    if (read >= 0) marks.push(read);
    let anchor = changedAt;
    while (pieces[anchor + 1]?.kind === "toolResult") anchor++;
    marks.push(anchor);
  }
  const placed = [...new Set(marks)].slice(0, 4);
  // A spare breakpoint stays on the system prompt (cache-pin.ts).
  if (placed.length < 4 && !placed.includes(0)) placed.push(0);
  return placed;
}

export function toBlocks(pieces: readonly Piece[], tokens: readonly number[]): PromptBlock[] {
  return pieces.map((p, i) => ({ key: p.key, tokens: tokens[i] as number }));
}

/** First index where the prompt differs from the previous one (an edit), if any before its end. */
export function firstChange(previous: readonly Piece[] | undefined, pieces: readonly Piece[]): number | undefined {
  if (!previous) return undefined;
  const n = Math.min(previous.length, pieces.length);
  for (let i = 0; i < n; i++) if (previous[i]?.key !== pieces[i]?.key) return i;
  return undefined;
}

/** Last block whose prefix fits in `read` tokens (with slack for estimated block sizes), or -1. */
export function lastBlockWithin(view: PromptView, read: number): number {
  const limit = read + Math.max(READ_SLACK.tokens, READ_SLACK.share * view.total);
  // The first block whose prefix goes past the limit, by halving (prefix sums only grow).
  let lo = 0;
  let hi = view.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (view.sumAt(mid) > limit) hi = mid;
    else lo = mid + 1;
  }
  return lo - 1;
}
