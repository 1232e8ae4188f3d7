// The footer's dollars on the pass thread (core/replay/saved-so-far's LivePricer): each session's pricer
// stays here between messages, so a message carries only the branch's new entries, and each message
// prices for a slice of time at most, so a pass never waits long behind it (live-savings.ts sends them
// only when no pass is waiting).
import type { CacheProfile } from "../../core/cache/cache-behaviour.ts";
import { type LedgerEntry, LivePricer, type SavedSoFar } from "../../core/replay/saved-so-far.ts";

export interface SavedInput {
  /** The session (LiveSavings) the pricer belongs to. */
  client: string;
  /** The ledger index of the first entry sent: 0 starts the pricer over. */
  from: number;
  entries: LedgerEntry[];
  profiles: Array<[string, CacheProfile]>;
  /** Most milliseconds to price for before answering with what is priced so far. */
  sliceMs: number;
}

/** What is priced so far and whether that is all; `missing`: this thread holds no pricer at `from`. */
export type SavedOutput = { missing: true } | { saved: SavedSoFar; done: boolean; length: number };

/** Pricers kept on this thread, most recently used last (a pool shared by sessions holds a few). */
const MAX_PRICERS = 8;
const pricers = new Map<string, LivePricer>();

export function savedTask(input: SavedInput): SavedOutput {
  let pricer = pricers.get(input.client);
  pricers.delete(input.client);
  if (input.from === 0) pricer = new LivePricer();
  if (!pricer || pricer.length !== input.from) return { missing: true };
  pricers.set(input.client, pricer);
  while (pricers.size > MAX_PRICERS) pricers.delete(pricers.keys().next().value as string);
  pricer.append(input.entries);
  pricer.useProfiles(new Map(input.profiles));
  const end = performance.now() + input.sliceMs;
  const done = pricer.advance(() => performance.now() < end);
  return { saved: pricer.result(), done, length: pricer.length };
}
