// What each request sent to the model shows while edits wait for their boundary (Pi's `context` event).
// Two kinds wait: a `/guard restore` (the original goes back at the next boundary) and the drafts of a
// pass that has ended behind the agent (docs/DESIGN.md, nobody waits at the run end), which land at the
// next boundary too. Until then every request shows what the projection will show once they have, so the
// first request after the boundary reads the cache the previous one wrote. The user's word wins: a
// restored or pinned entry shows its original whatever a ready draft says, and a ready draft that touches
// one (an exchange: any of its entries) is not carried at all, as it will not land.
import { type ExtensionContext, sessionEntryToContextMessages } from "@earendil-works/pi-coding-agent";
import type { ContextEditDraft } from "../../core/shared/types.ts";
import type { Judged } from "../pass/revalidate.ts";
import { traceSwallowed } from "../platform/swallowed.ts";
import type { Message, PendingRestores } from "./restore.ts";

type Projected = ReturnType<ExtensionContext["sessionManager"]["buildSessionProjection"]>["entries"][number];
/** Where the projection is read from: Pi's session manager, or the one the guard keeps entry by entry. */
type SessionView = { buildSessionProjection(): { entries: readonly Projected[] } };
type RawEntry = Parameters<typeof sessionEntryToContextMessages>[0];

const same = (a: Message | undefined, b: Message) =>
  a !== undefined &&
  a.role === b.role &&
  (a as { timestamp?: unknown }).timestamp === (b as { timestamp?: unknown }).timestamp;

/**
 * The targets of a pass's drafts that may not land because the user pinned or restored an entry they
 * touch: that entry, and every entry of an exchange that holds one (an exchange goes whole or not at all).
 */
export function blockedByPins(judged: Judged, pinned: ReadonlySet<string>): Set<string> {
  const blocked = new Set<string>();
  if (pinned.size === 0) return blocked;
  for (const r of judged.record.results) {
    const ids = [r.entryId, ...(r.omitted ?? [])];
    if (ids.some((id) => pinned.has(id))) for (const id of ids) blocked.add(id);
  }
  for (const e of judged.edits) if (pinned.has(e.targetId)) blocked.add(e.targetId);
  return blocked;
}

/** The ready drafts a request may carry: none that the user's pins or restores block. */
export function carriedDrafts(judged: Judged, pinned: ReadonlySet<string>): ContextEditDraft[] {
  const blocked = blockedByPins(judged, pinned);
  return blocked.size === 0 ? judged.edits : judged.edits.filter((e) => !blocked.has(e.targetId));
}

/**
 * `messages` as they will be once the waiting edits land: each entry in `restoring` shows its original
 * (changed in place, or inserted where it stood when it is omitted now), each target of `edits` its
 * draft (omitted, or its content replaced), restores first. Returns undefined when nothing changes or the
 * messages do not line up with Pi's projection (another extension changed them): the boundary still
 * lands everything.
 */
export function withWaitingEdits(
  messages: readonly Message[],
  sm: SessionView,
  restoring: ReadonlySet<string>,
  edits: readonly ContextEditDraft[],
): Message[] | undefined {
  if (restoring.size === 0 && edits.length === 0) return undefined;
  const byTarget = new Map(edits.map((e) => [e.targetId, e]));
  const out: Message[] = [];
  let changed = false;
  let k = 0;
  for (const projected of sm.buildSessionProjection().entries) {
    const id = projected.sourceEntry.id;
    const shown = projected.messages.filter((m) => m.role !== "system") as Message[];
    for (const m of shown) if (!same(messages[k++], m)) return undefined;
    const from = k - shown.length;
    if (restoring.has(id)) {
      const original = sessionEntryToContextMessages(projected.sourceEntry as RawEntry) as Message[];
      if (shown.length === 0) {
        out.push(...original.filter((m) => m.role !== "system").map((m) => structuredClone(m)));
        changed = true;
      } else {
        shown.forEach((_, j) => {
          const before = original[j] as { content?: unknown } | undefined;
          const message = messages[from + j] as Message;
          out.push(before ? ({ ...message, content: structuredClone(before.content) } as Message) : message);
        });
        changed = true;
      }
      continue;
    }
    const edit = byTarget.get(id);
    if (!edit) {
      for (let j = 0; j < shown.length; j++) out.push(messages[from + j] as Message);
      continue;
    }
    if (shown.length > 0) changed = true;
    if (edit.replacement === null || shown.length === 0) continue;
    out.push({ ...(messages[from] as Message), content: edit.replacement.content } as Message);
  }
  return changed ? [...out, ...messages.slice(k)] : undefined;
}

/**
 * A request's messages with what waits for the next boundary shown: the pending restores' originals and
 * the ready pass's drafts the user's pins allow. Undefined when nothing waits, or when the branch cannot
 * be read (the boundary still lands them).
 */
export function waitingView(
  messages: readonly Message[],
  sm: SessionView & Parameters<PendingRestores["pending"]>[0],
  restores: Pick<PendingRestores, "pending" | "pinned">,
  ready: () => Judged | undefined,
  projected?: () => readonly Projected[],
): Message[] | undefined {
  try {
    const restoring = new Set(restores.pending(sm));
    const judged = ready();
    const edits = judged ? carriedDrafts(judged, restores.pinned(sm)) : [];
    const view = projected ? { buildSessionProjection: () => ({ entries: projected() }) } : sm;
    return withWaitingEdits(messages, view, restoring, edits);
  } catch (error) {
    traceSwallowed("ready-drafts.waiting", error);
    return undefined;
  }
}
