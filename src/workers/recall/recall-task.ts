import {
  parsePattern,
  RECALL_MAX_PATTERN,
  type RecallQuery,
  renderWindow,
  splitLines,
} from "../../core/recall/recall.ts";
import { type LineMatch, matchPositions, PatternError } from "./regex-sandbox.ts";

export interface RecallTaskInput extends RecallQuery {
  text: string;
  timeoutMs: number;
  /** The entry recalled, named in the note under a matched line too long to show whole. */
  entryId?: string;
}

export type RecallTaskOutput =
  | { ok: true; text: string; shown: number; truncated: boolean }
  | { ok: false; error: string };

/**
 * Line window or regex search over one raw output. A pattern is matched against each whole line, however
 * long, within the sandbox's time limit; a long matched line is shown around its match.
 */
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
  let hits: LineMatch[];
  try {
    hits = matchPositions(lines, source, flags, input.timeoutMs);
  } catch (error) {
    if (error instanceof PatternError) return { ok: false, error: error.message };
    throw error;
  }
  return {
    ok: true,
    ...renderWindow({
      lines: hits.map((h) => lines[h.line] as string),
      numbers: hits.map((h) => h.line + 1),
      matches: hits,
      query,
      numbered: true,
      entryId: input.entryId,
    }),
  };
}
