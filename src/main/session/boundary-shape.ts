// The last step of every boundary the guard handles: the whole draft list (other extensions' drafts,
// the pass's edits and record, restores, the recall signal's pins and notes) is checked once against
// the projection it will make (core/items/tool-pairs.ts). The judged edits that would split a tool call
// from its result, or touch an entry pinned meanwhile, are dropped whole and the record says why; what
// is broken on the branch already is repaired with edits appended last, and the user is told.
import type { SessionBoundaryDraft } from "@earendil-works/pi-coding-agent";
import { stepOpen } from "../../core/items/orphan-index.ts";
import {
  callIdsOf,
  type PairEntry,
  type Repair,
  type ShapeBreak,
  type ShapeDraft,
  settleShape,
  shapeBreaks,
} from "../../core/items/tool-pairs.ts";
import { PIN_TYPE, type PinEntryLike, readPinData, readPins } from "../../core/records/pins.ts";
import { savedChars } from "../../core/records/record.ts";
import { type GuardRecord, RECORD_TYPE } from "../../core/shared/types.ts";
import type { ProjectedLike } from "../pass/snapshot.ts";
import { traceSwallowed } from "../platform/swallowed.ts";

type RawMessage = { role?: unknown; content?: unknown; toolCallId?: unknown; stopReason?: unknown };

function pairOf(p: ProjectedLike): PairEntry {
  const source = p.sourceEntry;
  const visible = p.messages.length > 0;
  const type = source.type;
  if (type === "message") {
    const raw = (source.message ?? {}) as RawMessage;
    const role = raw.role;
    if (role === "assistant") {
      const entry: PairEntry = {
        id: source.id,
        role,
        visible,
        calls: callIdsOf(raw.content),
        shownCalls: callIdsOf((p.messages[0] as RawMessage | undefined)?.content),
      };
      if (raw.stopReason === "error" || raw.stopReason === "aborted") entry.skipped = true;
      return entry;
    }
    if (role === "toolResult") {
      return { id: source.id, role, visible, callId: typeof raw.toolCallId === "string" ? raw.toolCallId : "" };
    }
    // bashExecution reaches the model as a user turn.
    if (typeof role === "string") return { id: source.id, role: role === "system" ? "system" : "user", visible };
    return { id: source.id, visible };
  }
  if (type === "custom_message") return { id: source.id, role: "custom", visible };
  if (type === "compaction" || type === "branch_summary") return { id: source.id, role: "user", visible };
  return { id: source.id, visible: false };
}

/** The context as the shape check reads it. */
function pairEntries(context: readonly ProjectedLike[]): PairEntry[] {
  return context.map(pairOf);
}

/** What a request would carry that a provider rejects, on the branch as it is now. */
export function branchBreaks(context: readonly ProjectedLike[]): ShapeBreak[] {
  return shapeBreaks(pairEntries(context)).filter((b) => b.kind === "orphan-result");
}

type Message = { role?: string; content?: unknown; toolCallId?: string; stopReason?: string };

/**
 * The request (`shown`, else `messages`) without its orphan tool results, or undefined when it needs no
 * repair. The messages are read only when `vouched` (the projection) cannot say they are whole; a failure
 * leaves the request as it is.
 */
export function repairedRequest<M>(
  messages: readonly M[],
  shown: M[] | undefined,
  vouched: () => boolean,
): M[] | undefined {
  try {
    return !shown && vouched() ? undefined : withoutOrphans(shown ?? messages);
  } catch (error) {
    traceSwallowed("session.context-repair", error);
    return undefined;
  }
}

/**
 * The messages of one request without the tool results no call before them answers (Pi's `context`
 * event): a branch written that way fails every request until a boundary repairs it.
 */
export function withoutOrphans<M>(messages: readonly M[]): M[] | undefined {
  if (!hasOrphan(messages as readonly Message[])) return undefined;
  const entries: PairEntry[] = messages.map((m, i) => {
    const msg = m as Message;
    const role = msg.role === "custom" || msg.role === "bashExecution" ? "user" : msg.role;
    return {
      id: String(i),
      ...(role !== undefined ? { role } : {}),
      visible: true,
      ...(role === "assistant"
        ? {
            calls: callIdsOf(msg.content),
            ...(msg.stopReason === "error" || msg.stopReason === "aborted" ? { skipped: true } : {}),
          }
        : {}),
      ...(role === "toolResult" ? { callId: String(msg.toolCallId ?? "") } : {}),
    };
  });
  const orphans = new Set(shapeBreaks(entries).map((b) => Number(b.resultId)));
  if (orphans.size === 0) return undefined;
  return messages.filter((_, i) => !orphans.has(i));
}

/** The same walk without building anything: every request takes it, and almost none has an orphan. */
function hasOrphan(messages: readonly Message[]): boolean {
  let open: string[] | undefined = [];
  for (const m of messages) {
    open = stepOpen(open, m);
    if (!open) return true;
  }
  return false;
}

/**
 * Whether a boundary's list needs the whole check: it edits or compacts something, or the context it
 * starts from already shows a result apart from its call (the common boundary needs one plain scan).
 */
export function needsShapeCheck(drafts: readonly SessionBoundaryDraft[], messages: readonly unknown[]): boolean {
  return drafts.some((d) => d.type === "context_edit" || d.type === "compaction") || hasOrphan(messages as Message[]);
}

/** The same, reading the messages where the context's entries hold them (no list of them is built). */
export function needsShapeCheckIn(drafts: readonly SessionBoundaryDraft[], context: readonly ProjectedLike[]): boolean {
  if (drafts.some((d) => d.type === "context_edit" || d.type === "compaction")) return true;
  let open: string[] | undefined = [];
  for (const entry of context) {
    for (const m of entry.messages) {
      open = stepOpen(open, m as Message);
      if (!open) return true;
    }
  }
  return false;
}

export interface SettledBoundary {
  entries: SessionBoundaryDraft[];
  /** Judged edits dropped, with why (their results are kept in the record). */
  dropped: Array<{ targetId: string; why: string }>;
  /** Edits appended to mend what was broken before this boundary. */
  repairs: Repair[];
}

const isRecord = (d: SessionBoundaryDraft) => d.type === "custom" && d.customType === RECORD_TYPE;

/** The record with the results whose edits were dropped turned into "kept", and why. */
function keptIn(draft: SessionBoundaryDraft, why: ReadonlyMap<string, string>): SessionBoundaryDraft {
  const record = (draft as { data?: GuardRecord }).data;
  if (!record || !Array.isArray(record.results)) return draft;
  if (!record.results.some((r) => why.has(r?.entryId))) return draft;
  const results = record.results.map((r) =>
    why.has(r.entryId)
      ? { ...r, outcome: "kept" as const, reason: `rejected: ${why.get(r.entryId)}`, afterChars: r.beforeChars }
      : r,
  );
  return { ...draft, data: { ...record, results, savedChars: savedChars(results) } } as SessionBoundaryDraft;
}

/** The raw content of a message entry, for an edit that puts it back. */
function rawContent(source: ProjectedLike["sourceEntry"]): unknown {
  if (source.type === "custom_message") return source.content;
  return (source.message as { content?: unknown } | undefined)?.content;
}

/**
 * The final draft list of a boundary: `theirs` (the list as the guard received it) untouched, the
 * judged drafts that keep the shape, the restoring ones, then the repairs.
 */
export function settleBoundary(input: {
  context: readonly ProjectedLike[];
  theirs: readonly SessionBoundaryDraft[];
  judged: readonly SessionBoundaryDraft[];
  restoring: readonly SessionBoundaryDraft[];
}): SettledBoundary {
  const { context, theirs, judged, restoring } = input;
  const pinned = readPins(context.map((p) => p.sourceEntry as PinEntryLike)).pinned;
  for (const d of [...theirs, ...restoring]) {
    if (d.type !== "custom" || d.customType !== PIN_TYPE) continue;
    for (const id of readPinData(d as PinEntryLike)?.ids ?? []) pinned.add(id);
    for (const id of readPinData(d as PinEntryLike)?.notes ?? []) pinned.add(id);
  }
  const shape = settleShape({
    entries: pairEntries(context),
    theirs: theirs as readonly ShapeDraft[],
    judged: judged as readonly ShapeDraft[],
    restoring: restoring as readonly ShapeDraft[],
    pinned,
  });
  const why = new Map(shape.dropped.map((d) => [d.targetId, d.why]));
  const kept = shape.keep.map((i) => judged[i] as SessionBoundaryDraft).map((d) => (isRecord(d) ? keptIn(d, why) : d));
  const byId = new Map(context.map((p) => [p.sourceEntry.id, p.sourceEntry]));
  const repairs: SessionBoundaryDraft[] = [];
  for (const r of shape.repairs) {
    const source = byId.get(r.targetId);
    const content = source ? rawContent(source) : undefined;
    if (r.action === "omit") repairs.push({ type: "context_edit", targetId: r.targetId, replacement: null });
    else if (content !== undefined && content !== null) {
      repairs.push({
        type: "context_edit",
        targetId: r.targetId,
        replacement: { content: structuredClone(content) as never },
      });
    }
  }
  return { entries: [...theirs, ...kept, ...restoring, ...repairs], dropped: shape.dropped, repairs: shape.repairs };
}

/** The notice for a branch opened with tool results apart from their calls (`ids`). */
export function apartNotice(ids: readonly string[]): string {
  return (
    `this branch has a tool result apart from its call (${ids.join(", ")}), which providers reject: requests leave ` +
    "it out, and the next boundary repairs the branch"
  );
}

/** The notice for repairs made at a boundary. */
export function repairNotice(repairs: readonly Repair[]): string {
  const restored = repairs.filter((r) => r.action === "restore").map((r) => r.targetId);
  const omitted = repairs.filter((r) => r.action === "omit").map((r) => r.targetId);
  const parts = [
    ...(restored.length ? [`showed ${restored.join(", ")} again`] : []),
    ...(omitted.length ? [`left out ${omitted.join(", ")}`] : []),
  ];
  return `this branch had a tool result apart from its call, which providers reject; repaired: ${parts.join("; ")}`;
}

/**
 * A boundary's list as it goes to Pi: the drafts handed in (`event.entries`), the guard's (`result`, which
 * spreads them first), the pending restores, and repairs where the whole would break the branch's shape
 * (`onRepairs` hears of them). A shape check that fails changes nothing.
 */
export function finishBoundary(
  event: { entries: SessionBoundaryDraft[]; context: { contextEntries: unknown[] } },
  result: { entries: SessionBoundaryDraft[] } | undefined,
  restoring: SessionBoundaryDraft[],
  onRepairs: (repairs: readonly Repair[]) => void,
  /** The context is known to hold no tool result apart from its call (session/live-projection.ts). */
  contextWhole = false,
): { entries: SessionBoundaryDraft[] } | undefined {
  const all = result?.entries ?? event.entries;
  // Ours are what follows the list as it was handed in (every path spreads it first).
  const ours = all.length >= event.entries.length && event.entries.every((d, i) => all[i] === d);
  const theirs = ours ? event.entries : all;
  const judged = ours ? all.slice(event.entries.length) : [];
  const context = event.context.contextEntries as ProjectedLike[];
  try {
    if (!needsShapeCheckIn([...all, ...restoring], contextWhole ? [] : context)) {
      return restoring.length > 0 ? { entries: [...all, ...restoring] } : result;
    }
    const settled = settleBoundary({ context, theirs, judged, restoring });
    if (settled.repairs.length > 0) onRepairs(settled.repairs);
    if (!result && restoring.length === 0 && settled.repairs.length === 0) return;
    return { entries: settled.entries };
  } catch (error) {
    traceSwallowed("boundary-shape.settle", error);
    return restoring.length > 0 ? { entries: [...all, ...restoring] } : result;
  }
}
