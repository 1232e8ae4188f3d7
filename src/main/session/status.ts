// Footer texts. Kept apart from the hooks so every state has one place that names it.
import { type Lifetime, type Savings, savedTokensText, savingsText } from "../../core/records/stats.ts";
import type { SavedSoFar } from "../../core/replay/saved-so-far.ts";
import { oneLine } from "../../core/shared/text.ts";
import type { ClassifierLookup } from "../pass/classifier.ts";
import { dollars, shownDollars } from "../replay/summary-money.ts";

/** Longest model reference the footer shows whole. */
const FOOTER_REF_MAX = 60;

export type GuardState =
  | { kind: "off" }
  | { kind: "unavailable"; lookup: Extract<ClassifierLookup, { ok: false }> }
  /** The pass pool's threads do not start (pool.ts `failure`): nothing can be judged. */
  | { kind: "no-workers"; error: string }
  | { kind: "busy" }
  /** A mid-run checkpoint asks the classifier while the agent goes on. */
  | { kind: "checkpoint" }
  /** A prompt was sent during a pass: what was answered lands, then the prompt starts. */
  | { kind: "handing-over" }
  /** The classifier failed pass after pass: nothing is asked until `until` (epoch ms). */
  | { kind: "paused"; until: number; error?: string }
  | {
      kind: "ready";
      savings: Savings;
      lifetime?: Lifetime;
      pins?: { restored: number; pinned: number };
      /** Dollars saved on the branch so far, once computed. */
      dollars?: SavedSoFar;
      /** A pass behind the agent (a handed-over rest, a checkpoint) has ended; its edits wait for a boundary. */
      pending?: boolean;
    };

/** The classifier problem as one sentence, for a notice (the footer has only the short form). */
export function lookupProblem(lookup: Extract<ClassifierLookup, { ok: false }>): string {
  const what =
    lookup.problem === "no-key"
      ? `no credential for ${lookup.provider} (an API key in the environment, auth.json or models.json, or /login)`
      : lookup.problem === "not-found"
        ? "it is not in Pi's classifier catalog"
        : 'it is not a "provider/id" reference';
  return (
    `classifier "${lookup.ref}" cannot be used: ${what}. Nothing is judged until that is fixed ` +
    '(old images are still dropped); set "model" in the settings, or "local/lexical" for the offline scorer'
  );
}

/** Why the guard does nothing when its worker threads do not start, as one sentence. */
export function workersProblem(error: string): string {
  return (
    `its worker threads do not start (${oneLine(error, 300)}), so nothing is judged. ` +
    "Fix what the error names (a Node flag on Pi's command line or in NODE_OPTIONS, a broken install) and restart Pi"
  );
}

/** The classifier problem in a few words, after the model's name (`/guard`). */
export function lookupShort(lookup: Extract<ClassifierLookup, { ok: false }>): string {
  if (lookup.problem === "no-key") return `no ${lookup.provider} key`;
  return lookup.problem === "not-found" ? "not found" : "not provider/id";
}

export function statusText(state: GuardState): string {
  if (state.kind !== "ready") return otherText(state);
  const { saved, rest } = readyParts(state);
  return (saved ?? "") + rest;
}

/**
 * The ready footer in two parts: what was saved (the footer's good news: dollars saved, or the tokens
 * when no dollar figure shows) and the rest. No `saved` part when nothing was saved or it cost more.
 */
export function readyParts(state: Extract<GuardState, { kind: "ready" }>): { saved?: string; rest: string } {
  // "🛡 0 saved" alone would hide that edits are on their way.
  const pending = state.pending ? " · pass pending" : "";
  const tokens = savingsText(state.savings, state.lifetime);
  const pins = pinsText(state.pins) + pending;
  const money = moneyText(state.dollars);
  if (!money) {
    if (state.savings.items === 0) {
      return { rest: pending && tokens === "🛡 0 saved" ? `🛡 pass pending${pinsText(state.pins)}` : tokens + pins };
    }
    const saved = savedTokensText(state.savings);
    return { saved, rest: tokens.slice(saved.length) + pins };
  }
  const rest = state.savings.items === 0 && tokens === "🛡 0 saved" ? "" : ` · ${tokens.slice("🛡 ".length)}`;
  const net = state.dollars?.net ?? 0;
  const good = net > 0 || (net === 0 && state.savings.items > 0);
  return good ? { saved: `🛡 ${money}`, rest: rest + pins } : { rest: `🛡 ${money}${rest}${pins}` };
}

function otherText(state: Exclude<GuardState, { kind: "ready" }>): string {
  switch (state.kind) {
    case "off":
      return "🛡 guard off";
    case "busy":
      return "🛡 distilling…";
    case "checkpoint":
      return "🛡 checkpoint…";
    case "handing-over":
      return "🛡 prompt waiting · handing over…";
    case "paused":
      return "🛡 classifier failing · paused";
    case "no-workers":
      return `🛡 off: worker threads do not start (${oneLine(state.error, FOOTER_REF_MAX)})`;
    case "unavailable":
      if (state.lookup.problem === "no-key") return `🛡 no ${state.lookup.provider} key`;
      // Named, so a typo in "model" shows where it is.
      if (state.lookup.problem === "not-found") return `🛡 model ${oneLine(state.lookup.ref, FOOTER_REF_MAX)} not found`;
      return `🛡 model "${oneLine(state.lookup.ref, FOOTER_REF_MAX)}" is not provider/id`;
  }
}

/**
 * The dollars in a few words: "$0.42 saved", or "cost $0.03 more so far" while the cache rewrites and the
 * classifier outweigh what was saved. Nothing before the guard has edited or asked anything, or unpriced.
 */
function moneyText(saved: SavedSoFar | undefined): string | undefined {
  if (!saved?.priced || (saved.off === saved.on && saved.classifier === 0)) return undefined;
  // A figure beyond any bill (broken usage) shows as an unpriced model does: tokens only.
  if (![saved.off, saved.on, saved.classifier, saved.net].every(shownDollars)) return undefined;
  return saved.net >= 0 ? `${dollars(saved.net)} saved` : `cost ${dollars(-saved.net)} more so far`;
}

/** ` · ↺1 restored · 📌2 pinned` when the user restored or pinned entries on this branch. */
function pinsText(pins: { restored: number; pinned: number } | undefined): string {
  if (!pins) return "";
  return `${pins.restored ? ` · ↺${pins.restored} restored` : ""}${pins.pinned ? ` · 📌${pins.pinned} pinned` : ""}`;
}
