// The first half of a pass, in the pass worker: planRunEnd / planCheckpoint (snapshot → run span → items
// of every kind → classifier requests). finish.ts is the second half (outcomes → decisions → edits and
// record results); between them the caller sends all requests through one limiter under one deadline.
// The requests for tool outputs are made in plan-outputs.ts.

import type { LandingPass } from "../boundary/landed-items.ts";
import {
  type CheckpointBatch,
  type CheckpointCacheView,
  decideCheckpoint,
  eligibleAtCheckpoint,
  laterCalls,
} from "../cache/checkpoint.ts";
import { type PlanBreakEven, planBreakEven } from "../cache/edit-gate.ts";
import { buildExchangeRequests, collectExchanges, type Exchange, exchangeMemo } from "../items/exchanges.ts";
import type { ImageItem } from "../items/images.ts";
import { dueForRetry } from "../items/judged.ts";
import { type KeepRule, ruleKeeps } from "../items/keep-rules.ts";
import { outputNotes } from "../items/output-notes.ts";
import { readOutputRecords } from "../items/skipped-runs.ts";
import { buildSmallRequests, collectSmall, type SmallItem } from "../items/small.ts";
import { type DiskCheck, earlierStaleReads, type StaleRead } from "../items/stale-reads.ts";
import { type Pins, unpinned } from "../records/pins.ts";
import type { Candidate, ClassifierRequest, PassPhase, RunSpan, SnapEntry } from "../shared/types.ts";
import { buildCheckpointRequest } from "./checkpoint-request.ts";
import { type PassBudget, passBudget, takeNewest } from "./pass-budget.ts";
import { type PlanIndex, type SessionReads, sessionReads } from "./plan-index.ts";
import {
  type ChunkMeta,
  type ItemKind,
  MAX_ITEMS_PER_REQUEST,
  type PlanConfig,
  type PlannedBatch,
  type PlannedCandidate,
  type PlannedSegment,
  planEarlierOutputs,
  planLarge,
  planOutputs,
  pushBatches,
  type SegmentRequestBuilder,
} from "./plan-outputs.ts";
import { collectCandidates, collectRun, isUserMessage } from "./run.ts";

export interface RunPlan {
  status: "run";
  phase: PassPhase;
  promptId: string;
  /** Index of the run's prompt in the snapshot. */
  promptIndex: number;
  candidates: PlannedCandidate[];
  /** Files the final answer names (for keepCitedFiles). */
  citedFiles: string[];
  small: SmallItem[];
  smallBatches: PlannedBatch[];
  exchanges: Exchange[];
  exchangeBatches: PlannedBatch[];
  images: ImageItem[];
  /** Earlier runs' reads whose file changed on disk since: replaced with no request. */
  staleReads: StaleRead[];
  /** Every classifier request of the pass, all kinds, in one list for one limiter. */
  requests: ClassifierRequest[];
  kinds: ItemKind[];
  /** The break-even gates applied after judging. */
  breakEven?: PlanBreakEven;
  /** Items a keep rule holds whatever the classifier says, by entry id (an exchange by its prompt's). */
  kept?: Record<string, KeepRule>;
  /** Entries a pass landing at the same boundary edits: the gates count their rewrite as paid. */
  paidEdits?: string[];
}

export type PassPlan = { status: "skip"; reason: string } | RunPlan;

export type { ChunkMeta, ItemKind, PlanConfig, PlannedBatch, PlannedCandidate, PlannedSegment };
export { MAX_ITEMS_PER_REQUEST };

/**
 * The run-end pass. `view.family`, when known, is the main model's cache family; without it the
 * pre-request gate for earlier runs' outputs assumes the most favourable one (finishPass applies the real
 * gate once the answers are in).
 */
export function planRunEnd(
  entries: SnapEntry[],
  config: PlanConfig,
  view?: Partial<CheckpointCacheView>,
  diskCheck?: DiskCheck,
  landing?: LandingPass,
  index?: PlanIndex,
): PassPlan {
  const span = collectRun(entries, config.historyExchanges);
  if (!span) return { status: "skip", reason: "no run" };
  const reads = sessionReads(entries, index);
  const breakEven = planBreakEven(
    entries,
    config,
    view,
    config.exchangeBreakEven,
    view?.requestsAhead ?? reads.requests(),
  );
  const requests: ClassifierRequest[] = [];
  const kinds: ItemKind[] = [];
  const limits = { maxSegmentChars: config.maxSegmentChars, maxItemsPerRequest: MAX_ITEMS_PER_REQUEST };
  const judged = reads.judged();
  // What the user restored or pinned is never judged again, by any kind of item.
  const pins = pinsAnd(reads, landing);

  const notes = outputNotes(entries, span, diskCheck, reads.run(span).superseded);
  const budget = passBudget(config);
  const positionOf = (id: string) => reads.positionOf(id);
  // An output of this run that a run end judged already (the run started before a resumed crash or a
  // steer) is not asked again unless that judgment had no usable answer.
  const atRunEnd = readOutputRecords(entries).atRunEnd;
  const fresh = (id: string) => unpinned(pins, id) && (!atRunEnd.has(id) || dueForRetry(id, judged));
  const outputs = newestOutputs(
    collectCandidates(entries, span, config, notes.superseded).filter((c) => fresh(c.entryId)),
    collectSmall(entries, span, config, notes.superseded, (c) => fresh(c.entryId)),
    budget,
    positionOf,
  );
  const large = planLarge(outputs.large, span, config, requests, kinds, notes);

  const small = outputs.small;
  const smallBatches = pushBatches(
    buildSmallRequests(small, span, "run-end", limits).map((r) => ({ request: r.request, ids: r.entryIds })),
    "small",
    requests,
    kinds,
  );

  const exchanges = newestExchanges(
    collectExchanges(
      entries,
      span.startIndex,
      config,
      exchangeMemo(entries, span.startIndex),
      judged,
      reads.exchanges(span.startIndex),
    ).filter((x) => unpinned(pins, x.promptId, ...x.entryIds)),
    budget,
  );
  const exchangeBatches = pushBatches(
    buildExchangeRequests(exchanges, span, "run-end", limits).map((r) => ({ request: r.request, ids: r.promptIds })),
    "exchange",
    requests,
    kinds,
  );

  const images = removableImages(reads, config.imageKeepTurns, span.startIndex).filter((i) =>
    unpinned(pins, i.entryId),
  );

  // With a cold cache the retries' edits cost no rewrite: they are asked whatever they could save.
  const earlierConfig = breakEven.cold ? { ...config, exchangeBreakEven: false } : config;
  const earlier = planEarlierOutputs(
    entries,
    span,
    earlierConfig,
    judged,
    pins,
    view?.family,
    requests,
    kinds,
    [
      ...large.candidates.map((c) => c.entryId),
      ...small.map((i) => i.entryId),
      ...exchanges.flatMap((x) => [x.promptId, ...x.entryIds]),
      ...images.map((i) => i.entryId),
    ],
    budget,
    positionOf,
  );
  const candidates = [...large.candidates, ...earlier.candidates];
  const judging = new Set([...earlier.candidates.map((c) => c.entryId), ...earlier.small.map((i) => i.entryId)]);
  const staleReads = earlierStaleReads(entries, span.startIndex, config, judging, diskCheck).filter((r) =>
    unpinned(pins, r.entryId),
  );

  // A planned output always gets a record result, even one that needed no request.
  if (requests.length === 0 && images.length === 0 && candidates.length === 0 && staleReads.length === 0) {
    return { status: "skip", reason: "nothing to judge" };
  }
  const kept = keptByRules(entries, span, config, "run-end", [...candidates, ...small, ...earlier.small], exchanges);
  return {
    status: "run",
    phase: "run-end",
    promptId: span.promptId,
    promptIndex: span.startIndex,
    candidates,
    citedFiles: large.citedFiles,
    small: [...small, ...earlier.small],
    smallBatches: [...smallBatches, ...earlier.smallBatches],
    exchanges,
    exchangeBatches,
    images,
    staleReads,
    requests,
    kinds,
    breakEven,
    ...(kept ? { kept } : {}),
    ...(landing?.edited.length ? { paidEdits: landing.edited } : {}),
  };
}

/**
 * The branch's pins, with what a pass landing at the same boundary judged (core/boundary/landed-items.ts)
 * and what was made while the guard was off (core/records/off-spans.ts) left alone like pinned entries.
 */
function pinsAnd(reads: SessionReads, landing: LandingPass | undefined): Pins {
  const pins = reads.pins();
  const off = reads.off();
  if (!landing?.judged.length && off.size === 0) return pins;
  // The reads are shared with later plans: the additions go on a copy.
  return { ...pins, pinned: new Set([...pins.pinned, ...(landing?.judged ?? []), ...off]) };
}

/** The run's large and small outputs that fit in the pass's budget, newest first. */
function newestOutputs(
  large: Candidate[],
  small: SmallItem[],
  budget: PassBudget,
  positionOf: (id: string) => number,
): { large: Candidate[]; small: SmallItem[] } {
  const items = [
    ...large.map((c) => ({ id: c.entryId, chars: c.text.length })),
    ...small.map((i) => ({ id: i.entryId, chars: i.text.length })),
  ];
  const fits = new Set(
    takeNewest(
      items,
      budget,
      (x) => x.chars,
      (x) => positionOf(x.id),
    ).map((x) => x.id),
  );
  if (fits.size === items.length) return { large, small };
  return { large: large.filter((c) => fits.has(c.entryId)), small: small.filter((i) => fits.has(i.entryId)) };
}

/** The newest exchanges the pass's budget has items left for (their requests carry summaries, not text). */
function newestExchanges(exchanges: Exchange[], budget: PassBudget): Exchange[] {
  return takeNewest(
    exchanges,
    budget,
    () => 0,
    (x) => x.index,
  );
}

/** The keep rules over every item the pass may remove (images are never the work's). */
function keptByRules(
  entries: SnapEntry[],
  span: RunSpan,
  config: PlanConfig,
  phase: RunPlan["phase"],
  outputs: ReadonlyArray<{ entryId: string }>,
  exchanges: readonly Exchange[],
): Record<string, KeepRule> | undefined {
  const items = [
    ...outputs.map((o) => ({ entryId: o.entryId })),
    ...exchanges.map((x) => ({ entryId: x.promptId, entryIds: x.entryIds })),
  ];
  const kept = ruleKeeps(entries, span, items, config.keepRules, phase);
  return kept.size > 0 ? Object.fromEntries(kept) : undefined;
}

/** Old images whose stub is smaller than they are (a tiny image costs less than the line standing for it). */
function removableImages(reads: SessionReads, keepTurns: number, promptIndex: number): ImageItem[] {
  return reads.images(keepTurns, promptIndex).filter((i) => i.afterChars < i.beforeChars);
}

/**
 * A mid-run checkpoint: older outputs of the running run not judged yet, old exchanges not judged in
 * this run, and old images, if together they reach the batch size and the edit pays for its cache rewrite.
 */
export function planCheckpoint(
  entries: SnapEntry[],
  config: PlanConfig,
  view: CheckpointCacheView,
  diskCheck?: DiskCheck,
  landing?: LandingPass,
  index?: PlanIndex,
): PassPlan {
  const span = collectRun(entries, config.historyExchanges);
  if (!span) return { status: "skip", reason: "no run" };
  const reads = sessionReads(entries, index);
  const { turns, memo, calls } = reads.run(span);
  const eligible = (item: { entryId: string; tool: string }) =>
    eligibleAtCheckpoint({ ...item, callId: calls.get(item.entryId) }, turns, memo, config.midRunMinAgeTurns);
  const notes = outputNotes(entries, span, diskCheck, reads.run(span).superseded);
  const superseded = notes.superseded;
  const pins = pinsAnd(reads, landing);
  const free = (item: { entryId: string }) => unpinned(pins, item.entryId);
  const budget = passBudget(config);
  const { large, small } = newestOutputs(
    collectCandidates(entries, span, config, superseded).filter((c) => eligible(c) && free(c)),
    collectSmall(entries, span, config, superseded, (c) => eligible(c) && free(c)),
    budget,
    (id) => reads.positionOf(id),
  );
  const exchanges = newestExchanges(
    collectExchanges(
      entries,
      span.startIndex,
      // A run still going is the riskiest point to omit an old exchange: optionally left to the run end.
      config.midRunExchanges ? config : { ...config, pruneExchanges: false },
      exchangeMemo(entries, span.startIndex),
      reads.judged(),
      reads.exchanges(span.startIndex),
    ).filter((x) => unpinned(pins, x.promptId, ...x.entryIds)),
    budget,
  );
  const images = removableImages(reads, config.imageKeepTurns, span.startIndex).filter(free);
  const batch: CheckpointBatch = {
    outputIds: [...large.map((c) => c.entryId), ...small.map((i) => i.entryId)],
    outputChars: large.reduce((n, c) => n + c.text.length, 0) + small.reduce((n, i) => n + i.chars, 0),
    exchanges,
    exchangeChars: exchanges.reduce((n, x) => n + Math.max(0, x.chars - x.stub.length), 0),
    images,
    imageChars: images.reduce((n, i) => n + Math.max(0, i.beforeChars - i.afterChars), 0),
  };
  let lastUser = -1;
  for (let i = entries.length - 1; i >= 0 && lastUser < 0; i--) if (isUserMessage(entries[i])) lastUser = i;
  // The rewrite is paid back by every request still to come in the session, not only in this run: the
  // session's requests so far stand in for them, as at run end.
  const requestsSoFar = view.requestsAhead ?? reads.requests();
  const decision = decideCheckpoint(entries, batch, requestsSoFar, lastUser, config, view);
  if (!decision.run) return { status: "skip", reason: decision.reason };

  const requests: ClassifierRequest[] = [];
  const kinds: ItemKind[] = [];
  const limits = { maxSegmentChars: config.maxSegmentChars, maxItemsPerRequest: MAX_ITEMS_PER_REQUEST };
  const build: SegmentRequestBuilder = (candidate, chunks, segmentIndex, segmentCount, totalLines) =>
    buildCheckpointRequest({
      span,
      candidate,
      chunks,
      segmentIndex,
      segmentCount,
      totalLines,
      laterCalls: laterCalls(turns, calls.get(candidate.entryId)),
      superseded: superseded.get(candidate.entryId),
    });
  const { candidates } = planOutputs(large, build, config, requests, kinds, notes);
  const smallBatches = pushBatches(
    buildSmallRequests(small, span, "mid-run", limits).map((r) => ({ request: r.request, ids: r.entryIds })),
    "small",
    requests,
    kinds,
  );
  const exchangeBatches = pushBatches(
    buildExchangeRequests(decision.batch.exchanges, span, "mid-run", limits).map((r) => ({
      request: r.request,
      ids: r.promptIds,
    })),
    "exchange",
    requests,
    kinds,
  );
  const kept = keptByRules(entries, span, config, "run-end", [...candidates, ...small], decision.batch.exchanges);
  return {
    status: "run",
    phase: "mid-run",
    promptId: span.promptId,
    promptIndex: span.startIndex,
    candidates,
    citedFiles: [],
    small,
    smallBatches,
    exchanges: decision.batch.exchanges,
    exchangeBatches,
    images: decision.batch.images,
    staleReads: [],
    requests,
    kinds,
    breakEven: planBreakEven(entries, config, view, config.midRunBreakEven, requestsSoFar),
    ...(kept ? { kept } : {}),
    ...(landing?.edited.length ? { paidEdits: landing.edited } : {}),
  };
}
