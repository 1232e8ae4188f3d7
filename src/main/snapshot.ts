// Turns Pi's projected entries into the plain SnapEntry shape the workers read. Unedited entries are
// cached by their raw entry object (Pi's entries are immutable), so a pass only walks what is new.
import {
  IMAGE_HEAD_CHARS,
  type ImageHead,
  RECORD_TYPE,
  type SnapEntry,
  type SnapRole,
  type SnapToolCall,
} from "../core/types.ts";
import { drain, PACE_STRIDE, paced, type Steps } from "./pace.ts";

/** The parts of Pi's ProjectedSessionEntry this module reads. */
export interface ProjectedLike {
  sourceEntry: { id: string; type: string; [key: string]: unknown };
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
 * entry and reason. A record lists every item of its pass with labels and probabilities; sent whole, the
 * record of a large pass would be the largest message of the next one.
 */
function slimRecord(data: unknown): unknown {
  if (typeof data !== "object" || data === null) return data;
  const { phase, results } = data as { phase?: unknown; results?: unknown };
  if (!Array.isArray(results)) return { phase };
  const slim = results.map((r: unknown) => {
    if (typeof r !== "object" || r === null) return r;
    const { kind, entryId, reason } = r as { kind?: unknown; entryId?: unknown; reason?: unknown };
    return { kind, entryId, reason };
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
 * what a position shows, not which entry sits there. So the builder also remembers the last projection
 * by position: an entry at the same position with the same source, message count, content and role
 * reuses its snapshot with a few reference compares, and the id → position index is only updated from
 * the first position that changed. A pass then costs the main thread little more than what is new.
 */
export class SnapshotBuilder {
  #cache = new WeakMap<object, SnapEntry>();
  #shown = new WeakMap<object, ShownSnap>();
  /** The last projection, by position; replaced as a whole when a build ends. */
  #last: Positions = { source: [], first: [], count: [], snaps: [] };
  #index = new Map<string, number>();

  entry(entry: ProjectedLike): SnapEntry {
    const source = entry.sourceEntry;
    const first = entry.messages[0] as MessageLike | undefined;
    const unedited =
      source.type === "message" ? first !== undefined && first === source.message : source.type !== "custom_message";
    if (unedited) {
      const hit = this.#cache.get(source);
      if (hit) return hit;
      const snap = build(entry, first);
      this.#cache.set(source, snap);
      return snap;
    }
    // Pi projects an edited message (and a custom message) as a new object on every call, but its content
    // is the edit's (or the entry's) own immutable content: while that is what is shown, the snapshot is
    // the same. build() reads nothing else of the projected entry.
    const shown = this.#shown.get(source);
    const count = entry.messages.length;
    if (shown && shown.content === first?.content && shown.role === first?.role && shown.count === count) {
      return shown.snap;
    }
    const snap = build(entry, first);
    this.#shown.set(source, { content: first?.content, role: first?.role, count, snap });
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

  *steps(entries: readonly ProjectedLike[]): Steps<SnapEntry[]> {
    // A paced build yields, and another build (a footer redraw) may run meanwhile: this one reads the
    // last projection as it was when it started and replaces it as a whole at the end.
    const last = this.#last;
    const n = entries.length;
    const before = last.source.length;
    const next: Positions = { source: new Array(n), first: new Array(n), count: new Array(n), snaps: new Array(n) };
    let moved = Math.min(n, before);
    for (let i = 0; i < n; i++) {
      if ((i & (PACE_STRIDE - 1)) === 0 && i > 0) yield;
      const e = entries[i] as ProjectedLike;
      const source = e.sourceEntry;
      const messages = e.messages;
      const first = messages[0] as MessageLike | undefined;
      const count = messages.length;
      next.source[i] = source;
      next.first[i] = first;
      next.count[i] = count;
      if (i < before && last.source[i] === source && last.count[i] === count) {
        // An unedited message is the very same object every projection: a reference compare, without
        // reading the message (Pi's messages lie scattered over the heap; reading each one is most of
        // the walk's cost). An edited one is a new object each time, showing the edit's own content.
        const was = last.first[i];
        if (was === first || (was !== undefined && was.content === first?.content && was.role === first?.role)) {
          next.snaps[i] = last.snaps[i] as SnapEntry;
          continue;
        }
      }
      if (i < moved && last.source[i] !== source) moved = i;
      next.snaps[i] = this.entry(e);
    }
    if (this.#last !== last) {
      // Another build ended meanwhile: the index describes its projection, so it is built anew.
      this.#index.clear();
      moved = 0;
    } else {
      // Re-index from the first position that holds another entry than before.
      for (let i = moved; i < before; i++) {
        const id = (last.snaps[i] as SnapEntry).id;
        if (this.#index.get(id) === i) this.#index.delete(id);
      }
    }
    for (let i = moved; i < n; i++) this.#index.set((next.snaps[i] as SnapEntry).id, i);
    this.#last = next;
    return next.snaps;
  }
}

/** A projection by position: what each snapshot was built from. */
interface Positions {
  source: object[];
  /** The first projected message at the position. */
  first: Array<MessageLike | undefined>;
  count: number[];
  snaps: SnapEntry[];
}
