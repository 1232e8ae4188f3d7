// Which tool results of the run a later call made out of date: a read of a file that was changed or read
// the same way again, a command that ran again, or any other call repeated with the same arguments.
// Each call settles, as it comes, what it says about the earlier ones, so the check is linear in the run
// and the pass worker extends it entry by entry (core/distill/plan-index.ts).

import { oneLine } from "../shared/text.ts";
import type { RunSpan, SnapEntry, SnapToolCall } from "../shared/types.ts";

/** Tools whose calls change the file named in their arguments. */
const CHANGING_TOOLS = new Set(["edit", "write"]);

const PATH_LABEL_MAX = 80;

interface Change {
  tool: string;
  path: string;
  turn: number;
}

function text(value: unknown): string | undefined {
  return typeof value === "string" && value.trim() !== "" ? value : undefined;
}

/** `./src/a.ts` and `src/./a.ts` → `src/a.ts`. */
export function normalizePath(path: string): string {
  let p = path.trim().replace(/\/(?:\.\/)+/g, "/");
  while (p.startsWith("./")) p = p.slice(2).replace(/^\/+/, "");
  return p;
}

/** The file a call names (`path` or `file_path`), normalized. */
export function callPath(args: Record<string, unknown>): string | undefined {
  const path = text(args.path) ?? text(args.file_path);
  return path === undefined ? undefined : normalizePath(path);
}

/** Whitespace runs become one space and a trailing `2>&1` is dropped. */
export function normalizeCommand(command: string): string {
  return command
    .replace(/\s+/g, " ")
    .trim()
    .replace(/\s*2>&1$/, "")
    .trim();
}

/** Copy of a JSON-like value with object keys sorted, so equal arguments serialize the same way. */
function sortKeys(value: unknown, seen: Set<object>): unknown {
  if (typeof value !== "object" || value === null) return value;
  if (seen.has(value)) return "[cycle]";
  seen.add(value);
  let out: unknown;
  if (Array.isArray(value)) {
    out = value.map((v) => sortKeys(v, seen));
  } else {
    const obj = value as Record<string, unknown>;
    const sorted: Record<string, unknown> = {};
    for (const key of Object.keys(obj).sort()) sorted[key] = sortKeys(obj[key], seen);
    out = sorted;
  }
  seen.delete(value);
  return out;
}

/** JSON with sorted object keys; never throws. */
export function stableJson(value: unknown): string {
  try {
    return JSON.stringify(sortKeys(value, new Set())) ?? "null";
  } catch {
    // swallow-ok: a value JSON cannot hold gets a marker of its own.
    return '"[unserializable]"';
  }
}

function readSignature(path: string, args: Record<string, unknown>): string {
  return stableJson([path, args.offset ?? null, args.limit ?? null]);
}

function turnsLater(turns: number): string {
  if (turns <= 0) return "in the same turn";
  return `${turns} ${turns === 1 ? "turn" : "turns"} later`;
}

function changedNote(change: Change, readTurn: number): string {
  const where = `${change.tool} ${oneLine(change.path, PATH_LABEL_MAX)}`;
  return `this file was changed after this read (${where}, ${turnsLater(change.turn - readTurn)})`;
}

/**
 * Notes for the tool results of the run that a later call of the run made out of date, by result entry id.
 * Only the nearest later change of a file is named.
 */
export function supersededIn(entries: SnapEntry[], span: RunSpan): Map<string, string> {
  const fold = new SupersededFold();
  for (let i = span.startIndex + 1; i < entries.length; i++) fold.add(entries[i] as SnapEntry);
  return fold.notes;
}

/** A call of the run, with what later calls said about it so far. */
interface Pending {
  turn: number;
  /** The nearest later change of the file a read shows. */
  changed?: string;
  /** A later call repeated it (read the same way, ran the same command, made the same call). */
  repeated?: string;
}

const READ_AGAIN = "the same file was read again later";
const RAN_AGAIN = "the same command ran again later";
const MADE_AGAIN = "the same call was made again later";

/**
 * supersededIn entry by entry, in run order: each call settles what it says about the earlier ones (a
 * change of their file, a repeat), and `notes` follows. A call id seen twice takes the note of its first
 * (earliest) occurrence, which is the one its result follows in practice; ids are unique in real sessions.
 */
export class SupersededFold {
  /** The answer for the entries added so far, by result entry id (live). */
  readonly notes = new Map<string, string>();
  #turn = 0;
  /** The earliest call with each id. */
  readonly #first = new Map<string, Pending>();
  /** The results of each call id. */
  readonly #results = new Map<string, string[]>();
  /** Reads no later call has changed the file of yet, by path. */
  readonly #unchanged = new Map<string, Pending[]>();
  /** Calls no later call has repeated yet, by what a repeat would share. */
  readonly #unrepeated = new Map<string, Pending[]>();
  /** The call id behind each pending call, to update its results' notes. */
  readonly #idOf = new Map<Pending, string>();

  add(e: SnapEntry): void {
    if (e.role === "assistant") {
      this.#turn++;
      for (const call of e.toolCalls ?? []) this.#call(call);
    } else if (e.role === "toolResult" && e.toolCallId !== undefined) {
      const list = this.#results.get(e.toolCallId);
      if (list) list.push(e.id);
      else this.#results.set(e.toolCallId, [e.id]);
      this.#show(e.toolCallId);
    }
  }

  #call(call: SnapToolCall): void {
    const args = call.args ?? {};
    const mine: Pending = { turn: this.#turn };
    if (!this.#first.has(call.id)) {
      this.#first.set(call.id, mine);
      this.#idOf.set(mine, call.id);
    }
    if (call.name === "read") {
      const path = callPath(args);
      if (path !== undefined) {
        this.#repeat(`r\u0000${readSignature(path, args)}`, READ_AGAIN, mine);
        const reads = this.#unchanged.get(path);
        if (reads) reads.push(mine);
        else this.#unchanged.set(path, [mine]);
      }
    } else if (call.name === "bash" && typeof args.command === "string") {
      this.#repeat(`b\u0000${normalizeCommand(args.command)}`, RAN_AGAIN, mine);
    } else {
      this.#repeat(`c\u0000${call.name}\u0000${stableJson(args)}`, MADE_AGAIN, mine);
      const path = CHANGING_TOOLS.has(call.name) ? callPath(args) : undefined;
      if (path !== undefined) {
        const change: Change = { tool: call.name, path, turn: this.#turn };
        for (const read of this.#unchanged.get(path) ?? []) {
          read.changed = changedNote(change, read.turn);
          this.#settle(read);
        }
        this.#unchanged.delete(path);
      }
    }
  }

  /** Marks the earlier calls sharing `key` as repeated, and waits for a repeat of this one. */
  #repeat(key: string, note: string, mine: Pending): void {
    for (const earlier of this.#unrepeated.get(key) ?? []) {
      earlier.repeated = note;
      this.#settle(earlier);
    }
    this.#unrepeated.set(key, [mine]);
  }

  #settle(p: Pending): void {
    const id = this.#idOf.get(p);
    if (id !== undefined) this.#show(id);
  }

  /** Puts the note of the call id's first occurrence on its results. */
  #show(callId: string): void {
    const p = this.#first.get(callId);
    const note = p?.changed ?? p?.repeated;
    for (const id of this.#results.get(callId) ?? []) {
      if (note === undefined) this.notes.delete(id);
      else this.notes.set(id, note);
    }
  }
}
