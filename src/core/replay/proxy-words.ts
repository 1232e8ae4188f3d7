// What the needed-later proxy's figures mean, in words the terminal summary and the HTML report share:
// the likely-needed count with its measured precision and recall, and what the other tiers are.
import type { ProxyRate, Tier } from "./proxy.ts";
import { PROXY_QUALITY, wilson } from "./proxy-quality.ts";

export const TIER_WORDS: Readonly<Record<Tier, string>> = {
  "likely-needed": "likely needed",
  "re-ran": "re-ran",
  "seen-again": "seen again",
};

export const TIER_MEANING: Readonly<Record<Tier, string>> = {
  "likely-needed": "the agent later used something only this piece had, before any tool result showed it again",
  "re-ran": "the same call was made again later: usually a deliberate refresh, not a false removal",
  "seen-again": "the agent used it only after a later tool result had shown it again: not a false removal",
};

const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
const whole = (x: number) => `${Math.round(x * 100)}%`;

/** "14 of 78 removed items (17.9%)". */
export function likelyNeededCount(p: ProxyRate): string {
  return `${p.likelyNeeded.items} of ${p.removed} removed item${p.removed === 1 ? "" : "s"} (${pct(p.likelyNeeded.rate)})`;
}

/** How far the count can be trusted, and what to do with it. */
export function likelyNeededMeaning(p: ProxyRate): string {
  return `${heldOutQuality()}. ${likelyNeededAdvice(p)}`;
}

/** What the likely-needed count means for the agent, given the measured quality. */
export function likelyNeededAdvice(p: ProxyRate): string {
  const l = p.likelyNeeded;
  const expected = Math.round(l.expected);
  const expect =
    l.items === 0
      ? "None of the removed items looks needed later"
      : `Expect about ${expected} removed item${expected === 1 ? "" : "s"} the agent would have had to recall`;
  return (
    `${expect}. Recall returns them whole, so nothing is lost; a rate that rises after a change means the guard ` +
    `removes more of what the agent still uses.`
  );
}

const interval = (hits: number, n: number) => {
  const { low, high } = wilson(hits, n);
  return `95% CI ${whole(low)}–${whole(high)}`;
};

/**
 * The proxy's quality as measured on the held-out labelled removals, with 95% Wilson intervals, in one
 * sentence whose wording stays fixed: scripts that keep the docs current read it from the replay's output.
 */
export function heldOutQuality(q = PROXY_QUALITY): string {
  return (
    `On ${q.labelled} held-out hand-labelled removals (${q.needed} needed) the likely-needed tier was right ` +
    `${whole(q.precision)} of the time (${interval(q.flaggedNeeded, q.flagged)}) and found ${whole(q.recall)} of ` +
    `the needed ones (${interval(q.flaggedNeeded, q.needed)})`
  );
}

/** "re-ran 5 · seen again 7". */
export function otherTiers(p: ProxyRate): string {
  return `re-ran ${p.reran} · seen again ${p.seenAgain}`;
}
