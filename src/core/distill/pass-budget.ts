// How much one pass takes on. A session whose prompts follow tool results (a steer, a resumed crash) is one
// run from its first prompt, and a long autonomous run holds hundreds of outputs: judging all of them at
// every boundary made passes whose planning alone used up the deadline, asked nothing, and wrote records of
// hundreds of kilobytes. A pass plans at most what the classifier can answer before its deadline, newest
// first; older outputs wait for a later pass (or stay, as every unjudged output does).

import type { GuardConfig } from "../shared/config.ts";

/** Items (outputs, exchanges) one pass plans at most: its record stays within a few hundred kilobytes. */
export const MAX_PASS_ITEMS = 1000;
/** The answer time a request is planned for: about what a hosted classifier takes for a full segment. */
const REQUEST_MS = 1000;
/**
 * How many deadlines' worth of requests a pass plans: what is not answered in time is recorded as such
 * and asked again at a later run end, but planning much more than can be answered only costs time.
 */
const DEADLINES = 4;

export interface PassBudget {
  /** Characters of output text the pass may still send. */
  chars: number;
  /** Items the pass may still plan. */
  items: number;
}

/** What one pass may plan: full segments for every slot, one a second, for a few of its deadlines. */
export function passBudget(config: Pick<GuardConfig, "concurrency" | "timeoutMs" | "maxSegmentChars">): PassBudget {
  const rounds = Math.max(1, Math.floor(config.timeoutMs / REQUEST_MS));
  return { chars: DEADLINES * config.concurrency * rounds * config.maxSegmentChars, items: MAX_PASS_ITEMS };
}

/**
 * The items that fit in the budget, newest first (`order` gives each item's position in the session),
 * spending it; the rest are left for a later pass. The newest item is always taken while items remain,
 * so one huge output is still judged (its chunks that miss the deadline are kept).
 */
export function takeNewest<T>(
  items: readonly T[],
  budget: PassBudget,
  chars: (item: T) => number,
  order: (item: T) => number,
): T[] {
  const taken = new Set<T>();
  const newestFirst = [...items].sort((a, b) => order(b) - order(a));
  for (const item of newestFirst) {
    if (budget.items <= 0) break;
    const size = chars(item);
    if (size > budget.chars && taken.size > 0) continue;
    taken.add(item);
    budget.items--;
    budget.chars = Math.max(0, budget.chars - size);
  }
  return items.filter((i) => taken.has(i));
}
