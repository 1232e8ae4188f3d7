// `/guard restore` and `/guard pin`, on Pi's side. A command cannot append a context_edit (only boundary
// drafts can), so a restore is remembered at once as a custom entry (core/records/pins.ts); until the
// next boundary appends the edit that puts the original back, every request sent to the model is given
// the original through Pi's `context` event. The model's recalls are a signal too: an entry recalled
// twice in a run, or whole, comes back the same way at the next boundary. Everything is read from the
// branch, so a reload or /tree sees the same.
import {
  type ExtensionContext,
  type SessionBoundaryDraft,
  sessionEntryToContextMessages,
} from "@earendil-works/pi-coding-agent";
import { runMayRecall } from "../../core/recall/recall-gate.ts";
import { recallNote, recallSaysNeeded, recallsInRun } from "../../core/recall/recall-signal.ts";
import { itemFor, type OutItem, outOfContext } from "../../core/records/out-of-context.ts";
import { PIN_TYPE, type PinEntryLike, pendingRestores, pinData, readPins } from "../../core/records/pins.ts";
import { formatCount } from "../../core/shared/text.ts";
import type { SnapEntry } from "../../core/shared/types.ts";
import type { ProjectedLike, SnapshotBuilder } from "../pass/snapshot.ts";
import { contentSize } from "../pass/validate.ts";
import { BranchIndex } from "./branch-index.ts";
import type { PiBoundary } from "./session-parts.ts";

type SessionView = ExtensionContext["sessionManager"];
type RawEntry = ReturnType<SessionView["getBranch"]>[number];
export type Message = ReturnType<SessionView["buildSessionProjection"]>["messages"][number];

/** What the commands need of the session: the snapshot of what the model sees, and a way to append. */
export interface RestoreHost {
  snapshot(ctx: ExtensionContext): SnapEntry[];
  appendEntry(customType: string, data: unknown): void;
}

export interface CommandOutcome {
  ok: boolean;
  message: string;
}

/** What is out of context on this branch now, newest first, and the pins. */
export function listOut(host: RestoreHost, ctx: ExtensionContext): { items: OutItem[]; snap: SnapEntry[] } {
  const snap = host.snapshot(ctx);
  return { items: outOfContext(snap, ctx.sessionManager.getBranch()), snap };
}

const isMessageEntry = (e: RawEntry | undefined) => e?.type === "message" || e?.type === "custom_message";

function unknownId(id: string, what: string): CommandOutcome {
  return { ok: false, message: `context-guard: no entry "${id}" on this branch; /guard list shows the ids ${what}` };
}

/** `/guard restore <id>`: the original goes back into context and the entry is pinned. */
export function restoreEntry(host: RestoreHost, ctx: ExtensionContext, id: string): CommandOutcome {
  if (!id) return { ok: false, message: "context-guard: /guard restore needs an entry id (see /guard list)" };
  const branch = ctx.sessionManager.getBranch();
  const entry = branch.find((e) => e.id === id);
  if (!entry) return unknownId(id, "of what can be restored");
  const { items, snap } = listOut(host, ctx);
  const item = itemFor(items, id);
  if (!item) {
    const pins = readPins(snap);
    if (pins.restored.has(id)) return { ok: false, message: `context-guard: ${id} is restored already` };
    const shown = snap.find((e) => e.id === id);
    const why =
      shown?.edited === true
        ? "its content was changed by someone else (another extension, or Pi), not by context-guard"
        : "it is in context as it is: nothing to restore";
    return { ok: false, message: `context-guard: ${id} was not taken out by context-guard; ${why}` };
  }
  host.appendEntry(PIN_TYPE, pinData("restore", [item.entryId, ...item.omitted]));
  const what = item.kind === "exchange" ? `the exchange "${item.label}"` : item.label;
  return {
    ok: true,
    message:
      `context-guard: restored ${what} (${formatCount(item.beforeChars)} chars): the model sees the original ` +
      "from its next request on, and it is never judged again",
  };
}

/** `/guard pin <id>`: no pass judges this entry (nor an exchange that holds it) again. */
export function pinEntry(host: RestoreHost, ctx: ExtensionContext, id: string): CommandOutcome {
  if (!id) return { ok: false, message: "context-guard: /guard pin needs an entry id (see /guard list)" };
  const entry = ctx.sessionManager.getBranch().find((e) => e.id === id);
  if (!entry) return unknownId(id, "of what is out; any message's id can be pinned");
  if (!isMessageEntry(entry)) {
    return {
      ok: false,
      message: `context-guard: ${id} is a ${entry.type} entry, not a message: only messages are judged`,
    };
  }
  const { items, snap } = listOut(host, ctx);
  if (readPins(snap).pinned.has(id)) return { ok: false, message: `context-guard: ${id} is pinned already` };
  host.appendEntry(PIN_TYPE, pinData("pin", [id]));
  const out = itemFor(items, id);
  return {
    ok: true,
    message: out
      ? `context-guard: pinned ${id}; it stays as it is now (out of context): /guard restore ${out.entryId} puts it back`
      : `context-guard: pinned ${id}; no pass judges it again`,
  };
}

/** The original message(s) of a raw entry, as the model would see them unedited. */
function originals(entry: ProjectedLike["sourceEntry"]): Message[] {
  return sessionEntryToContextMessages(entry as unknown as RawEntry) as Message[];
}

const same = (a: Message | undefined, b: Message) =>
  a !== undefined &&
  a.role === b.role &&
  (a as { timestamp?: unknown }).timestamp === (b as { timestamp?: unknown }).timestamp;

/**
 * Restores still waiting for their boundary, tracked on an incremental view of the branch so the check
 * before every request costs what is new.
 */
export class PendingRestores {
  readonly #index = new BranchIndex();
  /** Targets a boundary did not find in its context (compacted away): no later request shows them either. */
  readonly #unreachable = new Set<string>();

  pending(sm: SessionView): string[] {
    const entries = this.#index.sync(sm).entries as unknown as PinEntryLike[];
    const pending = pendingRestores(entries);
    return this.#unreachable.size ? pending.filter((id) => !this.#unreachable.has(id)) : pending;
  }

  /**
   * Pi's `context` event: each pending restore's original in place of what the projection shows. An
   * edited message gets its original content in place (Pi then keeps its system messages where they
   * are); an omitted one is inserted, which needs a new list. Returns that list, or undefined when the
   * messages were left as they are or changed in place. Messages that do not line up with the projection
   * are left alone: the boundary lands the restore.
   */
  apply(messages: Message[], sm: SessionView): Message[] | undefined {
    const pending = new Set(this.pending(sm));
    if (pending.size === 0) return undefined;
    const projection = sm.buildSessionProjection();
    const out: Message[] = [];
    const inPlace: Array<{ at: number; content: unknown }> = [];
    let inserted = false;
    let k = 0;
    for (const projected of projection.entries) {
      const restoring = pending.has(projected.sourceEntry.id);
      const shown = projected.messages.filter((m) => m.role !== "system");
      const original = restoring ? originals(projected.sourceEntry as unknown as ProjectedLike["sourceEntry"]) : [];
      for (let j = 0; j < shown.length; j++) {
        if (!same(messages[k], shown[j] as Message)) return undefined;
        const before = original[j] as { content?: unknown } | undefined;
        if (restoring && before) inPlace.push({ at: k, content: before.content });
        out.push(messages[k] as Message);
        k++;
      }
      if (restoring && shown.length === 0 && original.length > 0) {
        out.push(...original.map((m) => structuredClone(m)));
        inserted = true;
      }
    }
    for (const { at, content } of inPlace) {
      (messages[at] as { content?: unknown }).content = structuredClone(content);
    }
    if (!inserted) return undefined;
    // The in-place changes are in `out` too: it holds the same message objects.
    return [...out, ...messages.slice(k)];
  }

  /** At a boundary: the edits that put each pending restore's original back (targets on this context only). */
  drafts(context: readonly ProjectedLike[], sm: SessionView): SessionBoundaryDraft[] {
    const pending = this.pending(sm);
    if (pending.length === 0) return [];
    const byId = new Map(context.map((p) => [p.sourceEntry.id, p.sourceEntry]));
    for (const id of pending) if (!byId.has(id)) this.#unreachable.add(id);
    return restoringEdits(pending, byId);
  }
}

/**
 * Recall as a signal, at a boundary: each entry the run recalled twice, or whole, that is still out of
 * context comes back (restored and pinned, as by `/guard restore`), and the recall results that copied it
 * become one-line notes. The request entry goes first, so its own edits are not left pending.
 */
function recallSignalDrafts(
  snap: SnapEntry[],
  context: readonly ProjectedLike[],
  branch: () => readonly RawEntry[],
): SessionBoundaryDraft[] {
  const uses = [...recallsInRun(snap)].filter(([, use]) => recallSaysNeeded(use));
  if (uses.length === 0) return [];
  const items = outOfContext(snap, branch());
  const out: SessionBoundaryDraft[] = [];
  const byId = new Map(context.map((p) => [p.sourceEntry.id, p.sourceEntry]));
  for (const [id, use] of uses) {
    const item = itemFor(items, id);
    if (!item) continue;
    const ids = [item.entryId, ...item.omitted];
    // A recall result becomes a note only when the note is shorter than the result.
    const notes: Array<{ id: string; text: string }> = [];
    for (const r of use.resultIds) {
      const source = byId.get(r);
      const text = source ? recallNote(item.entryId, use.calls, contentSize(rawContent(source))) : undefined;
      if (text !== undefined) notes.push({ id: r, text });
    }
    const noteIds = notes.map((n) => n.id);
    out.push({ type: "custom", customType: PIN_TYPE, data: pinData("restore", ids, noteIds) });
    out.push(...restoringEdits(ids, byId));
    for (const n of notes)
      out.push({ type: "context_edit", targetId: n.id, replacement: { content: [{ type: "text", text: n.text }] } });
  }
  return out;
}

/** A message entry's raw content (undefined for other entries). */
function rawContent(source: ProjectedLike["sourceEntry"]): unknown {
  if (source.type === "message") return (source.message as { content?: unknown } | undefined)?.content;
  return source.type === "custom_message" ? source.content : undefined;
}

/** The edits that put these entries' raw content back (targets on the context, messages only). */
function restoringEdits(
  ids: readonly string[],
  byId: ReadonlyMap<string, ProjectedLike["sourceEntry"]>,
): SessionBoundaryDraft[] {
  const out: SessionBoundaryDraft[] = [];
  for (const id of ids) {
    const source = byId.get(id);
    const content = source ? rawContent(source) : undefined;
    if (content === undefined || content === null) continue;
    out.push({ type: "context_edit", targetId: id, replacement: { content: structuredClone(content) as never } });
  }
  return out;
}

/**
 * The drafts a boundary appends after the pass's: the pending restores' edits and the recall signal's.
 * They win over any edit of the same target in the same list (Pi applies the latest one), e.g. a
 * checkpoint planned before the restore, or the pass distilling a recall result that becomes a note.
 */
export function restoringDrafts(
  restores: PendingRestores,
  snapshots: Pick<SnapshotBuilder, "entries">,
  event: PiBoundary,
  ctx: ExtensionContext,
): SessionBoundaryDraft[] {
  const context = event.context.contextEntries as ProjectedLike[];
  try {
    const drafts = restores.drafts(context, ctx.sessionManager);
    const signal = runMayRecall(context)
      ? recallSignalDrafts(snapshots.entries(context), context, () => ctx.sessionManager.getBranch())
      : [];
    return [...drafts, ...signal];
  } catch {
    // The pass's drafts still land; a restore waits for the next boundary.
    return [];
  }
}
