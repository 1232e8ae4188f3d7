// `/guard restore` and `/guard pin`, on Pi's side. A command cannot append a context_edit (only boundary
// drafts can), so a restore is remembered at once as a custom entry (core/records/pins.ts); until the
// next boundary appends the edit that puts the original back, every request sent to the model is given
// the original through Pi's `context` event. The model's recalls are a signal too: an entry recalled
// twice in a run, or whole, comes back the same way at the next boundary. Everything is read from the
// branch, so a reload or /tree sees the same.
import type { ExtensionContext, SessionBoundaryDraft } from "@earendil-works/pi-coding-agent";
import { runMayRecall } from "../../core/recall/recall-gate.ts";
import { recallNote, recallSaysNeeded, recallsInRun } from "../../core/recall/recall-signal.ts";
import { itemFor, type OutItem, outOfContext } from "../../core/records/out-of-context.ts";
import { PIN_TYPE, type PinEntryLike, pinData, readPinData, readPins } from "../../core/records/pins.ts";
import { formatCount } from "../../core/shared/text.ts";
import type { RecordResult, SnapEntry } from "../../core/shared/types.ts";
import type { Judged } from "../pass/revalidate.ts";
import type { ProjectedLike, SnapshotBuilder } from "../pass/snapshot.ts";
import { contentSize } from "../pass/validate.ts";
import { traceSwallowed } from "../platform/swallowed.ts";
import { BranchIndex } from "./branch-index.ts";
import type { PiBoundary } from "./session-parts.ts";

type SessionView = ExtensionContext["sessionManager"];
type RawEntry = ReturnType<SessionView["getBranch"]>[number];
export type Message = ReturnType<SessionView["buildSessionProjection"]>["messages"][number];

/** What the commands need of the session: the snapshot of what the model sees, and a way to append. */
export interface RestoreHost {
  snapshot(ctx: ExtensionContext): SnapEntry[];
  appendEntry(customType: string, data: unknown): void;
  /** The drafts of a pass that has ended behind the agent and not landed yet (requests already show them). */
  ready?(ctx: ExtensionContext): Judged | undefined;
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
    const waiting = readyResult(host.ready?.(ctx), id);
    if (waiting && !pins.pinned.has(id)) {
      // Requests already show the draft; pinned, it is dropped from them at once and never lands.
      const ids = [waiting.entryId, ...(waiting.omitted ?? [])];
      host.appendEntry(PIN_TYPE, pinData("pin", ids));
      const what = waiting.kind === "exchange" ? `the exchange "${waiting.label}"` : waiting.label;
      return {
        ok: true,
        message:
          `context-guard: restored ${what}: a pass had judged it and its edit was about to land; that edit is ` +
          "cancelled, the model sees the original from its next request on, and it is never judged again",
      };
    }
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

/** The result of a ready pass that edits `id` (an exchange: any of its entries), if any. */
function readyResult(ready: Judged | undefined, id: string): RecordResult | undefined {
  if (!ready) return undefined;
  const targets = new Set(ready.edits.map((e) => e.targetId));
  return ready.record.results.find(
    (r) => r.outcome !== "kept" && (r.entryId === id || r.omitted?.includes(id) === true) && targets.has(r.entryId),
  );
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
  if (out) {
    return {
      ok: true,
      message: `context-guard: pinned ${id}; it stays as it is now (out of context): /guard restore ${out.entryId} puts it back`,
    };
  }
  const cancelled = readyResult(host.ready?.(ctx), id) ? "; the edit a pass had ready for it is cancelled" : "";
  return { ok: true, message: `context-guard: pinned ${id}; no pass judges it again${cancelled}` };
}

/**
 * What the user's restores and pins say on the active branch, kept on an incremental view of it so the
 * check before every request costs what is new: the restores still waiting for their boundary, and every
 * entry no pass may touch (pinned, restored, or a note of a restore).
 */
export class PendingRestores {
  readonly #index = new BranchIndex();
  /** Targets a boundary did not find in its context (compacted away): no later request shows them either. */
  readonly #unreachable = new Set<string>();
  /** The index's entries read so far, and the reset of the index they belong to. */
  #read = 0;
  #resets = -1;
  /** Restores whose edit has not been appended yet, in the order they were asked for. */
  readonly #pending = new Set<string>();
  readonly #pinned = new Set<string>();

  #sync(sm: SessionView): void {
    const index = this.#index.sync(sm);
    if (index.resets !== this.#resets) {
      // Another branch (/tree): read it from the start.
      this.#resets = index.resets;
      this.#read = 0;
      this.#pending.clear();
      this.#pinned.clear();
    }
    const entries = index.entries as unknown as PinEntryLike[];
    for (; this.#read < entries.length; this.#read++) {
      const e = entries[this.#read] as PinEntryLike;
      if (e.type === "context_edit") {
        // Pi shows the latest edit: any later edit of the target ends the wait.
        if (typeof e.targetId === "string") this.#pending.delete(e.targetId);
        continue;
      }
      const d = readPinData(e);
      if (!d) continue;
      for (const id of [...d.ids, ...(d.notes ?? [])]) this.#pinned.add(id);
      if (d.action === "restore") for (const id of d.ids) this.#pending.add(id);
    }
  }

  pending(sm: SessionView): string[] {
    this.#sync(sm);
    const pending = [...this.#pending];
    return this.#unreachable.size ? pending.filter((id) => !this.#unreachable.has(id)) : pending;
  }

  /** Whether an entry is on the active branch. */
  onBranch(sm: SessionView, id: string): boolean {
    return this.#index.sync(sm).position.has(id);
  }

  /** Every entry the user pinned or restored on the branch (and the notes of restores). */
  pinned(sm: SessionView): ReadonlySet<string> {
    this.#sync(sm);
    return this.#pinned;
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
  } catch (error) {
    // The pass's drafts still land; a restore waits for the next boundary.
    traceSwallowed("restore.drafts", error);
    return [];
  }
}
