// The run's own output edits go through the break-even rule once the answers are in, with what they really
// save. An edit early in a long run makes the next request rewrite from the cache entry it can still read
// (for Anthropic, often the question); with few requests to come, that costs more than the smaller context
// saves. Edits that do not pay are deferred, not lost: the record says "deferred" and a later pass asks again.

import type { GuardConfig } from "../shared/config.ts";
import type { ContextEditDraft, RecordResult, SnapEntry } from "../shared/types.ts";
import { type CacheModel, rewriteFactor } from "./break-even.ts";
import { type CheckpointCacheView, rewriteAfterEdit } from "./checkpoint.ts";
import { coldCache } from "./cold-cache.ts";

/** What the plan knew of the cache when it was made, for the gates after judging. */
export interface PlanBreakEven {
  /** The gates apply (the phase's break-even setting is on and the cache is warm). */
  on: boolean;
  factor: number;
  /** Requests the saving is multiplied by: the session's so far at run end, the run's turns mid-run. */
  requests: number;
  /** Why the cache is cold, when it is: every edit is free. */
  cold?: string;
  pinAnthropicCache: boolean;
  trustedIds?: readonly string[];
}

export interface EditGateInput {
  entries: readonly SnapEntry[];
  /** The pass's output edits so far, and their record results. */
  drafts: ContextEditDraft[];
  results: RecordResult[];
  /** Entries the pass edits whatever this gate says (their rewrite is paid already). */
  otherEditIds: readonly string[];
  family: CacheModel["family"];
  gate: PlanBreakEven;
}

/** Characters the next request rewrites when these entries are edited (0 for none). */
function rewriteFor(input: EditGateInput, position: Map<string, number>, ids: Iterable<string>): number {
  let first = Number.POSITIVE_INFINITY;
  for (const id of ids) first = Math.min(first, position.get(id) ?? Number.POSITIVE_INFINITY);
  if (!Number.isFinite(first)) return 0;
  const view = { family: input.family, ...(input.gate.trustedIds ? { trustedIds: input.gate.trustedIds } : {}) };
  return rewriteAfterEdit(input.entries, first, view, input.gate.pinAnthropicCache);
}

/**
 * Removes, in place, the output edits that do not pay for the rewrite they add, earliest first (the rewrite
 * starts at the earliest edit), and marks their results deferred.
 */
export function deferEditsThatDoNotPay(input: EditGateInput): void {
  const byId = new Map<string, RecordResult>();
  for (const r of input.results) if (r.kind === "large" || r.kind === "small") byId.set(r.entryId, r);
  const position = new Map(input.entries.map((e, i) => [e.id, i]));
  const edits = input.drafts
    .filter((d) => byId.has(d.targetId) && position.has(d.targetId))
    .map((d) => ({
      id: d.targetId,
      saving: Math.max(
        0,
        (byId.get(d.targetId) as RecordResult).beforeChars - (byId.get(d.targetId) as RecordResult).afterChars,
      ),
    }))
    .sort((a, b) => (position.get(a.id) ?? 0) - (position.get(b.id) ?? 0));
  if (edits.length === 0) return;
  const base = rewriteFor(input, position, input.otherEditIds);
  let from = 0;
  for (; from < edits.length; from++) {
    const set = edits.slice(from);
    const marginal = Math.max(0, rewriteFor(input, position, [...input.otherEditIds, ...set.map((x) => x.id)]) - base);
    const saving = set.reduce((n, x) => n + x.saving, 0);
    if (marginal === 0 || saving * input.gate.requests >= input.gate.factor * marginal) break;
  }
  if (from === 0) return;
  const deferred = new Set(edits.slice(0, from).map((x) => x.id));
  const keep = input.drafts.filter((d) => !deferred.has(d.targetId));
  input.drafts.splice(0, input.drafts.length, ...keep);
  input.results.forEach((r, i) => {
    if (deferred.has(r.entryId) && byId.get(r.entryId) === r) {
      input.results[i] = { ...r, outcome: "kept", reason: "deferred", afterChars: r.beforeChars };
    }
  });
}

/** The gates' inputs, fixed at plan time (the finish half runs without the view). */
export function planBreakEven(
  entries: readonly SnapEntry[],
  config: Pick<GuardConfig, "breakEvenMargin" | "pinAnthropicCache">,
  view: Partial<CheckpointCacheView> | undefined,
  on: boolean,
  requests: number,
): PlanBreakEven {
  const family = view?.family ?? "other";
  const cold = coldCache(entries, { ...view, family });
  return {
    on: on && !cold.cold,
    factor: rewriteFactor(family, view?.prices, config.breakEvenMargin),
    requests,
    ...(cold.cold ? { cold: cold.reason } : {}),
    pinAnthropicCache: config.pinAnthropicCache,
    ...(view?.trustedIds ? { trustedIds: view.trustedIds } : {}),
  };
}
