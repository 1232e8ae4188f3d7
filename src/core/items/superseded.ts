// Which tool results of the run a later call made out of date: a read of a file that was changed or read
// the same way again, a command that ran again, or any other call repeated with the same arguments.
// One forward pass lists the run's calls, one backward pass over them keeps what comes later in maps, so
// the whole check is linear in the run.

import { oneLine } from "../shared/text.ts";
import type { RunSpan, SnapEntry, SnapToolCall } from "../shared/types.ts";

/** Tools whose calls change the file named in their arguments. */
const CHANGING_TOOLS = new Set(["edit", "write"]);

const PATH_LABEL_MAX = 80;

interface PlacedCall {
  call: SnapToolCall;
  /** Index of the assistant message that made the call, counted from the run's start. */
  turn: number;
}

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

/** The run's calls in order, each with the turn that made it, and every tool result of the run. */
function scanRun(entries: SnapEntry[], span: RunSpan): { calls: PlacedCall[]; results: SnapEntry[] } {
  const calls: PlacedCall[] = [];
  const results: SnapEntry[] = [];
  let turn = 0;
  for (let i = span.startIndex + 1; i < entries.length; i++) {
    const e = entries[i];
    if (!e) continue;
    if (e.role === "assistant") {
      turn++;
      for (const call of e.toolCalls ?? []) calls.push({ call, turn });
    } else if (e.role === "toolResult" && e.toolCallId !== undefined) {
      results.push(e);
    }
  }
  return { calls, results };
}

/**
 * Notes for the tool results of the run that a later call of the run made out of date, by result entry id.
 * Only the nearest later change of a file is named.
 */
export function supersededIn(entries: SnapEntry[], span: RunSpan): Map<string, string> {
  const { calls, results } = scanRun(entries, span);
  // What the calls after the current position did, filled while walking from the end.
  const laterChange = new Map<string, Change>();
  const laterReads = new Set<string>();
  const laterCommands = new Set<string>();
  const laterCalls = new Set<string>();
  const noteByCallId = new Map<string, string>();

  for (let i = calls.length - 1; i >= 0; i--) {
    const { call, turn } = calls[i]!;
    const args = call.args ?? {};
    let note: string | undefined;
    if (call.name === "read") {
      const path = callPath(args);
      if (path !== undefined) {
        const signature = readSignature(path, args);
        const change = laterChange.get(path);
        if (change !== undefined) note = changedNote(change, turn);
        else if (laterReads.has(signature)) note = "the same file was read again later";
        laterReads.add(signature);
      }
    } else if (call.name === "bash" && typeof args.command === "string") {
      const command = normalizeCommand(args.command);
      if (laterCommands.has(command)) note = "the same command ran again later";
      laterCommands.add(command);
    } else {
      const key = `${call.name}\u0000${stableJson(args)}`;
      if (laterCalls.has(key)) note = "the same call was made again later";
      laterCalls.add(key);
      const path = CHANGING_TOOLS.has(call.name) ? callPath(args) : undefined;
      if (path !== undefined) laterChange.set(path, { tool: call.name, path, turn });
    }
    // A call id seen twice keeps the note of its first (earliest) occurrence, which is the one its result
    // follows in practice; ids are unique in real sessions.
    if (note !== undefined) noteByCallId.set(call.id, note);
    else noteByCallId.delete(call.id);
  }

  const out = new Map<string, string>();
  for (const r of results) {
    const note = noteByCallId.get(r.toolCallId!);
    if (note !== undefined) out.set(r.id, note);
  }
  return out;
}
