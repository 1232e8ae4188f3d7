// A run end that lands a pending pass also runs its own (main/session/boundary.ts, the replay's driver).
// The landed drafts are not on the branch yet when the new pass plans, so their record does not mark
// its items judged: the new pass is told to leave them alone, or it would ask them again and two drafts
// of one boundary could target the same entry. Their edits also make the next request rewrite the cache
// from the first one: the new pass's break-even gates count that rewrite as paid.
import type { ContextEditDraft, GuardRecord } from "../shared/types.ts";

/** What a pass landing at the same boundary did, as the new pass's plan needs it. */
export interface LandingPass {
  /** Every entry it judged or edits: its record's items (an exchange's omitted entries too) and its targets. */
  judged: string[];
  /** The entries its edits target. */
  edited: string[];
}

export function landedItems(landed: { edits: readonly ContextEditDraft[]; record: GuardRecord }): LandingPass {
  const ids = new Set<string>();
  for (const r of landed.record.results) {
    ids.add(r.entryId);
    for (const id of r.omitted ?? []) ids.add(id);
  }
  const edited = landed.edits.map((e) => e.targetId);
  for (const id of edited) ids.add(id);
  return { judged: [...ids], edited };
}

/**
 * What the passes landing at one boundary leave to the run end's own pass. A checkpoint's kept outputs are
 * not among them: an awaited run end judges those again with the final answer, and so does this one.
 */
export function landingOf(
  landed: ReadonlyArray<{ edits: readonly ContextEditDraft[]; record: GuardRecord }>,
): LandingPass {
  const judged = new Set<string>();
  const edited: string[] = [];
  for (const pass of landed) {
    const midRun = pass.record.phase === "mid-run";
    const record = midRun
      ? { ...pass.record, results: pass.record.results.filter((r) => r.outcome !== "kept") }
      : pass.record;
    const items = landedItems({ edits: pass.edits, record });
    for (const id of items.judged) judged.add(id);
    edited.push(...items.edited);
  }
  return { judged: [...judged], edited };
}
