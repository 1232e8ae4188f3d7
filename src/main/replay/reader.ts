// Reads a Pi session file for the replay. Pi's own loader skips a bad line without a word; here every
// line that cannot be used is reported with its number, and the rest is still replayed. The parsed
// entries are then handed to Pi's SessionManager, which migrates older formats (version 1 has no ids)
// and gives the branch Pi would resume: the path from the file's last entry back to the root, which
// stops at an entry whose parent is missing, as in Pi. A file Pi would not open (no header on its first
// readable line) is still replayed, and the problems say so; a file with nothing to replay is an error.
import { createReadStream } from "node:fs";
import { StringDecoder } from "node:string_decoder";
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
          // swallow-ok: A broken object means the line is not what the reader expects: the caller treats it as unreadable.
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
  const parser = new SessionParser();
  const raw = text.split("\n");
  // A file that ends with a newline has an empty last element; it is not a line.
  const lineCount = raw.length > 0 && raw[raw.length - 1] === "" ? raw.length - 1 : raw.length;
  const endsClean = text.endsWith("\n");
  for (let i = 0; i < lineCount; i++) parser.line(raw[i] as string, i === lineCount - 1 && !endsClean);
  return parser.finish(path);
}

/**
 * Reads a session line by line (see parseSessionText): the file's text is never held whole, only the
 * parsed entries, so a file of hundreds of megabytes reads in the memory of its entries.
 */
class SessionParser {
  #problems: ReadProblem[] = [];
  #header: SessionHeader | undefined;
  /** Pi opens a file only when the first line it can parse is the session header. */
  #firstReadable: "header" | "other" | undefined;
  #piRefuses: string | undefined;
  #entries: SessionEntry[] = [];
  #lineOf = new Map<SessionEntry, number>();
  /** Lines seen so far. */
  lines = 0;
  /** A line that is not blank was seen. */
  any = false;

  /** The next line of the file, without its newline; `unterminated`: the file ends inside it. */
  line(text: string, unterminated: boolean): void {
    this.lines++;
    const n = this.lines;
    const line = text.replace(/\r$/, "");
    if (line.trim() === "") return;
    this.any = true;
    const problems = this.#problems;
    let values: unknown[];
    try {
      values = [JSON.parse(line)];
    } catch (error) {
      const split = splitObjects(line);
      if (!split) {
        problems.push({
          line: n,
          message: unterminated
            ? `line ${n} is truncated: the file ends in the middle of an entry (${describeJsonError(error)}); it was skipped`
            : `line ${n} is not valid JSON (${describeJsonError(error)}); it was skipped`,
        });
        return;
      }
      const hasHeader = split.some((v) => (v as { type?: unknown })?.type === "session");
      problems.push({
        line: n,
        message: `line ${n} holds ${split.length} JSON objects with no line break between them${hasHeader ? " (the session header among them)" : ""}; Pi skips such a line, here they are replayed as separate lines`,
      });
      if (hasHeader && !this.#header && this.#firstReadable === undefined) {
        this.#piRefuses = `its session header is on line ${n} together with an entry, a line Pi cannot read`;
      }
      values = split;
    }
    for (const value of values) {
      const kind = this.#readValue(value, n);
      if (kind === "header" || kind === "other") this.#firstReadable ??= this.#piRefuses === undefined ? kind : "other";
    }
  }

  /** One parsed object: the header, an entry, or a problem. */
  #readValue(value: unknown, n: number): "header" | "other" | "skipped" {
    if (
      !value ||
      typeof value !== "object" ||
      Array.isArray(value) ||
      typeof (value as { type?: unknown }).type !== "string"
    ) {
      this.#problems.push({ line: n, message: `line ${n} is not a session entry (no "type"); it was skipped` });
      return "skipped";
    }
    const entry = value as FileEntry;
    if (entry.type === "session") {
      if (this.#header) {
        this.#problems.push({ line: n, message: `line ${n} is a second session header; it was skipped` });
        return "skipped";
      }
      this.#header = entry as SessionHeader;
      return "header";
    }
    this.#entries.push(entry as SessionEntry);
    this.#lineOf.set(entry as SessionEntry, n);
    return "other";
  }

  finish(path: string): SessionFile {
    const problems = this.#problems;
    const entries = this.#entries;
    const lineOf = this.#lineOf;
    const lineCount = this.lines;
    return finishSession(
      path,
      problems,
      entries,
      lineOf,
      lineCount,
      this.#header,
      this.#firstReadable,
      this.#piRefuses,
    );
  }
}

function finishSession(
  path: string,
  problems: ReadProblem[],
  entries: SessionEntry[],
  lineOf: Map<SessionEntry, number>,
  lineCount: number,
  found: SessionHeader | undefined,
  firstReadable: "header" | "other" | undefined,
  piRefuses: string | undefined,
): SessionFile {
  let header = found;
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

/** The lines of a file as it streams in, each without its newline; the last may lack one (`unterminated`). */
export async function* fileLines(path: string): AsyncGenerator<{ text: string; unterminated: boolean }> {
  const decoder = new StringDecoder("utf8");
  // The start of a line that spans chunks, kept as pieces so a long line is joined once.
  let pending: string[] = [];
  for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20 })) {
    const text = decoder.write(chunk as Buffer);
    let from = 0;
    for (let at = text.indexOf("\n"); at !== -1; at = text.indexOf("\n", from)) {
      pending.push(text.slice(from, at));
      yield { text: pending.join(""), unterminated: false };
      pending = [];
      from = at + 1;
    }
    if (from < text.length) pending.push(text.slice(from));
  }
  const rest = pending.join("") + decoder.end();
  if (rest !== "") yield { text: rest, unterminated: true };
}

export async function readSessionFile(path: string): Promise<SessionFile> {
  const parser = new SessionParser();
  try {
    for await (const line of fileLines(path)) parser.line(line.text, line.unterminated);
  } catch (error) {
    throw new SessionReadError(`${path}: cannot read (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
  }
  if (!parser.any) throw new SessionReadError(`${path}: the file is empty`);
  return parser.finish(path);
}
