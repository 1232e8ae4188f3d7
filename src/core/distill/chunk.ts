// Cutting one tool output into chunks the classifier judges one by one, and grouping chunks into
// requests. Cuts fall at line ends, except inside a line too long for one request, which is cut into
// pieces; either way the chunks rebuild the exact output, and every chunk fits one request.
// Outputs can be tens of megabytes: everything here walks the text with indexOf/charCodeAt and
// never splits it into an array of lines.

import type { Chunk, Segment } from "../shared/types.ts";

const MIN_TARGET = 800;
/** Aim for about this many chunks, once the minimum chunk size is exceeded and until the cap is reached. */
const CHUNKS_PER_OUTPUT = 120;
/**
 * Most characters in one chunk unless the caller says otherwise: the default request limit
 * (`maxSegmentChars`), so that every chunk can be sent.
 */
export const DEFAULT_MAX_CHUNK_CHARS = 32_000;
/**
 * The chunk target is at most this share of the request limit: a request then carries several chunks
 * (fewer requests for a huge output, and finer keep decisions), and the longest window (1.5× the
 * target) is well within the limit.
 */
const TARGET_SHARE_OF_LIMIT = 1 / 4;
/** A limit below this is raised to it, so that a piece of a line always makes progress. */
const MIN_LIMIT = 64;
/** Lines inspected by isGrepStyle: enough to judge, and bounded for huge outputs. */
const GREP_SAMPLE_LINES = 2000;
const GREP_MIN_LINES = 3;
const GREP_MIN_SHARE = 0.6;
/** Longer "paths" are not paths; also bounds the per-line scan. */
const MAX_PATH = 1024;

const NL = 10;
const CR = 13;
const COLON = 58;
const DASH = 45;

/**
 * Chunk size in characters for an output of `length` characters: about 1/120 of it, at least 800, and
 * at most a quarter of `maxChars` (the most one request carries).
 */
export function chunkTarget(length: number, maxChars: number = DEFAULT_MAX_CHUNK_CHARS): number {
  const cap = Math.floor(Math.max(MIN_LIMIT, maxChars) * TARGET_SHARE_OF_LIMIT);
  return Math.min(cap, Math.max(MIN_TARGET, Math.ceil(length / CHUNKS_PER_OUTPUT)));
}

// ---------------------------------------------------------------------------------------------
// Line scanning

/** Offset just past the line that starts at `start` (past its "\n", or the text end). */
function lineEnd(text: string, start: number): number {
  const nl = text.indexOf("\n", start);
  return nl === -1 ? text.length : nl + 1;
}

/** End of the line's content, without its "\n" or "\r\n". */
function contentEnd(text: string, start: number, end: number): number {
  let e = end;
  if (e > start && text.charCodeAt(e - 1) === NL) e--;
  if (e > start && text.charCodeAt(e - 1) === CR) e--;
  return e;
}

function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}

function isSpace(c: number): boolean {
  return c === 32 || (c >= 9 && c <= 13);
}

/** Only digits and date/time punctuation, like `2024-05-01T12` or `10`: a timestamp, not a file. */
function isDateLike(name: string): boolean {
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (!isDigit(c) && c !== DASH && c !== 46 /* . */ && c !== 84 /* T */ && c !== 43 /* + */) return false;
  }
  return true;
}

/** True when `-<digits>-` starts at `i` (before `end`). */
function dashNumberDashAt(text: string, i: number, end: number): boolean {
  if (text.charCodeAt(i) !== DASH) return false;
  let j = i + 1;
  while (j < end && isDigit(text.charCodeAt(j))) j++;
  return j > i + 1 && j < end && text.charCodeAt(j) === DASH;
}

/** File of a grep match line `path:N:…`, or undefined when the line is not one. */
function matchPath(text: string, start: number, end: number): string | undefined {
  const limit = Math.min(end, start + MAX_PATH);
  let i = start;
  while (i < limit) {
    const c = text.charCodeAt(i);
    if (c === COLON) break;
    if (isSpace(c)) return undefined;
    i++;
  }
  if (i === start || i >= limit) return undefined;
  let j = i + 1;
  while (j < end && isDigit(text.charCodeAt(j))) j++;
  if (j === i + 1 || j >= end || text.charCodeAt(j) !== COLON) return undefined;
  const path = text.slice(start, i);
  return isDateLike(path) ? undefined : path;
}

/** True when the line has the shape of a grep context line `path-N-…`. */
function looksLikeContext(text: string, start: number, end: number): boolean {
  const limit = Math.min(end, start + MAX_PATH);
  for (let i = start + 1; i < limit; i++) {
    const c = text.charCodeAt(i);
    if (isSpace(c)) return false;
    if (c === DASH && dashNumberDashAt(text, i, end) && !isDateLike(text.slice(start, i))) return true;
  }
  return false;
}

/**
 * File of a context line: the longest known name that the line starts with, directly followed by
 * `-<digits>-`. Names with dashes and digits (`2024-05-01-post.md`) are why a plain parse won't do.
 */
function contextPath(text: string, start: number, end: number, known: Set<string>, maxLen: number): string | undefined {
  const limit = Math.min(end, start + maxLen + 1);
  let best: string | undefined;
  for (let i = start + 1; i < limit; i++) {
    const c = text.charCodeAt(i);
    if (isSpace(c)) break;
    if (c !== DASH || !dashNumberDashAt(text, i, end)) continue;
    const name = text.slice(start, i);
    if (known.has(name)) best = name;
  }
  return best;
}

/** Empty, whitespace-only, or a `--` separator between grep context blocks. */
function isFiller(text: string, start: number, end: number): boolean {
  if (end - start === 2 && text.charCodeAt(start) === DASH && text.charCodeAt(start + 1) === DASH) return true;
  for (let i = start; i < end; i++) if (!isSpace(text.charCodeAt(i))) return false;
  return true;
}

/**
 * Whether the output looks like grep/rg output with file names (`path:N:` matches, `path-N-` context).
 * Only the first GREP_SAMPLE_LINES meaningful lines are inspected, so huge outputs cost little.
 */
export function isGrepStyle(text: string): boolean {
  let seen = 0;
  let hits = 0;
  for (let s = 0; s < text.length && seen < GREP_SAMPLE_LINES; ) {
    const end = lineEnd(text, s);
    const ce = contentEnd(text, s, end);
    if (!isFiller(text, s, ce)) {
      seen++;
      if (matchPath(text, s, ce) !== undefined || looksLikeContext(text, s, ce)) hits++;
    }
    s = end;
  }
  return seen >= GREP_MIN_LINES && hits >= GREP_MIN_SHARE * seen;
}

// ---------------------------------------------------------------------------------------------
// Ranges

interface Range {
  start: number;
  end: number;
  files?: string[];
}

/**
 * Cut [start, end) at line ends into pieces of about `target`, as long as what is left is more than
 * 1.5× the target (so the last piece is never tiny). A line longer than the target is one piece.
 */
function splitByLines(text: string, start: number, end: number, target: number): Range[] {
  const pieces: Range[] = [];
  let pos = start;
  while (end - pos > target * 1.5) {
    // pos is a line start, so this backward search stops at pos - 1 at the latest.
    let cut = text.lastIndexOf("\n", pos + target - 1) + 1;
    if (cut <= pos) cut = lineEnd(text, pos);
    pieces.push({ start: pos, end: cut });
    pos = cut;
  }
  if (pos < end) pieces.push({ start: pos, end });
  return pieces;
}

/** If a blank line starts in the last 40% of [start, end), the offset just past the last one; else `end`. */
function blankLineBreak(text: string, start: number, end: number): number {
  // A slice keeps the search inside the window (an unbounded lastIndexOf would make this quadratic).
  const win = text.slice(start, end);
  const lf = win.lastIndexOf("\n\n");
  const crlf = win.lastIndexOf("\n\r\n");
  const after = Math.max(lf === -1 ? -1 : lf + 2, crlf === -1 ? -1 : crlf + 3);
  // The blank line starts one character after the newline that precedes it.
  const blankStart = lf > crlf ? lf + 1 : crlf + 1;
  if (after === -1 || blankStart < win.length * 0.6) return end;
  return start + after;
}

function plainRanges(text: string, target: number): Range[] {
  const ranges: Range[] = [];
  let pos = 0;
  while (pos < text.length) {
    if (text.length - pos <= target) {
      ranges.push({ start: pos, end: text.length });
      break;
    }
    const nl = text.lastIndexOf("\n", pos + target - 1);
    const end = nl < pos ? lineEnd(text, pos) : blankLineBreak(text, pos, nl + 1);
    ranges.push({ start: pos, end });
    pos = end;
  }
  return ranges;
}

interface Group {
  file: string | undefined;
  start: number;
  end: number;
}

/** Consecutive lines grouped by the file they belong to; lines naming no file join the current group. */
function grepGroups(text: string): Group[] {
  // Names come from every match line first: rg prints a file's leading context lines before its first match.
  const known = new Set<string>();
  let maxLen = 0;
  for (let s = 0; s < text.length; ) {
    const end = lineEnd(text, s);
    const path = matchPath(text, s, contentEnd(text, s, end));
    if (path !== undefined && !known.has(path)) {
      known.add(path);
      maxLen = Math.max(maxLen, path.length);
    }
    s = end;
  }
  const groups: Group[] = [];
  let current: Group | undefined;
  for (let s = 0; s < text.length; ) {
    const end = lineEnd(text, s);
    const ce = contentEnd(text, s, end);
    const file = matchPath(text, s, ce) ?? (maxLen > 0 ? contextPath(text, s, ce, known, maxLen) : undefined);
    if (current !== undefined && (file === undefined || file === current.file)) {
      current.end = end;
    } else {
      current = { file, start: s, end };
      groups.push(current);
    }
    s = end;
  }
  return groups;
}

/** Distinct file names in order; the Set keeps merging thousands of one-line groups linear. */
function addFile(files: Set<string>, file: string | undefined): void {
  if (file !== undefined) files.add(file);
}

function grepRanges(text: string, target: number): Range[] {
  const groups = grepGroups(text);
  const small = target / 4;
  const ranges: Range[] = [];
  let i = 0;
  while (i < groups.length) {
    const g = groups[i]!;
    const size = g.end - g.start;
    if (size > target * 1.5) {
      for (const piece of splitByLines(text, g.start, g.end, target)) {
        ranges.push({ ...piece, files: g.file === undefined ? [] : [g.file] });
      }
      i++;
      continue;
    }
    const files = new Set<string>();
    addFile(files, g.file);
    let end = g.end;
    i++;
    if (size < small) {
      // Many files with one or two matches each: judge them together rather than one tiny chunk each.
      while (i < groups.length) {
        const h = groups[i]!;
        if (h.end - h.start >= small || h.end - g.start > target / 2) break;
        addFile(files, h.file);
        end = h.end;
        i++;
      }
    }
    ranges.push({ start: g.start, end, files: [...files] });
  }
  return ranges;
}

// ---------------------------------------------------------------------------------------------
// Ranges too large for one request

/** Characters after which a cut inside a line is least harmful: spaces and closing punctuation. */
const SOFT_BREAK = new Uint8Array(128);
for (const c of " \t,;)]}>") SOFT_BREAK[c.charCodeAt(0)] = 1;

function isSoftBreak(c: number): boolean {
  return c < 128 && SOFT_BREAK[c] === 1;
}

const isHighSurrogate = (c: number): boolean => c >= 0xd800 && c <= 0xdbff;
const isLowSurrogate = (c: number): boolean => c >= 0xdc00 && c <= 0xdfff;

/**
 * Cut the line [start, end) (with its newline) into pieces of about `target`, the last one at most
 * 1.5× the target. A cut goes just after a space or closing punctuation in the last eighth of a piece
 * when there is one, never between the halves of a surrogate pair, and never at the newline (so a
 * piece that continues a line never starts with "\n"). Linear: each character is looked at at most
 * once per cut, and only within an eighth of the target before it.
 */
function splitLine(text: string, start: number, end: number, target: number, out: (s: number, e: number) => void) {
  let pos = start;
  while (end - pos > target * 1.5) {
    let cut = pos + target;
    const floor = pos + Math.ceil(target * 0.875);
    for (let k = cut; k > floor; k--) {
      if (isSoftBreak(text.charCodeAt(k - 1))) {
        cut = k;
        break;
      }
    }
    if (isHighSurrogate(text.charCodeAt(cut - 1)) && isLowSurrogate(text.charCodeAt(cut))) cut++;
    out(pos, cut);
    pos = cut;
  }
  out(pos, end);
}

/**
 * A range is at most `maxChars`: a longer one (in practice a single line longer than the limit, since
 * windows stay within 1.5× a target of at most a quarter of the limit) is cut at its line ends where it
 * can be, and a line longer than the limit into pieces of about the target.
 */
function pushCapped(text: string, r: Range, target: number, maxChars: number, out: Range[]): void {
  if (r.end - r.start <= maxChars) {
    out.push(r);
    return;
  }
  const piece = (start: number, end: number): void => {
    out.push(r.files === undefined ? { start, end } : { start, end, files: r.files });
  };
  let from = r.start;
  // Ranges end at line ends, so each lineEnd search stops inside the range: one pass over it.
  for (let s = r.start; s < r.end; ) {
    const e = Math.min(lineEnd(text, s), r.end);
    if (e - s > maxChars) {
      if (s > from) piece(from, s);
      splitLine(text, s, e, target, piece);
      from = e;
    } else if (e - from > maxChars) {
      piece(from, s);
      from = s;
    }
    s = e;
  }
  if (from < r.end) piece(from, r.end);
}

// ---------------------------------------------------------------------------------------------
// Chunks and segments

/** Number of "\n" in a chunk's text (searched in the slice: a search in the whole text could run past it). */
function newlines(slice: string): number {
  let n = 0;
  for (let i = slice.indexOf("\n"); i !== -1; i = slice.indexOf("\n", i + 1)) n++;
  return n;
}

/**
 * Cut an output into chunks. Grep-style output is grouped by file; other output is cut into windows,
 * preferring to end a window after a blank line. Joining the chunk texts gives back `text` exactly.
 * `grep` defaults to isGrepStyle(text). No chunk is longer than `maxChars` (the most one request
 * carries; at least 64): a line longer than that is cut into pieces, and a chunk that ends inside a
 * line (it does not end with "\n" and is not the last) is continued by the next one, whose firstLine
 * is that same line.
 */
export function chunkOutput(
  text: string,
  grep: boolean = isGrepStyle(text),
  maxChars: number = DEFAULT_MAX_CHUNK_CHARS,
): Chunk[] {
  if (text.length === 0) return [];
  const limit = Math.max(MIN_LIMIT, maxChars);
  const target = chunkTarget(text.length, limit);
  const ranges: Range[] = [];
  for (const r of grep ? grepRanges(text, target) : plainRanges(text, target))
    pushCapped(text, r, target, limit, ranges);
  const chunks: Chunk[] = [];
  let line = 1;
  for (const r of ranges) {
    const slice = text.slice(r.start, r.end);
    const breaks = newlines(slice);
    const endsLine = text.charCodeAt(r.end - 1) === NL;
    const chunk: Chunk = {
      n: chunks.length + 1,
      start: r.start,
      end: r.end,
      text: slice,
      firstLine: line,
      lastLine: endsLine ? line + breaks - 1 : line + breaks,
    };
    if (r.files !== undefined) chunk.files = r.files;
    chunks.push(chunk);
    line += breaks;
  }
  return chunks;
}

/** Whether the chunk ends inside a line, so that the next chunk continues it. */
export function endsInsideLine(chunk: Chunk, total: number): boolean {
  return chunk.end < total && !chunk.text.endsWith("\n");
}

/** Distinct file names of grep chunks, in order of appearance. */
export function chunkFiles(chunks: Chunk[]): string[] {
  const files = new Set<string>();
  for (const c of chunks) for (const f of c.files ?? []) files.add(f);
  return [...files];
}

/**
 * Group consecutive chunks into classifier requests of at most `maxChars` characters and `maxChunks`
 * chunks. A chunk above `maxChars` stands alone, marked oversize: it is never sent. chunkOutput with
 * the same `maxChars` never makes such a chunk; the check stays for chunks cut any other way.
 */
export function segmentChunks(chunks: Chunk[], maxChars: number, maxChunks: number): Segment[] {
  const segments: Segment[] = [];
  let current: Chunk[] = [];
  let chars = 0;
  const flush = (): void => {
    if (current.length > 0) segments.push({ chunks: current, oversize: false });
    current = [];
    chars = 0;
  };
  for (const chunk of chunks) {
    const size = chunk.text.length;
    if (size > maxChars) {
      flush();
      segments.push({ chunks: [chunk], oversize: true });
      continue;
    }
    if (chars + size > maxChars || current.length >= maxChunks) flush();
    current.push(chunk);
    chars += size;
  }
  flush();
  return segments;
}
