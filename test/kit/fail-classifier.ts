/**
 * The slow classifier the hand-over tests share: it keeps the `FAIL` line of each `testLog`, answers every
 * request only after a fixed latency, and logs when and about what it was asked.
 */
import { keywordPolicy, type LoopbackClassifier, startLoopbackClassifier } from "./loopback-classifier.ts";

export interface Asked {
  /** performance.now() when the request arrived. */
  at: number;
  /** The request body, as JSON. */
  body: string;
}

/** Starts the classifier; each request is pushed onto `asked` as it arrives. */
export function startFailClassifier(latencyMs: number, asked: Asked[]): Promise<LoopbackClassifier> {
  const keyword = keywordPolicy(/FAIL/);
  return startLoopbackClassifier({
    latencyMs,
    policy: (body) => {
      asked.push({ at: performance.now(), body: JSON.stringify(body) });
      return keyword(body);
    },
  });
}

/** How many requests showed the failing line of `testLog(n)`. */
export const askedAbout = (asked: Asked[], n: number): number =>
  asked.filter((a) => a.body.includes(`broken_${n}_50`)).length;

/** Waits until the last request asked so far has had its answer, and half a second more. */
export async function untilAnswered(asked: Asked[], latencyMs: number): Promise<void> {
  const wait = (asked.at(-1)?.at ?? 0) + latencyMs + 500 - performance.now();
  await new Promise((r) => setTimeout(r, Math.max(0, wait)));
}
