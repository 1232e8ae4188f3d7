// The text that replaces a distilled output: a header saying what happened and how to get the full
// output back, the kept chunks copied verbatim, and one line standing for each run of removed chunks.

import { blankCredentials } from "../shared/credentials.ts";
import { factTokens, keyFacts, keyFactsNote } from "../shared/key-facts.ts";
import { formatCount, sizeChange } from "../shared/text.ts";
import { type Chunk, GUARD_MARKER } from "../shared/types.ts";

export { GUARD_MARKER };

/** Most file names listed in one omission line. */
const MAX_LISTED_FILES = 5;
/** Most characters of key facts on a removed output's stub, and on one omission line of a distilled one. */
export const STUB_FACT_CHARS = 300;
export const OMISSION_FACT_CHARS = 100;

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
  /** A read whose file changed on disk since: the header asks for a new read. */
  changedOnDisk?: boolean;
}

/** What a replacement of a read whose file changed on disk since says instead of the usual reason. */
const READ_AGAIN = "The file changed on disk after this read: read it again for its current content.";

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

/** Whether chunk `i` ends inside a line that chunk `i + 1` continues (a line too long for one chunk). */
function endsInside(chunks: Chunk[], i: number): boolean {
  return i < chunks.length - 1 && !chunks[i]!.text.endsWith("\n");
}

function partList(lines: number[]): string {
  return lines.length === 1 ? `line ${lines[0]}` : `lines ${lines[0]} and ${lines[1]}`;
}

/** What the omission lines of one replacement share: which facts are in view or listed already. */
interface FactScope {
  kept: Set<string>;
  listed: Set<string>;
  /** The chunk's text with the whole output's credentials blanked (a PEM body cut across chunks too). */
  text(c: Chunk): string;
}

/**
 * `; held a, b` for removed chunks `from`..`to`: facts that are not in the kept chunks, on an earlier
 * line, or in what the line says already (`shown`: a grep run's files).
 */
function omittedFacts(
  chunks: Chunk[],
  from: number,
  to: number,
  input: RenderInput,
  scope: FactScope,
  shown: string,
): string {
  if (input.changedOnDisk) return "";
  const facts = keyFacts(chunks.slice(from, to + 1).map(scope.text), {
    maxChars: OMISSION_FACT_CHARS,
    skip: (f) => scope.listed.has(f) || scope.kept.has(f) || input.label.includes(f) || shown.includes(f),
  });
  for (const f of facts) scope.listed.add(f);
  return facts.length > 0 ? `; held ${facts.join(", ")}` : "";
}

/**
 * The line standing for removed chunks `from`..`to` (indices, consecutive, non-empty). A run that
 * starts or ends inside a long line says which line is only partly omitted.
 */
function omissionLine(chunks: Chunk[], from: number, to: number, input: RenderInput, scope: FactScope): string {
  const first = chunks[from]!.firstLine;
  const last = chunks[to]!.lastLine;
  const files = new Set<string>();
  for (let i = from; i <= to; i++) for (const f of chunks[i]!.files ?? []) files.add(f);
  const offset = input.lineOffset;
  const at = (line: number) => (offset === undefined ? line : offset + line - 1);
  const partial: number[] = [];
  if (from > 0 && endsInside(chunks, from - 1)) partial.push(first);
  if (endsInside(chunks, to) && !partial.includes(last)) partial.push(last);
  const grepFiles = input.grep && files.size > 0 ? fileList([...files]) : undefined;
  if (first === last && partial.length > 0) {
    let chars = 0;
    for (let i = from; i <= to; i++) chars += chunks[i]!.text.length;
    const part =
      grepFiles !== undefined
        ? `part of a line in ${grepFiles}`
        : offset !== undefined
          ? `part of line ${at(first)} of the file`
          : `part of output line ${first}`;
    return `[… ${formatChars(chars)} chars omitted: ${part}${omittedFacts(chunks, from, to, input, scope, part)} …]`;
  }
  let where: string;
  if (grepFiles !== undefined) where = `matches in ${grepFiles}`;
  else if (offset !== undefined) where = `${lineSpan(at(first), at(last))} of the file`;
  else where = `output ${lineSpan(first, last)}`;
  const whole = last - first + 1 - partial.length;
  const what =
    partial.length === 0
      ? plural(whole, "line")
      : `${whole > 0 ? `${plural(whole, "line")} and ` : ""}part of ${partList(partial.map(at))}`;
  return `[… ${what} omitted: ${where}${omittedFacts(chunks, from, to, input, scope, where)} …]`;
}

/** Drop the final "\n" only, so a kept CRLF line keeps its "\r" and the join restores the newline. */
function withoutFinalNewline(text: string): string {
  return text.endsWith("\n") ? text.slice(0, -1) : text;
}

/**
 * Replacement for an output of which some chunks are kept. Kept chunks are copied verbatim, in order,
 * one per line of the body; a kept chunk that continues a long line right after its kept start is
 * joined to it without a break, so kept neighbours always read as the original text.
 */
export function renderReplacement(input: RenderInput): string {
  const { chunks, keep } = input;
  // Credentials are found in the whole output: a chunk alone can hold the middle of a PEM block, or a
  // value whose name ended the chunk before.
  let blanked: string | undefined;
  const scope: FactScope = {
    kept: factTokens(chunks.filter((c) => keep.has(c.n)).map((c) => c.text)),
    listed: new Set(),
    text(c) {
      if (input.text.slice(c.start, c.end) !== c.text) return c.text;
      blanked ??= blankCredentials(input.text);
      return blanked.slice(c.start, c.end);
    },
  };
  const body: string[] = [];
  let keptLines = 0;
  let countedTo = 0;
  let removedFrom = -1;
  chunks.forEach((c, i) => {
    if (!keep.has(c.n)) {
      if (removedFrom < 0) removedFrom = i;
      return;
    }
    const glued = i > 0 && removedFrom < 0 && body.length > 0 && endsInside(chunks, i - 1);
    if (removedFrom >= 0) body.push(omissionLine(chunks, removedFrom, i - 1, input, scope));
    removedFrom = -1;
    const text = withoutFinalNewline(c.text);
    if (glued) body[body.length - 1] += text;
    else body.push(text);
    // Pieces of one long line count it once.
    keptLines += Math.max(0, c.lastLine - Math.max(c.firstLine, countedTo + 1) + 1);
    countedTo = Math.max(countedTo, c.lastLine);
  });
  if (removedFrom >= 0) body.push(omissionLine(chunks, removedFrom, chunks.length - 1, input, scope));
  const totalLines = chunks.length > 0 ? chunks[chunks.length - 1]!.lastLine : 0;
  const why = input.changedOnDisk ? `. ${READ_AGAIN}` : "; the rest was judged not needed for the answer.";
  const header = (after: number) =>
    `${GUARD_MARKER} Distilled the output of ${input.label} (${sizeChange(input.text.length, after)}): kept ` +
    `${keptLines} of ${plural(totalLines, "line")}${why} ${recallHint(input.entryId)}`;
  // The header states the replacement's own size, the figure /guard shows for the same edit: a few
  // rounds settle it, since only a change of the rounded figure changes the header's length.
  const bodyChars = body.reduce((n, line) => n + line.length + 1, 0);
  let after = bodyChars;
  let text = header(after);
  for (let round = 0; round < 4; round++) {
    const total = text.length + bodyChars;
    if (formatChars(total) === formatChars(after)) break;
    after = total;
    text = header(after);
  }
  // Near a rounding edge the figure can flip ("4.9k" is longer than "5k"): then the header states the
  // larger figure and trailing spaces make it true.
  for (let pad = 0; pad < 8 && formatChars(text.length + bodyChars) !== formatChars(after); pad++) {
    if (text.length + bodyChars > after) after = text.length + bodyChars;
    text = `${header(after)}${" ".repeat(pad + 1)}`;
  }
  return [text, ...body].join("\n");
}

/** One-line replacement for an output of which nothing is kept; `text` (the output) gives its key facts. */
export function renderRemoved(input: {
  entryId: string;
  label: string;
  lines: number;
  chars: number;
  changedOnDisk?: boolean;
  text?: string;
}): string {
  const size = `${formatChars(input.chars)} char${input.chars === 1 ? "" : "s"}`;
  if (input.changedOnDisk) {
    return (
      `${GUARD_MARKER} Removed the output of ${input.label} (${plural(input.lines, "line")}, ${size}). ` +
      `${READ_AGAIN} ${recallHint(input.entryId)}`
    );
  }
  return (
    `${GUARD_MARKER} Removed the output of ${input.label}: ${plural(input.lines, "line")} (${size}) judged not ` +
    `needed for the answer.${outputFacts(input.text, input.label)} ${recallHint(input.entryId)}`
  );
}

/** ` It held: a, b.` for a removed output: the facts its stub carries, none its label names already. */
export function outputFacts(text: string | undefined, label: string, maxChars = STUB_FACT_CHARS): string {
  if (text === undefined) return "";
  return keyFactsNote([text], { maxChars, skip: (f) => label.includes(f) });
}
