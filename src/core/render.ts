// The text that replaces a distilled output: a header saying what happened and how to get the full
// output back, the kept chunks copied verbatim, and one line standing for each run of removed chunks.

import { formatCount } from "./text.ts";
import { type Chunk, GUARD_MARKER } from "./types.ts";

export { GUARD_MARKER };

/** Most file names listed in one omission line. */
const MAX_LISTED_FILES = 5;

export interface RenderInput {
  entryId: string;
  label: string;
  /** The original output. */
  text: string;
  /** All chunks of `text`, in order. */
  chunks: Chunk[];
  /** Numbers of the chunks to keep. */
  keep: Set<number>;
  grep: boolean;
  /** For `read` results: the file line number of the first output line. */
  lineOffset?: number;
}

/** `36100` → `36.1k`. */
export function formatChars(n: number): string {
  return formatCount(n);
}

function recallHint(entryId: string): string {
  return `Full output: recall(${JSON.stringify({ entryId })}).`;
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

function lineSpan(first: number, last: number): string {
  return first === last ? `line ${first}` : `lines ${first}–${last}`;
}

function fileList(files: string[]): string {
  const shown = files.slice(0, MAX_LISTED_FILES).join(", ");
  const rest = files.length - MAX_LISTED_FILES;
  return rest > 0 ? `${shown} and ${rest} more` : shown;
}

function chunkLines(c: Chunk): number {
  return c.lastLine - c.firstLine + 1;
}

/** The line standing for removed chunks `run` (consecutive, non-empty). */
function omissionLine(run: Chunk[], grep: boolean, lineOffset: number | undefined): string {
  const first = run[0]!.firstLine;
  const last = run[run.length - 1]!.lastLine;
  const files = new Set<string>();
  for (const c of run) for (const f of c.files ?? []) files.add(f);
  let where: string;
  if (grep && files.size > 0) where = `matches in ${fileList([...files])}`;
  else if (lineOffset !== undefined) where = `${lineSpan(lineOffset + first - 1, lineOffset + last - 1)} of the file`;
  else where = `output ${lineSpan(first, last)}`;
  return `[… ${plural(last - first + 1, "line")} omitted: ${where} …]`;
}

/** Drop the final "\n" only, so a kept CRLF line keeps its "\r" and the join restores the newline. */
function withoutFinalNewline(text: string): string {
  return text.endsWith("\n") ? text.slice(0, -1) : text;
}

/** Replacement for an output of which some chunks are kept. */
export function renderReplacement(input: RenderInput): string {
  const { chunks, keep } = input;
  const body: string[] = [];
  let keptLines = 0;
  let keptChars = 0;
  let removed: Chunk[] = [];
  for (const c of chunks) {
    if (!keep.has(c.n)) {
      removed.push(c);
      continue;
    }
    if (removed.length > 0) body.push(omissionLine(removed, input.grep, input.lineOffset));
    removed = [];
    body.push(withoutFinalNewline(c.text));
    keptLines += chunkLines(c);
    keptChars += c.text.length;
  }
  if (removed.length > 0) body.push(omissionLine(removed, input.grep, input.lineOffset));
  const totalLines = chunks.length > 0 ? chunks[chunks.length - 1]!.lastLine : 0;
  const header =
    `${GUARD_MARKER} Distilled the output of ${input.label}: kept ${keptLines} of ${plural(totalLines, "line")} ` +
    `(${formatChars(keptChars)} of ${formatChars(input.text.length)} chars); the rest was judged not needed ` +
    `for the answer. ${recallHint(input.entryId)}`;
  return [header, ...body].join("\n");
}

/** One-line replacement for an output of which nothing is kept. */
export function renderRemoved(input: { entryId: string; label: string; lines: number; chars: number }): string {
  const size = `${formatChars(input.chars)} char${input.chars === 1 ? "" : "s"}`;
  return (
    `${GUARD_MARKER} Removed the output of ${input.label}: ${plural(input.lines, "line")} (${size}) judged not ` +
    `needed for the answer. ${recallHint(input.entryId)}`
  );
}
