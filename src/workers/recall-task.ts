import {
  parsePattern,
  RECALL_MATCH_CHARS,
  RECALL_MAX_PATTERN,
  type RecallQuery,
  renderWindow,
  splitLines,
} from "../core/recall.ts";
import { matchLines, PatternError } from "./regex-sandbox.ts";

export interface RecallTaskInput extends RecallQuery {
  text: string;
  timeoutMs: number;
}

export type RecallTaskOutput =
  | { ok: true; text: string; shown: number; truncated: boolean }
  | { ok: false; error: string };

/** Line window or regex search over one raw output. */
export function recallText(input: RecallTaskInput): RecallTaskOutput {
  const lines = splitLines(input.text);
  const query: RecallQuery = { pattern: input.pattern, offset: input.offset, limit: input.limit };
  if (input.pattern === undefined) {
    return { ok: true, ...renderWindow({ lines, query, numbered: false }) };
  }
  if (input.pattern.length > RECALL_MAX_PATTERN) {
    return { ok: false, error: `pattern is ${input.pattern.length} characters; the limit is ${RECALL_MAX_PATTERN}` };
  }
  const { source, flags } = parsePattern(input.pattern);
  let hits: number[];
  try {
    const probe = lines.map((line) => (line.length > RECALL_MATCH_CHARS ? line.slice(0, RECALL_MATCH_CHARS) : line));
    hits = matchLines(probe, source, flags, input.timeoutMs);
  } catch (error) {
    if (error instanceof PatternError) return { ok: false, error: error.message };
    throw error;
  }
  const matched = hits.map((i) => lines[i] as string);
  const numbers = hits.map((i) => i + 1);
  return { ok: true, ...renderWindow({ lines: matched, numbers, query, numbered: true }) };
}
