// What happens to one tool output once every segment of it has been judged: left alone, distilled to
// its kept chunks, or replaced by a one-line stub.

import { countLines } from "../shared/text.ts";
import type { Candidate, Chunk, ResultOutcome, SegmentDecision } from "../shared/types.ts";
import { renderRemoved, renderReplacement } from "./render.ts";

export interface DecideInput {
  candidate: Candidate;
  chunks: Chunk[];
  grep: boolean;
  lineOffset?: number;
  /** One per segment, in order, together covering every chunk. */
  decisions: SegmentDecision[];
  /** Files the answer names; only used with keepCitedFiles. */
  citedFiles?: string[];
  keepCitedFiles: boolean;
  maxKeepRatio: number;
  /** Chunks that are never dropped (a read's lines a later edit matched). */
  anchors?: number[];
  /** A read whose file changed on disk since: its replacement asks for a new read. */
  changedOnDisk?: boolean;
}

export interface ResultDecision {
  outcome: ResultOutcome;
  /** Distinct segment reasons joined with ",", or `not-worth` / `all-chunks`. */
  reason: string;
  replacement?: string;
  beforeChars: number;
  afterChars: number;
  /** Chunks that stay visible: all of them unless the output is distilled or removed. */
  keptChunks: number;
  totalChunks: number;
}

/** Distinct reasons in order; `chunks` reads `all-chunks` when every chunk ended up kept. */
function joinReasons(decisions: SegmentDecision[], allKept: boolean): string {
  const reasons: string[] = [];
  for (const d of decisions) {
    const r = allKept && d.reason === "chunks" ? "all-chunks" : d.reason;
    if (!reasons.includes(r)) reasons.push(r);
  }
  return reasons.length > 0 ? reasons.join(",") : "all-chunks";
}

/** Decide the fate of one output from its segments' keep sets. */
export function decideResult(input: DecideInput): ResultDecision {
  const { candidate, chunks } = input;
  const original = candidate.text.length;
  const totalChunks = chunks.length;
  const leave = (reason: string): ResultDecision => ({
    outcome: "kept",
    reason,
    beforeChars: original,
    afterChars: original,
    keptChunks: totalChunks,
    totalChunks,
  });

  const keep = new Set<number>();
  for (const d of input.decisions) for (const n of d.keep) keep.add(n);
  for (const n of input.anchors ?? []) keep.add(n);
  const allKept = chunks.every((c) => keep.has(c.n));
  if (allKept) return leave(joinReasons(input.decisions, true));

  if (input.keepCitedFiles && input.citedFiles !== undefined && input.citedFiles.length > 0) {
    const cited = new Set(input.citedFiles);
    for (const c of chunks) if (c.files?.some((f) => cited.has(f))) keep.add(c.n);
  }

  let keptChars = 0;
  let keptChunks = 0;
  for (const c of chunks) {
    if (!keep.has(c.n)) continue;
    keptChars += c.text.length;
    keptChunks++;
  }
  if (keptChars > input.maxKeepRatio * original) return leave("not-worth");

  const base = { entryId: candidate.entryId, label: candidate.label, changedOnDisk: input.changedOnDisk === true };
  const replacement =
    keptChunks === 0
      ? renderRemoved({ ...base, lines: countLines(candidate.text), chars: original, text: candidate.text })
      : renderReplacement({
          ...base,
          text: candidate.text,
          chunks,
          keep,
          grep: input.grep,
          lineOffset: input.lineOffset,
        });
  if (replacement.length >= original) return leave("not-worth");

  return {
    outcome: keptChunks === 0 ? "removed" : "distilled",
    reason: joinReasons(input.decisions, false),
    replacement,
    beforeChars: original,
    afterChars: replacement.length,
    keptChunks,
    totalChunks,
  };
}

// ---------------------------------------------------------------------------------------------
// Files named in the answer

/** Characters that continue a path or identifier, so a name touching one is part of a longer word. */
function isNameChar(c: string | undefined): boolean {
  return c !== undefined && /[\w.\-/\\]/.test(c);
}

/**
 * Whether `text` mentions `name` as a whole path. A slash before it is allowed (an absolute or longer
 * form of the same relative path); a trailing `.` counts as punctuation unless a word follows it.
 */
function mentions(text: string, name: string, slashBefore: boolean): boolean {
  if (name.length === 0) return false;
  for (let i = text.indexOf(name); i !== -1; i = text.indexOf(name, i + 1)) {
    const before = text[i - 1];
    const okBefore = !isNameChar(before) || (slashBefore && (before === "/" || before === "\\"));
    const j = i + name.length;
    const after = text[j];
    const okAfter = !isNameChar(after) || (after === "." && !isNameChar(text[j + 1]));
    if (okBefore && okAfter) return true;
  }
  return false;
}

function baseName(path: string): string {
  return path.slice(Math.max(path.lastIndexOf("/"), path.lastIndexOf("\\")) + 1);
}

/** The known files (from grep chunks) that the answer names, by path or by a basename no other file shares. */
export function citedFiles(answer: string, knownFiles: string[]): string[] {
  const files = [...new Set(knownFiles)];
  const baseCount = new Map<string, number>();
  for (const f of files) baseCount.set(baseName(f), (baseCount.get(baseName(f)) ?? 0) + 1);
  return files.filter((f) => {
    // grep run from "." prints "./src/a.ts"; answers write "src/a.ts".
    const path = f.startsWith("./") ? f.slice(2) : f;
    if (mentions(answer, path, true)) return true;
    const base = baseName(path);
    // A bare name only: `lib/a.ts` names some other a.ts.
    return base !== path && baseCount.get(base) === 1 && mentions(answer, base, false);
  });
}
