// The break-even gates act on what the session taught about the main model's cache (cache-behaviour's
// profile). When the money view's fit of that profile misses what the provider billed by more than 10%
// (money-fit's MISS_SHARE), the lesson is not acted on: the gates take whichever of the learned view and
// Pi's prior (its provider code, at list prices) weighs a rewrite more, and pin nothing of their own. An
// edit is then never taken as cheaper than either says. Pure.

import { rewriteFactor } from "./break-even.ts";
import { type BreakEvenView, breakEvenView, learnProfile, type ModelInfo } from "./cache-behaviour.ts";
import type { Prices } from "./prompt-cache.ts";

/** A model whose fitted cache model misses its recorded dollars: (simulated − recorded) / recorded. */
export interface CacheDoubt {
  model: string;
  error: number;
}

/** The view the gates act on, and the doubt that made it the conservative one. */
export interface GateView extends BreakEvenView {
  doubt?: CacheDoubt;
}

/** The margin scales every factor alike: the default one orders them as any other would. */
const factorOf = (v: BreakEvenView) => rewriteFactor(v.family, v.prices);

/**
 * `learned` as is, unless `doubt` says its model misses the bill: then the learned view or the prior
 * (`model` with no recorded request, its registry `list`), whichever rewrites dearer, without pins.
 */
export function gateView(
  learned: BreakEvenView,
  doubt: CacheDoubt | undefined,
  model: ModelInfo | undefined,
  list: Prices | undefined,
): GateView {
  if (!doubt) return learned;
  const prior = breakEvenView(learnProfile(model, [], list));
  const dearer = factorOf(prior) > factorOf(learned) ? prior : learned;
  return { ...dearer, pins: false, doubt };
}
