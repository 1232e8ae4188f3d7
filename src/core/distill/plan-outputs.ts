// The requests for tool outputs, as the planners of both phases make them (plan.ts): a large output
// segment by segment, batches of small items, and earlier runs' outputs asked again.
import type { CacheModel } from "../cache/break-even.ts";
import type { GuardJudgments } from "../items/judged.ts";
import { type OutputNotes, onDisk, plannedMarks } from "../items/output-notes.ts";
import { collectRetries, retriesMayPay, retrySavingBound } from "../items/retry.ts";
import { buildSmallRequests, type SmallItem } from "../items/small.ts";
import { CHANGED_ON_DISK } from "../items/stale-reads.ts";
import { type Pins, unpinned } from "../records/pins.ts";
import type { GuardConfig } from "../shared/config.ts";
import { countLines } from "../shared/text.ts";
import type { Candidate, Chunk, ClassifierRequest, RunSpan, SnapEntry } from "../shared/types.ts";
import { chunkOutput, isGrepStyle, segmentChunks } from "./chunk.ts";
import { citedFiles } from "./decide.ts";
import { type PassBudget, takeNewest } from "./pass-budget.ts";
import { buildRunEndRequest } from "./request.ts";
import { runWorthDistilling } from "./run.ts";

/** Chunk boundaries without their text: the text is a slice of the output the caller already has. */
export type ChunkMeta = Omit<Chunk, "text">;

export interface PlannedSegment {
  chunkNumbers: number[];
  oversize: boolean;
  /** Index into the plan's requests, absent for oversize segments. */
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
  /**
   * An output of an earlier run asked again (its latest record had no usable answer): its edit goes
   * through the cache gate for edits before the run's prompt.
   */
  earlier?: boolean;
  /** Files its own run's answer names (for keepCitedFiles), when it is an earlier run's output. */
  citedFiles?: string[];
  /** A read whose file changed on disk since: its replacement asks for a new read. */
  changedOnDisk?: true;
  /** Chunks holding lines a later edit of the run matched: never dropped. */
  anchors?: number[];
}

export type ItemKind = "large" | "small" | "exchange";

export interface PlannedBatch {
  /** Index into the plan's requests. */
  request: number;
  /** Entry ids (small outputs) or prompt ids (exchanges) behind item_1…/exchange_1… of the request. */
  ids: string[];
  /** Small outputs of an earlier run asked again (see PlannedCandidate.earlier). */
  earlier?: boolean;
}

export type PlanConfig = GuardConfig;

/** Most items (small outputs, exchanges) per classifier request. */
export const MAX_ITEMS_PER_REQUEST = 40;

function lineOffsetFor(candidate: Candidate): number | undefined {
  if (candidate.tool !== "read") return undefined;
  const offset = candidate.args.offset;
  return typeof offset === "number" && Number.isInteger(offset) && offset > 0 ? offset : 1;
}

function withoutText(chunk: Chunk): ChunkMeta {
  const { text: _text, ...meta } = chunk;
  return meta;
}

/** Builds the request for one segment of one output (run end or checkpoint wording). */
export type SegmentRequestBuilder = (
  candidate: Candidate,
  chunks: Chunk[],
  segmentIndex: number,
  segmentCount: number,
  totalLines: number,
) => ClassifierRequest;

export function planOutputs(
  found: Candidate[],
  build: SegmentRequestBuilder,
  config: PlanConfig,
  requests: ClassifierRequest[],
  kinds: ItemKind[],
  notes?: OutputNotes,
): { candidates: PlannedCandidate[]; files: Set<string> } {
  const candidates: PlannedCandidate[] = [];
  const files = new Set<string>();
  for (const candidate of found) {
    const grep = isGrepStyle(candidate.text);
    // Chunks never exceed what one request carries, so every part of every output is sent (a huge
    // output makes many requests; those the deadline leaves unanswered keep their chunks, and the
    // record says so). An oversize segment could only come from a chunking bug: it is kept, with a
    // reason in the record, never dropped silently.
    const chunks = chunkOutput(candidate.text, grep, config.maxSegmentChars);
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
      requests.push(build(candidate, segment.chunks, sentIndex++, sendable, totalLines));
      kinds.push("large");
      planned.push({ chunkNumbers, oversize: false, request: requests.length - 1 });
    }
    if (grep) for (const chunk of chunks) for (const f of chunk.files ?? []) files.add(f);
    const out: PlannedCandidate = {
      entryId: candidate.entryId,
      tool: candidate.tool,
      label: candidate.label,
      isError: candidate.isError,
      chars: candidate.text.length,
      grep,
      lineOffset: lineOffsetFor(candidate),
      chunks: chunks.map(withoutText),
      segments: planned,
    };
    candidates.push({ ...out, ...plannedMarks(notes, candidate, chunks) });
  }
  return { candidates, files };
}

/** The run's large outputs (`found`, already filtered), when together they are worth asking about. */
export function planLarge(
  found: Candidate[],
  span: RunSpan,
  config: PlanConfig,
  requests: ClassifierRequest[],
  kinds: ItemKind[],
  notes: OutputNotes,
): { candidates: PlannedCandidate[]; citedFiles: string[] } {
  if (found.length === 0 || !runWorthDistilling(found, config.minRunChars)) return { candidates: [], citedFiles: [] };
  // At run end only the disk's note is sent with a large output: an edit that superseded it is in the
  // final answer's run already, but a change from outside the agent is known from the disk alone.
  const build: SegmentRequestBuilder = (candidate, chunks, segmentIndex, segmentCount, totalLines) => {
    const stale = onDisk(notes, candidate.entryId);
    return buildRunEndRequest({
      span,
      candidate,
      chunks,
      segmentIndex,
      segmentCount,
      totalLines,
      ...(stale ? { superseded: CHANGED_ON_DISK } : {}),
    });
  };
  const { candidates, files } = planOutputs(found, build, config, requests, kinds, notes);
  const cited = config.keepCitedFiles ? citedFiles(span.answer, [...files]) : [];
  return { candidates, citedFiles: cited };
}

export function pushBatches(
  batches: Array<{ request: ClassifierRequest; ids: string[] }>,
  kind: ItemKind,
  requests: ClassifierRequest[],
  kinds: ItemKind[],
): PlannedBatch[] {
  return batches.map((b) => {
    requests.push(b.request);
    kinds.push(kind);
    return { request: requests.length - 1, ids: b.ids };
  });
}

/**
 * Earlier runs' outputs whose latest record had no usable answer (retry.ts), each asked against its own
 * run, when their edit could pay for the cache rewrite it adds (with exchangeBreakEven; `otherIds` are
 * what the pass may edit anyway). Their requests go after the pass's other requests.
 */
export function planEarlierOutputs(
  entries: SnapEntry[],
  span: RunSpan,
  config: PlanConfig,
  judged: GuardJudgments,
  pins: Pins,
  family: CacheModel["family"] | undefined,
  requests: ClassifierRequest[],
  kinds: ItemKind[],
  otherIds: string[],
  budget: PassBudget,
  positionOf: (id: string) => number,
): { candidates: PlannedCandidate[]; small: SmallItem[]; smallBatches: PlannedBatch[] } {
  const out = { candidates: [] as PlannedCandidate[], small: [] as SmallItem[], smallBatches: [] as PlannedBatch[] };
  const found = collectRetries(entries, span.startIndex, config, judged);
  // What the pass can still take, newest first, over every earlier run's outputs together.
  const fits = new Set(
    takeNewest(
      found.flatMap((g) => [
        ...g.large.filter((c) => unpinned(pins, c.entryId)).map((c) => ({ id: c.entryId, chars: c.text.length })),
        ...g.small.filter((i) => unpinned(pins, i.entryId)).map((i) => ({ id: i.entryId, chars: i.text.length })),
      ]),
      budget,
      (x) => x.chars,
      (x) => positionOf(x.id),
    ).map((x) => x.id),
  );
  const groups = found
    .map((g) => ({
      ...g,
      large: g.large.filter((c) => fits.has(c.entryId)),
      small: g.small.filter((i) => fits.has(i.entryId)),
    }))
    .filter((g) => g.large.length + g.small.length > 0);
  const ids = groups.flatMap((g) => [...g.large.map((c) => c.entryId), ...g.small.map((i) => i.entryId)]);
  if (ids.length === 0) return out;
  if (config.exchangeBreakEven && !retriesMayPay(entries, ids, retrySavingBound(groups), otherIds, family)) return out;
  const limits = { maxSegmentChars: config.maxSegmentChars, maxItemsPerRequest: MAX_ITEMS_PER_REQUEST };
  for (const group of groups) {
    const build: SegmentRequestBuilder = (candidate, chunks, segmentIndex, segmentCount, totalLines) =>
      buildRunEndRequest({ span: group.span, candidate, chunks, segmentIndex, segmentCount, totalLines });
    const planned = planOutputs(group.large, build, config, requests, kinds);
    const cited = config.keepCitedFiles ? citedFiles(group.span.answer, [...planned.files]) : [];
    for (const c of planned.candidates) out.candidates.push({ ...c, earlier: true, citedFiles: cited });
    out.small.push(...group.small);
    const batches = buildSmallRequests(group.small, group.span, "run-end", limits);
    const pushed = pushBatches(
      batches.map((r) => ({ request: r.request, ids: r.entryIds })),
      "small",
      requests,
      kinds,
    );
    for (const b of pushed) out.smallBatches.push({ ...b, earlier: true });
  }
  return out;
}
