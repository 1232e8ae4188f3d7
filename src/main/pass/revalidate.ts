// The drafts of a pass that ran behind the agent (session/background-pass.ts) land at a later boundary,
// when the context has moved on: each draft is checked again against that boundary's context. A target
// shown with other content than the pass judged (edited meanwhile, by another extension or another
// pass), or one the user pinned meanwhile, is dropped from it, and the record says so.
import { type PinEntryLike, readPins } from "../../core/records/pins.ts";
import { recordDraft, savedChars } from "../../core/records/record.ts";
import type { ContextEditDraft, CustomDraft, GuardRecord } from "../../core/shared/types.ts";
import type { ProjectedLike } from "./snapshot.ts";
import { validateEditsPaced } from "./validate.ts";

/** What a finished pass hands back: its edits and its record (the drafts not yet returned to Pi). */
export interface Judged {
  edits: ContextEditDraft[];
  record: GuardRecord;
}

/** A checkpoint's drafts as they land at a later boundary. */
export interface Landed {
  edits: ContextEditDraft[];
  record: GuardRecord;
  recordDraft: CustomDraft;
  /** Targets dropped at landing, with why. */
  dropped: Array<{ targetId: string; why: string }>;
  /** It was judged on a branch the session has left: nothing of it lands (the record says why). */
  offBranch?: true;
}

/** The record of a pass dropped whole: every result kept, and why. */
export function keptWhole(record: GuardRecord, why: string): GuardRecord {
  const results = record.results.map((r) => ({
    ...r,
    outcome: "kept" as const,
    reason: `rejected: ${why}`,
    afterChars: r.beforeChars,
  }));
  return { ...record, results, savedChars: savedChars(results) };
}

/** What a boundary shows of an entry: the first message's content object and the number of messages. */
interface Shown {
  content: unknown;
  count: number;
}

function shownOf(entry: ProjectedLike): Shown {
  const first = entry.messages[0] as { content?: unknown } | undefined;
  return { content: first?.content, count: entry.messages.length };
}

/**
 * What the judged context showed of each target. Pi's entries and an edit's content are immutable
 * objects, so the same object means the same content, and another object means another edit applies.
 */
function shownTargets(context: readonly ProjectedLike[], edits: readonly ContextEditDraft[]): Map<string, Shown> {
  const targets = new Set(edits.map((e) => e.targetId));
  const out = new Map<string, Shown>();
  for (const entry of context) {
    if (targets.has(entry.sourceEntry.id)) out.set(entry.sourceEntry.id, shownOf(entry));
  }
  return out;
}

/**
 * Entries the user pinned or restored since (read from `now`), and the prompt of each exchange the pass
 * would omit with one of them inside: its stub is dropped, and the validation drops its omissions with it.
 */
function pinnedTargets(judged: Judged, now: readonly ProjectedLike[]): Set<string> {
  const { pinned } = readPins(now.map((p) => p.sourceEntry as PinEntryLike));
  if (pinned.size === 0) return pinned;
  const out = new Set(pinned);
  for (const r of judged.record.results) {
    if (r.kind === "exchange" && r.omitted?.some((id) => pinned.has(id))) out.add(r.entryId);
  }
  return out;
}

/**
 * Checks a pass's drafts against a later context: a target that shows other content than when it was
 * judged, or that the user pinned since, is dropped, then every rule of the usual validation applies.
 * Dropped results become "kept".
 */
export async function revalidate(
  judged: Judged,
  then: readonly ProjectedLike[],
  now: readonly ProjectedLike[],
  positionOf?: (id: string) => number | undefined,
): Promise<Landed> {
  const before = shownTargets(then, judged.edits);
  const pinned = pinnedTargets(judged, now);
  const { valid, dropped } = await validateEditsPaced(judged.edits, now, positionOf, (draft, target) => {
    if (pinned.has(draft.targetId)) return "pinned since it was judged";
    const was = before.get(draft.targetId);
    const is = shownOf(target);
    return was && was.content === is.content && was.count === is.count ? undefined : "changed since it was judged";
  });
  let record = judged.record;
  if (dropped.length > 0) {
    const why = new Map(dropped.map((d) => [d.draft.targetId, d.why]));
    const results = record.results.map((r) =>
      why.has(r.entryId)
        ? { ...r, outcome: "kept" as const, reason: `rejected: ${why.get(r.entryId)}`, afterChars: r.beforeChars }
        : r,
    );
    record = { ...record, results, savedChars: savedChars(results) };
  }
  return {
    edits: valid,
    record,
    recordDraft: recordDraft(record),
    dropped: dropped.map((d) => ({ targetId: d.draft.targetId, why: d.why })),
  };
}
