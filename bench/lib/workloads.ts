// Workloads for the hook benchmarks: generated heavy sessions (generate.ts), runs appended to them,
// single huge outputs at the end of a small run, and a session model that applies the pass's edits the
// way Pi does, so a second pass sees what it would see in a real session.
import type { ContextEditDraft, CustomDraft } from "../../src/core/shared/types.ts";
import type { ProjectedLike } from "../../src/main/pass/snapshot.ts";
import { generateOutput, generateSession, type SessionEntryLike, toProjection } from "../../test/kit/generate.ts";

export type OutputKind = "grep" | "log";

interface Replacement {
  content: Array<{ type: "text"; text: string }>;
}

/**
 * A linear, uncompacted Pi session branch. `project()` does what Pi 1.6's buildSessionProjection does for
 * it (checked against node_modules/@earendil-works/pi-coding-agent/dist/core/session-manager.js):
 * message entries project to `[entry.message]` (the same object), or, under a context_edit, to a new
 * message object `{...message, content: replacement.content}` on every call; custom_message entries to
 * a new `custom` message on every call; every other entry (context_edit and custom ones included) to `[]`.
 */
export class SessionSim {
  readonly entries: SessionEntryLike[];
  readonly #edits = new Map<string, Replacement | null>();
  #seq = 0;

  constructor(entries: readonly SessionEntryLike[]) {
    this.entries = [...entries];
  }

  get lastId(): string | null {
    return this.entries.at(-1)?.id ?? null;
  }

  append(entries: readonly SessionEntryLike[]): void {
    this.entries.push(...entries);
  }

  /** What Pi appends when the hook returns: the context_edit entries and the guard's record. */
  applyPass(edits: readonly ContextEditDraft[], record?: CustomDraft): void {
    const at = new Date(Date.UTC(2026, 5, 1) + this.#seq * 1000).toISOString();
    for (const edit of edits) {
      this.entries.push({
        type: "context_edit",
        id: `edit-${this.#seq++}`,
        parentId: this.lastId,
        timestamp: at,
        targetId: edit.targetId,
        replacement: edit.replacement,
      });
      this.#edits.set(edit.targetId, edit.replacement);
    }
    if (record) {
      this.entries.push({
        type: "custom",
        id: `record-${this.#seq++}`,
        parentId: this.lastId,
        timestamp: at,
        customType: record.customType,
        data: record.data,
      });
    }
  }

  get editCount(): number {
    return this.#edits.size;
  }

  project(): ProjectedLike[] {
    return toProjection(this.entries).map((projected) => {
      const { sourceEntry, messages } = projected;
      if (messages.length === 0 || !this.#edits.has(sourceEntry.id)) return projected as ProjectedLike;
      const replacement = this.#edits.get(sourceEntry.id);
      return {
        sourceEntry: sourceEntry as ProjectedLike["sourceEntry"],
        messages: replacement ? messages.map((m) => ({ ...(m as object), content: replacement.content })) : [],
      };
    });
  }
}

/** Ids that cannot collide with the generator's 8-hex ids or with another appended run. */
function remapIds(entries: SessionEntryLike[], tag: string, parentId: string | null): SessionEntryLike[] {
  const out = structuredClone(entries);
  const ids = new Map<string, string>();
  for (const e of out) ids.set(e.id, `${tag}-${e.id}`);
  const call = (id: unknown) => (typeof id === "string" ? `${tag}-${id}` : id);
  out.forEach((e, i) => {
    e.id = ids.get(e.id) as string;
    e.parentId = i === 0 ? parentId : (out[i - 1] as SessionEntryLike).id;
    const m = e.message as { role?: string; content?: unknown; toolCallId?: unknown } | undefined;
    if (e.type !== "message" || !m) return;
    if (m.role === "toolResult") m.toolCallId = call(m.toolCallId);
    if (m.role === "assistant" && Array.isArray(m.content))
      for (const b of m.content as Array<{ type?: string; id?: unknown }>) if (b.type === "toolCall") b.id = call(b.id);
  });
  return out;
}

/**
 * `n` new entries for the end of a session: a generated session of `n` entries (a few setup entries, maybe an
 * early exchange, and a final run with a prompt, tool calls and results, and an answer), re-identified and
 * chained after `parentId`.
 */
export function appendedRun(n: number, seed: number, tag: string, parentId: string | null): SessionEntryLike[] {
  return remapIds(generateSession({ entries: n, seed }), tag, parentId);
}

/** A run that ran one command and got `text` back: prompt, tool call, the result, the answer. */
export function outputRun(text: string, kind: OutputKind, tag: string, parentId: string | null): SessionEntryLike[] {
  const ts = Date.UTC(2026, 4, 1, 12);
  const iso = (k: number) => new Date(ts + k * 1000).toISOString();
  const callId = `${tag}-call`;
  const command = kind === "grep" ? 'rg -n -C1 "parseConfig|loadSettings|createSession"' : "npm test 2>&1";
  const entries: SessionEntryLike[] = [
    {
      type: "message",
      id: `${tag}-prompt`,
      parentId,
      timestamp: iso(0),
      message: {
        role: "user",
        content: [{ type: "text", text: `Run \`${command}\` and tell me what fails.` }],
        timestamp: ts,
      },
    },
    {
      type: "message",
      id: `${tag}-call`,
      parentId: `${tag}-prompt`,
      timestamp: iso(1),
      message: {
        role: "assistant",
        content: [{ type: "toolCall", id: callId, name: "bash", arguments: { command } }],
        stopReason: "toolUse",
        timestamp: ts + 1000,
      },
    },
    {
      type: "message",
      id: `${tag}-result`,
      parentId: `${tag}-call`,
      timestamp: iso(2),
      message: {
        role: "toolResult",
        toolCallId: callId,
        toolName: "bash",
        content: [{ type: "text", text }],
        isError: false,
        timestamp: ts + 2000,
      },
    },
    {
      type: "message",
      id: `${tag}-answer`,
      parentId: `${tag}-result`,
      timestamp: iso(3),
      message: {
        role: "assistant",
        content: [
          { type: "text", text: "Two tests fail: the config loader throws on an empty file; see the error above." },
        ],
        stopReason: "stop",
        timestamp: ts + 3000,
      },
    },
  ];
  return entries;
}

const sessionCache = new Map<number, SessionEntryLike[]>();

/** The generated session of `n` entries (seed 7), generated once per process. */
export function baseSession(n: number): SessionEntryLike[] {
  let s = sessionCache.get(n);
  if (!s) {
    s = generateSession({ entries: n, seed: 7 });
    sessionCache.set(n, s);
  }
  return s;
}

const outputCache = new Map<string, string>();

/**
 * Drops the cached sessions and outputs. A Pi process holds the one session it runs, not every workload
 * of the suite: the heap (and with it the garbage collector's pauses) should be the workload's, so each
 * scenario and each session size starts with only what it uses. Both caches regenerate deterministically.
 */
export function releaseWorkloads(): void {
  sessionCache.clear();
  outputCache.clear();
}

export function output(kind: OutputKind, bytes: number): string {
  const key = `${kind}:${bytes}`;
  let s = outputCache.get(key);
  if (s === undefined) {
    s = generateOutput(kind, bytes, 11);
    outputCache.set(key, s);
  }
  return s;
}

/** `50 KB`, `5 MB`, … */
export function sizeLabel(bytes: number): string {
  return bytes >= 1024 * 1024 ? `${Math.round(bytes / (1024 * 1024))} MB` : `${Math.round(bytes / 1024)} KB`;
}

/** Characters of everything the pass sends to the worker (texts and raw texts), for the report. */
export function sentChars(fresh: ReadonlyArray<{ text: string; rawText?: string }>): number {
  let n = 0;
  for (const e of fresh) n += e.text.length + (e.rawText?.length ?? 0);
  return n;
}
