// A run end that lands a pending pass also runs its own (main/session/boundary.ts, the replay's driver).
// The landed drafts are not on the branch yet when the new pass plans, so their record does not mark
// its items judged: the new pass is told to leave them alone, or it would ask them again and two drafts
// of one boundary could target the same entry.
import type { ContextEditDraft, GuardRecord } from "../shared/types.ts";

/** Every entry a landed pass judged or edits: its record's items (an exchange's omitted entries too) and its targets. */
export function landedItems(landed: { edits: readonly ContextEditDraft[]; record: GuardRecord }): string[] {
  const ids = new Set<string>();
  for (const r of landed.record.results) {
    ids.add(r.entryId);
    for (const id of r.omitted ?? []) ids.add(id);
  }
  for (const e of landed.edits) ids.add(e.targetId);
  return [...ids];
}
