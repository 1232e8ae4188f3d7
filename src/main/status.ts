// Footer texts. Kept apart from the hooks so every state has one place that names it.
import { type Lifetime, type Savings, savingsText } from "../core/stats.ts";
import type { ClassifierLookup } from "./classifier.ts";

export type GuardState =
  | { kind: "off" }
  | { kind: "unavailable"; lookup: Extract<ClassifierLookup, { ok: false }> }
  | { kind: "busy" }
  /** The classifier failed pass after pass: nothing is asked until `until` (epoch ms). */
  | { kind: "paused"; until: number; error?: string }
  | { kind: "ready"; savings: Savings; lifetime?: Lifetime };

export function statusText(state: GuardState): string {
  switch (state.kind) {
    case "off":
      return "🛡 guard off";
    case "busy":
      return "🛡 distilling…";
    case "paused":
      return "🛡 classifier failing · paused";
    case "unavailable":
      if (state.lookup.problem === "no-key") return `🛡 no ${state.lookup.provider} key`;
      return "🛡 Jev model not found";
    case "ready":
      return savingsText(state.savings, state.lifetime);
  }
}
