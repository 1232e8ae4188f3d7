// A pass handed over before every answer came in (a prompt was sent during the run-end pass) finishes in
// two parts from one plan: first the items whose requests have all been answered, then, once the
// classifier has answered the rest, the items that were waiting. No item is in both parts, so each is
// decided once, on its own answers, and every request is sent once.

import type { ClassifierOutcome } from "../shared/types.ts";
import type { FinishOutput } from "./finish.ts";
import type { RunPlan } from "./plan.ts";

/** The items of a plan that wait for an unanswered request. */
export interface Waiting {
  /** Every request of those items (an output's answered segments wait with its unanswered ones). */
  requests: Set<number>;
  /** The entries their record results name, which their replacing drafts target too. */
  ids: Set<string>;
  /** The entries omitted with a waiting exchange. */
  omitted: Set<string>;
}

/** The items that wait for one of the `pending` requests. */
export function waitingItems(plan: RunPlan, pending: Iterable<number>): Waiting {
  const open = new Set(pending);
  const waiting: Waiting = { requests: new Set(), ids: new Set(), omitted: new Set() };
  for (const c of plan.candidates) {
    const asked = c.segments.flatMap((s) => (s.request === undefined ? [] : [s.request]));
    if (!asked.some((r) => open.has(r))) continue;
    for (const r of asked) waiting.requests.add(r);
    waiting.ids.add(c.entryId);
  }
  for (const batch of plan.smallBatches) {
    if (!open.has(batch.request)) continue;
    waiting.requests.add(batch.request);
    for (const id of batch.ids) waiting.ids.add(id);
  }
  const exchanges = new Map(plan.exchanges.map((x) => [x.promptId, x]));
  for (const batch of plan.exchangeBatches) {
    if (!open.has(batch.request)) continue;
    waiting.requests.add(batch.request);
    for (const id of batch.ids) {
      waiting.ids.add(id);
      for (const omitted of exchanges.get(id)?.entryIds ?? []) waiting.omitted.add(omitted);
    }
  }
  return waiting;
}

/** The outcomes the first part finishes with: every request of a waiting item reads `aborted`. */
export function answeredPart(outcomes: readonly ClassifierOutcome[], waiting: Waiting): ClassifierOutcome[] {
  return outcomes.map((o, i) => (waiting.requests.has(i) ? { status: "aborted" } : o));
}

/**
 * What a finish over every answer decided about the waiting items only. An old image's draft is the
 * first part's, even when the image sits in a waiting exchange: only that exchange's omissions are here.
 */
export function waitingPart(output: FinishOutput, waiting: Waiting): FinishOutput {
  return {
    drafts: output.drafts.filter(
      (d) => waiting.ids.has(d.targetId) || (d.replacement === null && waiting.omitted.has(d.targetId)),
    ),
    results: output.results.filter((r) => waiting.ids.has(r.entryId)),
  };
}
