// Reads a Pi session file for the replay. Pi's own loader skips a bad line without a word; here every
// line that cannot be used is reported with its number, and the rest is still replayed. The parsed
// entries are then handed to Pi's SessionManager, which migrates older formats (version 1 has no ids)
// and gives the branch Pi would resume: the path from the file's last entry back to the root, which
// stops at an entry whose parent is missing, as in Pi. A file Pi would not open (no header on its first
// readable line) is still replayed, and the problems say so; a file with nothing to replay is an error.
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

/** The parser's message without its own "(line 1 column N)": the caller names the file's line. */
function describeJsonError(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.replace(/ at position \d+ \(line \d+ column (\d+)\)/, " at column $1");
}

/**
 * Splits a line holding several JSON objects written back to back (`{…}{…}`), or undefined when it is
 * not that. Pi skips such a line as malformed.
 */
export function splitObjects(line: string): unknown[] | undefined {
  const out: unknown[] = [];
  let depth = 0;
  let inString = false;
  let start = -1;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (inString) {
      if (c === "\\") i++;
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') inString = true;
    else if (c === "{") {
      if (depth === 0) start = i;
      depth++;
    } else if (c === "}") {
      depth--;
      if (depth < 0) return undefined;
      if (depth === 0) {
        try {
          out.push(JSON.parse(line.slice(start, i + 1)));
        } catch {
          return undefined;
        }
      }
    } else if (depth === 0 && c !== undefined && c.trim() !== "") return undefined;
  }
  return depth === 0 && out.length > 1 ? out : undefined;
}

/**
 * Parses a session file's text. Malformed lines, a truncated last line, lines that are not entries and
 * entries whose parent is missing are reported by line number. A line of several objects back to back
 * is replayed as separate lines. As in Pi, the branch ends at the file's last entry and starts after
 * the last missing parent on its way back; what that leaves out is reported.
 */
export function parseSessionText(text: string, path = "<memory>"): SessionFile {
  const problems: ReadProblem[] = [];
  const raw = text.split("\n");
  // A file that ends with a newline has an empty last element; it is not a line.
  const lineCount = raw.length > 0 && raw[raw.length - 1] === "" ? raw.length - 1 : raw.length;
  const endsClean = text.endsWith("\n");
  let header: SessionHeader | undefined;
  /** Pi opens a file only when the first line it can parse is the session header. */
  let firstReadable: "header" | "other" | undefined;
  let piRefuses: string | undefined;
  const entries: SessionEntry[] = [];
  const lineOf = new Map<SessionEntry, number>();
  for (let i = 0; i < lineCount; i++) {
    const line = (raw[i] as string).replace(/\r$/, "");
    const n = i + 1;
    if (line.trim() === "") continue;
    let values: unknown[];
    try {
      values = [JSON.parse(line)];
    } catch (error) {
      const split = splitObjects(line);
      const last = i === lineCount - 1 && !endsClean;
      if (!split) {
        problems.push({
          line: n,
          message: last
            ? `line ${n} is truncated: the file ends in the middle of an entry (${describeJsonError(error)}); it was skipped`
            : `line ${n} is not valid JSON (${describeJsonError(error)}); it was skipped`,
        });
        continue;
      }
      const hasHeader = split.some((v) => (v as { type?: unknown })?.type === "session");
      problems.push({
        line: n,
        message: `line ${n} holds ${split.length} JSON objects with no line break between them${hasHeader ? " (the session header among them)" : ""}; Pi skips such a line, here they are replayed as separate lines`,
      });
      if (hasHeader && !header && firstReadable === undefined) {
        piRefuses = `its session header is on line ${n} together with an entry, a line Pi cannot read`;
      }
      values = split;
    }
    for (const value of values) {
      const kind = readValue(value, n);
      if (kind === "header" || kind === "other") firstReadable ??= piRefuses === undefined ? kind : "other";
    }
  }

  /** One parsed object: the header, an entry, or a problem. */
  function readValue(value: unknown, n: number): "header" | "other" | "skipped" {
    if (
      !value ||
      typeof value !== "object" ||
      Array.isArray(value) ||
      typeof (value as { type?: unknown }).type !== "string"
    ) {
      problems.push({ line: n, message: `line ${n} is not a session entry (no "type"); it was skipped` });
      return "skipped";
    }
    const entry = value as FileEntry;
    if (entry.type === "session") {
      if (header) {
        problems.push({ line: n, message: `line ${n} is a second session header; it was skipped` });
        return "skipped";
      }
      header = entry as SessionHeader;
      return "header";
    }
    entries.push(entry as SessionEntry);
    lineOf.set(entry as SessionEntry, n);
    return "other";
  }

  if (!header) {
    if (entries.length === 0) throw new SessionReadError(`${path}: no session entries found`);
    // Without a header the entries say the format: version 1 entries have no ids.
    const v1 = entries.every((e) => typeof (e as { id?: unknown }).id !== "string");
    problems.push({
      line: 1,
      message: `the file has no session header, so Pi would not open it; replayed as format v${v1 ? 1 : 3} (${v1 ? "no entry has an id" : "its entries have ids"})`,
    });
    header = { type: "session", version: v1 ? 1 : 3, id: "replay", timestamp: new Date(0).toISOString(), cwd: "" };
  } else if (firstReadable !== "header") {
    problems.unshift({
      line: 1,
      message: `Pi would not open this file: ${piRefuses ?? "the first line it can read is not the session header"}; it is replayed as if the lines were whole`,
    });
  }
  const version = typeof header.version === "number" ? header.version : 1;
  if (version >= 2) dropWithoutId(entries, lineOf, problems);
  // Pi migrates in place (version 1 gets ids and parent links) and indexes the entries; the manager
  // keeps no file, so nothing is written back.
  const manager = SessionManager.inMemory(header.cwd || process.cwd(), undefined, [header, ...entries]);
  const branch = manager.getBranch();
  if (version >= 2) reportBreaks(entries, branch, lineOf, problems);
  if (!branch.some((e) => e.type === "message")) {
    const why = problems.length > 0 ? ` (${problems.length} problem lines; the first: ${problems[0]?.message})` : "";
    throw new SessionReadError(`${path}: nothing to replay: the branch Pi would resume holds no message${why}`);
  }
  return { path, header, version, lines: lineCount, branch, lineOf, problems };
}

/** Entries whose id is missing are dropped (Pi cannot link them). */
function dropWithoutId(entries: SessionEntry[], lineOf: Map<SessionEntry, number>, problems: ReadProblem[]): void {
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i] as SessionEntry & { id?: unknown };
    if (typeof entry.id === "string" && entry.id !== "") continue;
    const n = lineOf.get(entry) ?? 0;
    problems.push({ line: n, message: `line ${n} has no entry id; it was skipped` });
    entries.splice(i, 1);
    i--;
  }
}

/**
 * Entries whose parent is missing (a skipped line). Pi's branch walks back from the last entry and stops
 * there, so what comes before the break is not resumed, and not replayed either.
 */
function reportBreaks(
  entries: readonly SessionEntry[],
  branch: readonly SessionEntry[],
  lineOf: Map<SessionEntry, number>,
  problems: ReadProblem[],
): void {
  const ids = new Set(entries.map((e) => e.id));
  const onBranch = new Set(branch);
  for (const entry of entries) {
    const parent = (entry as { parentId?: unknown }).parentId;
    if (parent === null || (typeof parent === "string" && ids.has(parent))) continue;
    const n = lineOf.get(entry) ?? 0;
    const left = onBranch.has(entry) ? entries.filter((e) => !onBranch.has(e)).length : 0;
    problems.push({
      line: n,
      message: `line ${n}: its parent entry ${JSON.stringify(parent)} is missing (a skipped line?); ${
        onBranch.has(entry)
          ? `Pi resumes the branch from here, so ${left} entr${left === 1 ? "y" : "ies"} of the file ${left === 1 ? "is" : "are"} not replayed`
          : "it is not on the branch Pi would resume"
      }`,
    });
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
