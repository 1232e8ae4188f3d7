// A run-end pass in two pure halves, so the CPU work can run off the main thread:
// planRunEnd (snapshot → run span → candidates → chunks → segments → classifier requests) and
// finishRunEnd (classifier outcomes → decisions → replacements and record results).
// Between them the caller sends the requests to the classifier.

import { chunkOutput, isGrepStyle, segmentChunks } from "./chunk.ts";
import type { GuardConfig } from "./config.ts";
import { citedFiles, decideResult } from "./decide.ts";
import { interpret, oversizeDecision } from "./interpret.ts";
import { buildRunEndRequest } from "./request.ts";
import { collectCandidates, collectRun, runWorthDistilling } from "./run.ts";
import { countLines } from "./text.ts";
import type {
  Candidate,
  Chunk,
  ClassifierOutcome,
  ClassifierRequest,
  ContextEditDraft,
  RecordResult,
  SegmentDecision,
  SnapEntry,
} from "./types.ts";

/** Chunk boundaries without their text: the text is a slice of the output the caller already has. */
export type ChunkMeta = Omit<Chunk, "text">;

export interface PlannedSegment {
  chunkNumbers: number[];
  oversize: boolean;
  /** Index into PassPlan.requests, absent for oversize segments. */
  request?: number;
}

export interface PlannedCandidate {
  entryId: string;
  tool: string;
  label: string;
  isError: boolean;
  chars: number;
  grep: boolean;
  /** For `read`: the file line number of the output's first line. */
  lineOffset?: number;
  chunks: ChunkMeta[];
  segments: PlannedSegment[];
}

export type PassPlan =
  | { status: "skip"; reason: string }
  | {
      status: "run";
      promptId: string;
      candidates: PlannedCandidate[];
      requests: ClassifierRequest[];
      /** Files the final answer names (for keepCitedFiles). */
      citedFiles: string[];
    };

export type PlanConfig = Pick<
  GuardConfig,
  | "minResultChars"
  | "minRunChars"
  | "excludeTools"
  | "distillErrors"
  | "historyExchanges"
  | "maxSegmentChars"
  | "maxChunksPerSegment"
  | "keepCitedFiles"
>;

function lineOffsetFor(candidate: Candidate): number | undefined {
  if (candidate.tool !== "read") return undefined;
  const offset = candidate.args.offset;
  return typeof offset === "number" && Number.isInteger(offset) && offset > 0 ? offset : 1;
}

function withoutText(chunk: Chunk): ChunkMeta {
  const { text: _text, ...meta } = chunk;
  return meta;
}

export function planRunEnd(entries: SnapEntry[], config: PlanConfig): PassPlan {
  const span = collectRun(entries, config.historyExchanges);
  if (!span) return { status: "skip", reason: "no run" };
  const found = collectCandidates(entries, span, config);
  if (!runWorthDistilling(found, config.minRunChars)) {
    return { status: "skip", reason: found.length === 0 ? "no candidates" : "below minRunChars" };
  }
  const candidates: PlannedCandidate[] = [];
  const requests: ClassifierRequest[] = [];
  const files = new Set<string>();
  for (const candidate of found) {
    const chunks = chunkOutput(candidate.text);
    const grep = isGrepStyle(candidate.text);
    const segments = segmentChunks(chunks, config.maxSegmentChars, config.maxChunksPerSegment);
    const sendable = segments.filter((s) => !s.oversize).length;
    const totalLines = countLines(candidate.text);
    const planned: PlannedSegment[] = [];
    let sentIndex = 0;
    for (const segment of segments) {
      const chunkNumbers = segment.chunks.map((c) => c.n);
      if (segment.oversize) {
        planned.push({ chunkNumbers, oversize: true });
        continue;
      }
      requests.push(
        buildRunEndRequest({
          span,
          candidate,
          chunks: segment.chunks,
          segmentIndex: sentIndex++,
          segmentCount: sendable,
          totalLines,
        }),
      );
      planned.push({ chunkNumbers, oversize: false, request: requests.length - 1 });
    }
    if (grep) for (const chunk of chunks) for (const f of chunk.files ?? []) files.add(f);
    candidates.push({
      entryId: candidate.entryId,
      tool: candidate.tool,
      label: candidate.label,
      isError: candidate.isError,
      chars: candidate.text.length,
      grep,
      lineOffset: lineOffsetFor(candidate),
      chunks: chunks.map(withoutText),
      segments: planned,
    });
  }
  if (requests.length === 0) return { status: "skip", reason: "only oversize chunks" };
  const cited = config.keepCitedFiles ? citedFiles(span.answer, [...files]) : [];
  return { status: "run", promptId: span.promptId, candidates, requests, citedFiles: cited };
}

export interface FinishInput {
  candidates: PlannedCandidate[];
  /** The output text of each candidate, same order. */
  texts: string[];
  /** One outcome per planned request, same order. */
  outcomes: ClassifierOutcome[];
  citedFiles: string[];
  config: Pick<
    GuardConfig,
    | "keepWholeThreshold"
    | "focusWholeThreshold"
    | "chunkKeepThreshold"
    | "noneThreshold"
    | "maxKeepRatio"
    | "keepCitedFiles"
  >;
}

export interface FinishOutput {
  drafts: ContextEditDraft[];
  results: RecordResult[];
}

function restoreChunks(meta: ChunkMeta[], text: string): Chunk[] {
  return meta.map((m) => ({ ...m, text: text.slice(m.start, m.end) }));
}

export function finishRunEnd(input: FinishInput): FinishOutput {
  const drafts: ContextEditDraft[] = [];
  const results: RecordResult[] = [];
  input.candidates.forEach((planned, i) => {
    const text = input.texts[i] ?? "";
    if (text.length !== planned.chars) throw new Error(`output of ${planned.entryId} changed during the pass`);
    const chunks = restoreChunks(planned.chunks, text);
    const decisions: SegmentDecision[] = planned.segments.map((segment) => {
      if (segment.oversize || segment.request === undefined) return oversizeDecision(segment.chunkNumbers);
      const outcome = input.outcomes[segment.request] ?? { status: "timeout" as const };
      return interpret(outcome, segment.chunkNumbers, input.config);
    });
    const decision = decideResult({
      candidate: {
        entryId: planned.entryId,
        tool: planned.tool,
        label: planned.label,
        args: {},
        isError: planned.isError,
        text,
      },
      chunks,
      grep: planned.grep,
      lineOffset: planned.lineOffset,
      decisions,
      citedFiles: input.citedFiles,
      keepCitedFiles: input.config.keepCitedFiles,
      maxKeepRatio: input.config.maxKeepRatio,
    });
    if (decision.replacement !== undefined && decision.outcome !== "kept") {
      drafts.push({
        type: "context_edit",
        targetId: planned.entryId,
        replacement: { content: [{ type: "text", text: decision.replacement }] },
      });
    }
    results.push({
      kind: "large",
      entryId: planned.entryId,
      tool: planned.tool,
      label: planned.label,
      outcome: decision.outcome,
      reason: decision.reason,
      beforeChars: decision.beforeChars,
      afterChars: decision.afterChars,
      jev: decisions.map((d) => d.trace),
    });
  });
  return { drafts, results };
}
