// Reads a Pi session file for the replay. Pi's own loader skips a bad line without a word; here every
// line that cannot be used is reported with its number, and the rest is still replayed. The parsed
// entries are then handed to Pi's SessionManager, which migrates older formats (version 1 has no ids)
// and gives the branch Pi would resume: the path from the file's last entry back to the root.
import { readFile } from "node:fs/promises";
import { type FileEntry, type SessionEntry, type SessionHeader, SessionManager } from "@earendil-works/pi-coding-agent";
import type { ReadProblem } from "../../core/replay/replay-metrics.ts";

export interface SessionFile {
  path: string;
  header: SessionHeader;
  /** Format version as written in the file (1 when absent). */
  version: number;
  /** Lines in the file. */
  lines: number;
  /** The branch Pi would resume, root first, after migration. */
  branch: SessionEntry[];
  /** Line (1-based) of each entry of the branch. */
  lineOf: Map<SessionEntry, number>;
  problems: ReadProblem[];
}

export class SessionReadError extends Error {}

function describeJsonError(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Parses a session file's text. Malformed lines, a truncated last line, lines that are not entries and
 * entries whose parent is missing are reported by line number; the entries around them are kept (an
 * orphan is attached to the entry before it in the file, so the branch is not cut off).
 */
export function parseSessionText(text: string, path = "<memory>"): SessionFile {
  const problems: ReadProblem[] = [];
  const raw = text.split("\n");
  // A file that ends with a newline has an empty last element; it is not a line.
  const lineCount = raw.length > 0 && raw[raw.length - 1] === "" ? raw.length - 1 : raw.length;
  const endsClean = text.endsWith("\n");
  let header: SessionHeader | undefined;
  const entries: SessionEntry[] = [];
  const lineOf = new Map<SessionEntry, number>();
  for (let i = 0; i < lineCount; i++) {
    const line = (raw[i] as string).replace(/\r$/, "");
    const n = i + 1;
    if (line.trim() === "") continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      const last = i === lineCount - 1 && !endsClean;
      problems.push({
        line: n,
        message: last
          ? `line ${n} is truncated: the file ends in the middle of an entry (${describeJsonError(error)}); it was skipped`
          : `line ${n} is not valid JSON (${describeJsonError(error)}); it was skipped`,
      });
      continue;
    }
    if (
      !value ||
      typeof value !== "object" ||
      Array.isArray(value) ||
      typeof (value as { type?: unknown }).type !== "string"
    ) {
      problems.push({ line: n, message: `line ${n} is not a session entry (no "type"); it was skipped` });
      continue;
    }
    const entry = value as FileEntry;
    if (entry.type === "session") {
      if (header) problems.push({ line: n, message: `line ${n} is a second session header; it was skipped` });
      else header = entry as SessionHeader;
      continue;
    }
    entries.push(entry as SessionEntry);
    lineOf.set(entry as SessionEntry, n);
  }
  if (!header) {
    if (entries.length === 0) throw new SessionReadError(`${path}: no session entries found`);
    problems.push({ line: 1, message: "the file has no session header; assuming the current format" });
    header = { type: "session", version: 3, id: "replay", timestamp: new Date(0).toISOString(), cwd: "" };
  }
  const version = typeof header.version === "number" ? header.version : 1;
  if (version >= 2) relinkOrphans(entries, lineOf, problems);
  // Pi migrates in place (version 1 gets ids and parent links) and indexes the entries; the manager
  // keeps no file, so nothing is written back.
  const manager = SessionManager.inMemory(header.cwd || process.cwd(), undefined, [header, ...entries]);
  const branch = manager.getBranch();
  return { path, header, version, lines: lineCount, branch, lineOf, problems };
}

/** Entries whose id is missing are dropped; a parent that is missing (a skipped line) becomes the previous entry. */
function relinkOrphans(entries: SessionEntry[], lineOf: Map<SessionEntry, number>, problems: ReadProblem[]): void {
  const seen = new Set<string>();
  let previous: string | null = null;
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i] as SessionEntry & { id?: unknown; parentId?: unknown };
    const n = lineOf.get(entry) ?? 0;
    if (typeof entry.id !== "string" || entry.id === "") {
      problems.push({ line: n, message: `line ${n} has no entry id; it was skipped` });
      entries.splice(i, 1);
      i--;
      continue;
    }
    const parent = entry.parentId;
    if (parent !== null && (typeof parent !== "string" || !seen.has(parent))) {
      problems.push({
        line: n,
        message: `line ${n}: its parent entry ${JSON.stringify(parent)} is missing (a skipped line?); attached to the entry before it`,
      });
      entry.parentId = previous;
    }
    seen.add(entry.id);
    previous = entry.id;
  }
}

export async function readSessionFile(path: string): Promise<SessionFile> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    throw new SessionReadError(`${path}: cannot read (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
  }
  if (text.trim() === "") throw new SessionReadError(`${path}: the file is empty`);
  return parseSessionText(text, path);
}
