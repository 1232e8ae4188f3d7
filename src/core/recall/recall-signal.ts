// Recall as a signal: an entry the model recalls a second time in a run, or recalls whole, is still
// needed, and paying a tool call per use costs more than having it back. This finds those entries from
// the run's own tool calls on the branch (nothing is counted in memory), with the recall results that
// copied them, so the boundary can restore the entry, pin it and turn those results into notes.
import { findRunStart } from "../distill/run.ts";
import { noteThatFits } from "../shared/notes.ts";
import { GUARD_MARKER, type SnapEntry } from "../shared/types.ts";

export interface RecallUse {
  /** Recall calls of this entry in the run. */
  calls: number;
  /** Whether one of them asked for the whole original (no pattern, offset or limit). */
  full: boolean;
  /** The tool results of those calls that are on the branch, in order. */
  resultIds: string[];
}

/** The recalls of the running (or just finished) run, by the entry they recalled. */
export function recallsInRun(entries: SnapEntry[]): Map<string, RecallUse> {
  const out = new Map<string, RecallUse>();
  const start = findRunStart(entries);
  if (start < 0) return out;
  const target = new Map<string, string>();
  for (let i = start + 1; i < entries.length; i++) {
    const e = entries[i] as SnapEntry;
    for (const call of e.toolCalls ?? []) {
      if (call.name !== "recall" || typeof call.args.entryId !== "string") continue;
      const id = call.args.entryId.trim();
      const use = out.get(id) ?? { calls: 0, full: false, resultIds: [] };
      use.calls++;
      if (call.args.pattern === undefined && call.args.offset === undefined && call.args.limit === undefined) {
        use.full = true;
      }
      out.set(id, use);
      target.set(call.id, id);
    }
    if (e.role === "toolResult" && e.toolCallId !== undefined) {
      const id = target.get(e.toolCallId);
      if (id !== undefined) out.get(id)?.resultIds.push(e.id);
    }
  }
  return out;
}

/** Whether the model's use of an entry says it is still needed: a second recall, or a whole one. */
export function recallSaysNeeded(use: RecallUse): boolean {
  return use.calls >= 2 || use.full;
}

/**
 * What a recall result shows once its entry is back in context, given the result's size now: the full
 * note, a short one, or undefined when even that is not shorter (a narrow recall stays as it is).
 */
export function recallNote(entryId: string, calls: number, resultChars: number): string | undefined {
  return noteThatFits(resultChars, [
    `${GUARD_MARKER} This recall of ${entryId} is no longer needed: after ${calls} recall(s) the original ` +
      "is back in context where it was, whole.",
    `${GUARD_MARKER} ${entryId} is back in context.`,
  ]);
}
