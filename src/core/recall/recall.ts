// What the recall tool returns: a line window over a raw output, or the lines a pattern matched,
// capped like Pi's own read tool so a recall never floods the context again.

export const RECALL_MAX_LINES = 2000;
export const RECALL_MAX_BYTES = 50 * 1024;
/**
 * A pattern is matched against whole lines (the sandbox's time limit bounds the work). A matched line
 * longer than this is shown as this many characters around its match, with a note on how to read it.
 */
export const RECALL_EXCERPT_CHARS = 4000;
/** How much of an excerpt comes before the match (when the line has that much before it). */
const EXCERPT_BEFORE = 1000;
export const RECALL_MAX_PATTERN = 500;

export interface RecallQuery {
  pattern?: string;
  /** 1-based first line (or first match, with a pattern). */
  offset?: number;
  limit?: number;
}

export interface ParsedPattern {
  source: string;
  flags: string;
}

/** Accept a plain source (`foo.*bar`) or a literal (`/foo/i`). Stateful flags are dropped: each line is tested alone. */
export function parsePattern(pattern: string): ParsedPattern {
  const literal = /^\/(.+)\/([a-z]*)$/s.exec(pattern);
  if (literal?.[1] !== undefined) {
    const flags = [...new Set((literal[2] ?? "").replace(/[gy]/g, ""))].join("");
    return { source: literal[1], flags };
  }
  return { source: pattern, flags: "" };
}

/** Lines of a text; a final newline does not add an empty line. */
export function splitLines(text: string): string[] {
  const lines = text.split("\n");
  if (lines.length > 1 && lines[lines.length - 1] === "") lines.pop();
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    if (line.endsWith("\r")) lines[i] = line.slice(0, -1);
  }
  return lines;
}

export interface WindowInput {
  /** The candidate lines, with their 1-based line numbers in the output. */
  lines: string[];
  numbers?: number[];
  /** Pattern results: where the pattern matched each line (same order as `lines`). */
  matches?: Array<{ index: number; length: number }>;
  query: RecallQuery;
  /** Prefix each line with its line number (pattern results). */
  numbered: boolean;
  /** The entry the text comes from, so a note can spell out the recall call that reads a cut line. */
  entryId?: string;
}

export interface Excerpt {
  text: string;
  /** The excerpt is line.slice(from, to). */
  from: number;
  to: number;
}

const isLowSurrogate = (c: number): boolean => c >= 0xdc00 && c <= 0xdfff;

/**
 * About `size` characters of `line` around a match at `index`: up to EXCERPT_BEFORE before it, the
 * rest from it on (moved back when the match is near the end). A line within `size` is returned whole.
 */
export function excerptAround(line: string, index: number, size: number = RECALL_EXCERPT_CHARS): Excerpt {
  if (line.length <= size) return { text: line, from: 0, to: line.length };
  let from = Math.max(0, Math.min(index - EXCERPT_BEFORE, line.length - size));
  let to = Math.min(line.length, from + size);
  // Never cut a surrogate pair in half.
  if (from > 0 && isLowSurrogate(line.charCodeAt(from))) from--;
  if (to < line.length && isLowSurrogate(line.charCodeAt(to))) to++;
  return { text: line.slice(from, to), from, to };
}

/** The pattern-result line for a matched line too long to show, and the note that follows it. */
function excerptLines(line: string, lineNo: number, index: number, entryId: string | undefined): string[] {
  const { text, from, to } = excerptAround(line, index);
  const shown = `${from > 0 ? "…" : ""}${text}${to < line.length ? "…" : ""}`;
  const call =
    entryId !== undefined
      ? `recall(${JSON.stringify({ entryId, offset: lineNo, limit: 1 })})`
      : `recall with offset=${lineNo}, limit=1 and no pattern`;
  const whole = line.length > RECALL_MAX_BYTES || byteLength(line) > RECALL_MAX_BYTES ? "its first 50 KB" : "all of it";
  return [
    `${lineNo}: ${shown}`,
    `[line ${lineNo} cut: it is ${line.length} chars; shown are chars ${from + 1}–${to}, around the match at ` +
      `char ${index + 1}. ${call} shows ${whole}; a pattern that matches further along shows another part.]`,
  ];
}

export interface WindowOutput {
  text: string;
  shown: number;
  truncated: boolean;
}

const byteLength = (s: string): number => Buffer.byteLength(s, "utf8");

function cutLine(line: string, lineNo: number): string {
  if (byteLength(line) <= RECALL_MAX_BYTES) return line;
  // Cut by characters first (cheap), then trim to the byte limit.
  let cut = line.slice(0, RECALL_MAX_BYTES);
  while (byteLength(cut) > RECALL_MAX_BYTES - 64) cut = cut.slice(0, Math.floor(cut.length * 0.9));
  return `${cut} [line ${lineNo} cut at 50KB]`;
}

/** Apply offset/limit and the 2,000-line / 50 KB cap, with a note that says how to continue. */
export function renderWindow(input: WindowInput): WindowOutput {
  const { lines, numbers, query, numbered } = input;
  const total = lines.length;
  const first = Math.max(1, query.offset ?? 1);
  const limit = query.limit ?? Number.POSITIVE_INFINITY;
  const out: string[] = [];
  let bytes = 0;
  let index = first - 1;
  const end = Math.min(total, index + limit);
  let capped = false;
  let shown = 0;
  for (; index < end; index++) {
    if (out.length >= RECALL_MAX_LINES) {
      capped = true;
      break;
    }
    const lineNo = numbers?.[index] ?? index + 1;
    const raw = lines[index] as string;
    const match = input.matches?.[index];
    const rendered =
      match !== undefined && raw.length > RECALL_EXCERPT_CHARS
        ? excerptLines(raw, lineNo, match.index, input.entryId)
        : [numbered ? `${lineNo}: ${cutLine(raw, lineNo)}` : cutLine(raw, lineNo)];
    let size = 0;
    for (const r of rendered) size += byteLength(r) + 1;
    if ((bytes + size > RECALL_MAX_BYTES || out.length + rendered.length > RECALL_MAX_LINES) && out.length > 0) {
      capped = true;
      break;
    }
    out.push(...rendered);
    bytes += size;
    shown++;
  }
  const noun = input.query.pattern !== undefined ? "matches" : "lines";
  if (total === 0) {
    return {
      text: input.query.pattern !== undefined ? "[no lines match the pattern]" : "[the output is empty]",
      shown: 0,
      truncated: false,
    };
  }
  if (first > total) {
    return { text: `[offset ${first} is past the end: there are ${total} ${noun}]`, shown: 0, truncated: false };
  }
  const last = first + shown - 1;
  const more = last < total;
  if (more) {
    const why = capped ? " (output capped at 2,000 lines / 50 KB)" : "";
    out.push(`[Showing ${noun} ${first}–${last} of ${total}${why}. Use offset=${last + 1} to continue.]`);
  }
  return { text: out.join("\n"), shown, truncated: more };
}

/** One raw entry of an omitted exchange, as recall shows it. */
export interface TranscriptEntry {
  id: string;
  role: string;
  text: string;
  images: number;
  toolCalls?: Array<{ name: string; args: unknown }>;
  toolName?: string;
  customType?: string;
}

function argsJson(args: unknown): string {
  try {
    return JSON.stringify(args) ?? "{}";
  } catch {
    // swallow-ok: Arguments that JSON cannot hold (cyclic, BigInt) show as none.
    return "{}";
  }
}

/** The transcript of an omitted exchange: its prompt and exactly the entries the omission hid. */
export function exchangeTranscript(entries: readonly TranscriptEntry[]): string {
  const parts: string[] = [];
  for (const e of entries) {
    if (e.role === "user") parts.push(`## user\n${e.text}${e.images ? `\n[${e.images} image(s) attached below]` : ""}`);
    else if (e.role === "assistant") {
      const calls = (e.toolCalls ?? []).map((c) => `[tool call] ${c.name} ${argsJson(c.args)}`);
      parts.push(["## assistant", e.text, ...calls].filter((s) => s !== "").join("\n"));
    } else if (e.role === "toolResult") {
      const images = e.images ? `\n[${e.images} image(s): recall({"entryId":"${e.id}"}) shows them]` : "";
      parts.push(`## tool result (${e.toolName ?? "tool"})\n${e.text}${images}`);
    } else if (e.role === "custom") parts.push(`## custom message (${e.customType ?? "custom"})\n${e.text}`);
    else parts.push(`## ${e.role}\n${e.text}`);
  }
  return parts.join("\n\n");
}
