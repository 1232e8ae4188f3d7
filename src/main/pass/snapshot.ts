// Turns Pi's projected entries into the plain SnapEntry shape the workers read. Unedited entries are
// cached by their raw entry object (Pi's entries are immutable), so a pass only walks what is new.
import {
  IMAGE_HEAD_CHARS,
  type ImageHead,
  RECORD_TYPE,
  type SnapEntry,
  type SnapRole,
  type SnapToolCall,
} from "../../core/shared/types.ts";
import { drain, PACE_STRIDE, paced, type Steps } from "../platform/pace.ts";

/** The parts of Pi's ProjectedSessionEntry this module reads. */
export interface ProjectedLike {
  // biome-ignore lint/suspicious/noExplicitAny: Pi's entry interfaces fit only an `any` index signature
  sourceEntry: { id: string; type: string; [key: string]: any };
  messages: readonly unknown[];
}

interface MessageLike {
  role?: string;
  content?: unknown;
  toolCallId?: string;
  toolName?: string;
  isError?: boolean;
  stopReason?: string;
  summary?: string;
  customType?: string;
  timestamp?: unknown;
}

interface Block {
  type?: string;
  text?: string;
  data?: string;
  mimeType?: string;
  id?: string;
  name?: string;
  arguments?: unknown;
}

export interface ContentStats {
  text: string;
  images: number;
  imageHeads: ImageHead[];
  toolCalls: SnapToolCall[];
}

/** Text blocks joined with newlines, image count and tool calls of a message content. */
export function readContent(content: unknown): ContentStats {
  if (typeof content === "string") return { text: content, images: 0, imageHeads: [], toolCalls: [] };
  const texts: string[] = [];
  const toolCalls: SnapToolCall[] = [];
  const imageHeads: ImageHead[] = [];
  let images = 0;
  if (Array.isArray(content)) {
    for (const raw of content as Block[]) {
      if (!raw || typeof raw !== "object") continue;
      if (raw.type === "text" && typeof raw.text === "string") texts.push(raw.text);
      else if (raw.type === "image") {
        images++;
        const data = typeof raw.data === "string" ? raw.data : "";
        imageHeads.push({ mimeType: String(raw.mimeType ?? ""), head: data.slice(0, IMAGE_HEAD_CHARS) });
      } else if (raw.type === "toolCall" && typeof raw.id === "string") {
        const args =
          raw.arguments && typeof raw.arguments === "object" ? (raw.arguments as Record<string, unknown>) : {};
        toolCalls.push({ id: raw.id, name: String(raw.name ?? ""), args });
      }
    }
  }
  return { text: texts.join("\n"), images, imageHeads, toolCalls };
}

function rawMessage(source: ProjectedLike["sourceEntry"]): MessageLike | undefined {
  if (source.type === "message") return source.message as MessageLike | undefined;
  if (source.type === "custom_message")
    return { role: "custom", content: source.content, customType: String(source.customType ?? "") };
  if (source.type === "compaction") return { role: "compactionSummary", summary: String(source.summary ?? "") };
  if (source.type === "branch_summary") return { role: "branchSummary", summary: String(source.summary ?? "") };
  return undefined;
}

const EDITABLE = new Set(["message", "custom_message"]);

function build(entry: ProjectedLike, first: MessageLike | undefined): SnapEntry {
  const source = entry.sourceEntry;
  const raw = rawMessage(source);
  // Summaries project to a system checkpoint plus the summary message; the summary is what counts.
  const visibleMessage = EDITABLE.has(source.type) ? first : entry.messages.length > 0 ? raw : undefined;
  const shown = visibleMessage ?? raw;
  const role = shown?.role as SnapRole | undefined;
  const visible = entry.messages.length > 0;
  const content = visible ? readContent(visibleMessage?.content) : readContent(undefined);
  const snap: SnapEntry = { id: source.id, type: source.type, visible, text: content.text, images: content.images };
  if (content.imageHeads.length) snap.imageHeads = content.imageHeads;
  if (role) snap.role = role;
  if (role === "assistant") {
    // Tool calls are read from the raw message: the guard never edits assistant content, and an
    // omitted assistant message still tells which calls its results answer.
    const calls = visible ? content.toolCalls : readContent(raw?.content).toolCalls;
    if (calls.length) snap.toolCalls = calls;
    if (raw?.stopReason) snap.stopReason = raw.stopReason;
  }
  if (role === "toolResult" && raw) {
    snap.toolCallId = raw.toolCallId;
    snap.toolName = raw.toolName;
    snap.isError = raw.isError === true;
    if (typeof raw.timestamp === "number" && Number.isFinite(raw.timestamp)) snap.timestamp = raw.timestamp;
  }
  if (raw?.summary !== undefined) snap.summary = raw.summary;
  if (raw?.customType) snap.customType = raw.customType;
  else if (source.type === "custom" && typeof source.customType === "string") {
    snap.customType = source.customType;
    if (source.data !== undefined)
      snap.data = source.customType === RECORD_TYPE ? slimRecord(source.data) : source.data;
  }
  const edited =
    raw !== undefined &&
    EDITABLE.has(source.type) &&
    (visibleMessage === undefined || visibleMessage.content !== raw.content);
  if (edited) {
    const rawContent = readContent(raw.content);
    snap.edited = true;
    snap.rawText = rawContent.text;
    snap.rawImages = rawContent.images;
    if (rawContent.imageHeads.length) snap.rawImageHeads = rawContent.imageHeads;
  }
  return snap;
}

/**
 * What the worker reads of a guard record (the memos of judged items): its phase and, per result, kind,
 * entry, reason and outcome. A record lists every item of its pass with labels and probabilities; sent whole, the
 * record of a large pass would be the largest message of the next one.
 */
function slimRecord(data: unknown): unknown {
  if (typeof data !== "object" || data === null) return data;
  const { phase, results } = data as { phase?: unknown; results?: unknown };
  if (!Array.isArray(results)) return { phase };
  const slim = results.map((r: unknown) => {
    if (typeof r !== "object" || r === null) return r;
    const { kind, entryId, reason, outcome } = r as {
      kind?: unknown;
      entryId?: unknown;
      reason?: unknown;
      outcome?: unknown;
    };
    return { kind, entryId, reason, outcome };
  });
  return { phase, results: slim };
}

/** The snapshot of an entry shown with other content than its raw message, and what it was built from. */
interface ShownSnap {
  content: unknown;
  role: string | undefined;
  count: number;
  snap: SnapEntry;
}

/**
 * Builds snapshots with a cache keyed by the raw entry: an entry whose projected message is the raw
 * message itself (no edit applies) maps to the same SnapEntry every time.
 *
 * Pi rebuilds the projection for every hook, but a session only grows at the end and edits change
 * what a position shows, not which entry sits there. So the builder keeps the last build's snapshots
 * by position. The positions the new projection shares with it are found by bisection (see
 * sharedPrefix) and keep their snapshots, except the targets of context_edit entries that came or went;
 * only those and the positions after the shared ones are looked at. The id → position index is updated
 * from the first position that changed, and each build logs which positions changed, so the worker
 * mirror skips the rest too. A pass then costs the main thread about what is new, plus one copy of an
 * array of references.
 */
export class SnapshotBuilder {
  #cache = new WeakMap<object, SnapEntry>();
  #shown = new WeakMap<object, ShownSnap>();
  /** The entry each snapshot was built from (a snapshot stands for one entry). */
  #sourceOf = new WeakMap<SnapEntry, object>();
  /** The last build's snapshots, by position. Never changed once returned: callers keep them. */
  #last: readonly SnapEntry[] = [];
  #index = new Map<string, number>();
  /** Builds completed, what each changed against the one before (a ring), and each array's build. */
  #built = 0;
  #log: BuildChanges[] = [];
  #buildOf = new WeakMap<readonly SnapEntry[], number>();

  entry(entry: ProjectedLike): SnapEntry {
    const source = entry.sourceEntry;
    const first = entry.messages[0] as MessageLike | undefined;
    // Only a message entry shows an object of its own: every other entry shows new objects (or nothing)
    // on every projection, and what it shows can depend on its position (Pi shows an older compaction
    // kept inside the newest one's range as nothing).
    const unedited = source.type === "message" && first !== undefined && first === source.message;
    if (unedited) {
      const hit = this.#cache.get(source);
      if (hit) return hit;
      const snap = build(entry, first);
      this.#cache.set(source, snap);
      this.#sourceOf.set(snap, source);
      return snap;
    }
    // Pi projects an edited message (and a custom message, a summary) as a new object on every call, but
    // its content is the edit's (or the entry's) own immutable content: while that is what is shown, the
    // snapshot is the same. build() reads nothing else of the projected entry.
    const shown = this.#shown.get(source);
    const count = entry.messages.length;
    if (shown && shown.content === first?.content && shown.role === first?.role && shown.count === count) {
      return shown.snap;
    }
    const snap = build(entry, first);
    this.#shown.set(source, { content: first?.content, role: first?.role, count, snap });
    this.#sourceOf.set(snap, source);
    return snap;
  }

  /** Snapshots of a whole projection, built straight through. */
  entries(entries: readonly ProjectedLike[]): SnapEntry[] {
    return drain(this.steps(entries));
  }

  /** The same, handing the event loop back between slices (a cold session of thousands of entries). */
  entriesPaced(entries: readonly ProjectedLike[]): Promise<SnapEntry[]> {
    return paced(this.steps(entries));
  }

  /**
   * Position of an entry id in the last projection built. A hint: the caller checks that the entry at
   * that position has the id (another projection may have been built since).
   */
  positionOf(id: string): number | undefined {
    return this.#index.get(id);
  }

  /**
   * Where the snapshot array `now` may hold other objects than `then`, both built here: every position
   * from `from` on, and the `changed` positions below it (ascending). Undefined when the builder cannot
   * tell (an array it did not build, or one built too many builds ago); the caller then compares all.
   */
  changesBetween(then: readonly SnapEntry[], now: readonly SnapEntry[]): BuildChanges | undefined {
    const a = this.#buildOf.get(then);
    const b = this.#buildOf.get(now);
    if (a === undefined || b === undefined || a > b || this.#built - a > CHANGE_LOG) return undefined;
    let from = Math.min(then.length, now.length);
    for (let k = a + 1; k <= b; k++) from = Math.min(from, this.#log[k % CHANGE_LOG]?.from ?? 0);
    const changed = new Set<number>();
    for (let k = a + 1; k <= b; k++) {
      for (const i of (this.#log[k % CHANGE_LOG] as BuildChanges).changed) if (i < from) changed.add(i);
    }
    return { from, changed: [...changed].sort((x, y) => x - y) };
  }

  *steps(entries: readonly ProjectedLike[]): Steps<SnapEntry[]> {
    // A paced build yields, and another build (a footer redraw) may run meanwhile: this one reads the
    // last build as it was when it started and replaces it as a whole at the end.
    const last = this.#last;
    const n = entries.length;
    const before = last.length;
    const shared = sharedPrefix(entries, last, this.#sourceOf);
    const recheck = this.#editedIn(entries, last, shared);
    let visits = 0;
    // Rechecked positions whose snapshot is another than last time, and that snapshot.
    const changed: number[] = [];
    const replaced: SnapEntry[] = [];
    for (const at of recheck) {
      if ((++visits & (PACE_STRIDE - 1)) === 0) yield;
      const snap = this.entry(entries[at] as ProjectedLike);
      if (snap === last[at]) continue;
      changed.push(at);
      replaced.push(snap);
    }
    const tail: SnapEntry[] = [];
    for (let i = shared; i < n; i++) {
      if ((++visits & (PACE_STRIDE - 1)) === 0) yield;
      tail.push(this.entry(entries[i] as ProjectedLike));
    }
    let snaps: readonly SnapEntry[];
    if (shared === before && tail.length === 0 && changed.length === 0) snaps = last;
    else {
      // One copy of the shared references, sized once (growing a copy of thousands of references is
      // what costs: a new backing store and, soon after, a scavenge of the projection Pi just built).
      const copy = (shared === before ? last : last.slice(0, shared)).concat(tail);
      changed.forEach((at, k) => {
        copy[at] = replaced[k] as SnapEntry;
      });
      snaps = copy;
    }
    let change: BuildChanges =
      changed.length > CHANGED_LIST ? { from: changed[0] as number, changed: [] } : { from: shared, changed };
    let moved = shared;
    if (this.#last !== last) {
      // Another build ended meanwhile: the index describes its projection, so it is built anew.
      this.#index.clear();
      moved = 0;
      change = { from: 0, changed: [] };
    } else {
      // Re-index from the first position that holds another entry than before.
      for (let i = moved; i < before; i++) {
        const id = (last[i] as SnapEntry).id;
        if (this.#index.get(id) === i) this.#index.delete(id);
      }
    }
    for (let i = moved; i < n; i++) this.#index.set((snaps[i] as SnapEntry).id, i);
    this.#last = snaps;
    this.#built++;
    this.#log[this.#built % CHANGE_LOG] = change;
    this.#buildOf.set(snaps, this.#built);
    return snaps as SnapEntry[];
  }

  /**
   * Positions below `shared` whose shown content may differ from last time: the targets of context_edit
   * entries that are new since then, or that were in the last projection and are not in this one (an
   * edit's draft that was not kept, another branch). Pi shows the latest edit of an entry, so nothing else
   * changes a position below `shared`. Ascending, read from the index of the last build.
   */
  #editedIn(entries: readonly ProjectedLike[], last: readonly SnapEntry[], shared: number): number[] {
    if (shared === 0) return [];
    const found = new Set<number>();
    const target = (id: unknown): void => {
      if (typeof id !== "string") return;
      const at = this.#index.get(id);
      if (at !== undefined && at < shared && last[at]?.id === id) found.add(at);
    };
    for (let i = shared; i < entries.length; i++) {
      const source = (entries[i] as ProjectedLike).sourceEntry;
      if (source.type === "context_edit") target(source.targetId);
    }
    for (let i = shared; i < last.length; i++) {
      const source = this.#sourceOf.get(last[i] as SnapEntry) as ProjectedLike["sourceEntry"] | undefined;
      if (source?.type === "context_edit") target(source.targetId);
    }
    return [...found].sort((x, y) => x - y);
  }
}

/**
 * How many leading positions hold the same entries as the last build. Pi's projection is the entry
 * path from the root (or the latest compaction) to the leaf, so when the first position and position j
 * hold the same entries as before, so does every position between: the first position that differs is
 * found by bisection instead of a walk.
 */
function sharedPrefix(
  entries: readonly ProjectedLike[],
  before: readonly SnapEntry[],
  sourceOf: WeakMap<SnapEntry, object>,
): number {
  const n = Math.min(entries.length, before.length);
  const same = (i: number) => (entries[i] as ProjectedLike).sourceEntry === sourceOf.get(before[i] as SnapEntry);
  if (n === 0 || !same(0)) return 0;
  let lo = 0; // same(lo)
  let hi = n; // first position known to differ, or n
  while (hi - lo > 1) {
    const mid = (lo + hi) >>> 1;
    if (same(mid)) lo = mid;
    else hi = mid;
  }
  return hi;
}

/** Builds remembered for `changesBetween`, and how many changed positions a build lists one by one. */
const CHANGE_LOG = 64;
const CHANGED_LIST = 4096;

/** Where one snapshot array may differ from another: every position from `from` on, and these below. */
export interface BuildChanges {
  from: number;
  changed: number[];
}
