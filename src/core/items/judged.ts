// What the guard's own records on the branch say about the entries they list: which entries the guard
// replaced, and which outputs the classifier never gave a usable answer for. An entry counts as the
// guard's edit only through these records, never by its visible text: a tool's own output may start with
// "[context-guard]", and must be judged like any other instead of passing for one of ours.
// One linear pass over the entries; records come back from session files, so they are read defensively.

import { GUARD_MARKER, RECORD_TYPE, type SnapEntry } from "../shared/types.ts";

/** Reasons that mean the classifier gave no usable answer for an item (several are joined with commas). */
const UNANSWERED_REASONS: ReadonlySet<string> = new Set(["timeout", "error", "aborted", "no-answer"]);

/**
 * Most records that may leave one output without a usable answer (or deferred by the cache gate) before
 * it is no longer asked about at later run ends. Counts every pass, mid-run ones included.
 */
export const MAX_UNANSWERED_PASSES = 3;

export interface GuardJudgments {
  /**
   * Entries whose latest result in a guard record replaced them: distilled or removed outputs, outputs
   * without their images, prompts of omitted exchanges.
   */
  edited: Set<string>;
  /**
   * Outputs (large or small) whose latest result had no usable answer or was deferred, with the number of
   * results like that which name them (the passes that asked about it without an edit-ready answer).
   */
  retry: Map<string, number>;
}

function reasonTokens(reason: unknown): string[] {
  return typeof reason === "string" ? reason.split(",").map((r) => r.trim()) : [];
}

/**
 * Whether a result replaced its entry. Full records say so in `outcome`; the worker sees slim records
 * (kind, entry and reason only), where the reason tells: a large output was edited when a segment kept
 * only some chunks or none, a small one when it was not needed, an exchange when unrelated; an image
 * result is always a removal. A draft the validation rejected reads `rejected: …` and made no edit.
 */
export function resultEdited(kind: unknown, outcome: unknown, reason: unknown): boolean {
  if (typeof outcome === "string") return outcome === "distilled" || outcome === "removed";
  if (typeof reason === "string" && reason.startsWith("rejected")) return false;
  const tokens = reasonTokens(reason);
  if (kind === "image") return true;
  if (tokens.includes("changed-on-disk")) return true;
  if (kind === "small") return tokens.includes("not-needed");
  if (kind === "exchange") return tokens.includes("unrelated");
  return tokens.includes("chunks") || tokens.includes("none-needed");
}

/**
 * Whether a result of an output (not an exchange or image) asks for another pass. One a keep rule held
 * is asked again too: the rule may no longer hold once the work has moved on.
 */
function resultRetries(kind: unknown, reason: unknown): boolean {
  if (kind === "exchange" || kind === "image") return false;
  return reasonTokens(reason).some((r) => r === "deferred" || r.startsWith("keep:") || UNANSWERED_REASONS.has(r));
}

/**
 * The judgments of the records folded in so far, in branch order. `judgments` is live: it follows every
 * record added after it was read (the pass worker keeps one per session and adds what each boundary appends).
 */
export class JudgmentsFold {
  readonly judgments: GuardJudgments = { edited: new Set(), retry: new Map() };
  /** Results that asked for a retry, per entry, over every record (the retry bound counts them all). */
  readonly #counts = new Map<string, number>();

  add(e: SnapEntry): void {
    if (e.type !== "custom" || e.customType !== RECORD_TYPE) return;
    const data = e.data;
    const results = typeof data === "object" && data !== null ? (data as { results?: unknown }).results : undefined;
    if (!Array.isArray(results)) return;
    const { edited, retry } = this.judgments;
    for (const r of results as unknown[]) {
      if (typeof r !== "object" || r === null) continue;
      const { kind, entryId, reason, outcome } = r as Record<string, unknown>;
      if (typeof entryId !== "string") continue;
      if (resultEdited(kind, outcome, reason)) edited.add(entryId);
      else edited.delete(entryId);
      if (resultRetries(kind, reason)) {
        const n = (this.#counts.get(entryId) ?? 0) + 1;
        this.#counts.set(entryId, n);
        retry.set(entryId, n);
      } else {
        retry.delete(entryId);
      }
    }
  }
}

/** Reads every guard record before `end` (default: all entries), in branch order. */
export function readJudgments(entries: readonly SnapEntry[], end = entries.length): GuardJudgments {
  const fold = new JudgmentsFold();
  for (let i = 0; i < Math.min(end, entries.length); i++) fold.add(entries[i] as SnapEntry);
  return fold.judgments;
}

/**
 * Whether the entry shows the guard's own replacement: its visible content differs from the raw entry,
 * shows the marker, and the latest guard record that lists it says the guard replaced it. A raw output
 * that merely starts with the marker is not edited; an edit by someone else is not in our records.
 */
export function isGuardEdit(e: SnapEntry, judged: Pick<GuardJudgments, "edited">): boolean {
  return e.edited === true && e.visible && e.text.startsWith(GUARD_MARKER) && judged.edited.has(e.id);
}

/** Whether an output is due to be asked again: its latest result had no usable answer, within the bound. */
export function dueForRetry(id: string, judged: Pick<GuardJudgments, "retry">): boolean {
  const n = judged.retry.get(id);
  return n !== undefined && n < MAX_UNANSWERED_PASSES;
}
