// The second half of a pass, in the pass worker: the classifier's outcomes turned into decisions, rendered
// replacements and record results, with the break-even rules applied again to what the edits really save.

import { type CacheModel, exchangeGate, REWRITE_FACTOR, rewriteChars, sessionRequests } from "../cache/break-even.ts";
import { deferEditsThatDoNotPay } from "../cache/edit-gate.ts";
import { type Exchange, exchangeDrafts, exchangeResult, interpretExchanges, withKeyFacts } from "../items/exchanges.ts";
import { type ImageItem, imageDraft, imageResult } from "../items/images.ts";
import { type KeepRule, keepReason } from "../items/keep-rules.ts";
import { retryEditsThatPay } from "../items/retry.ts";
import { interpretSmall, smallDraft, smallResult } from "../items/small.ts";
import { changedOnDiskStub, staleReadResult } from "../items/stale-reads.ts";
import type { GuardConfig } from "../shared/config.ts";
import type {
  Chunk,
  ClassifierOutcome,
  ContextEditDraft,
  RecordResult,
  SegmentDecision,
  SnapEntry,
} from "../shared/types.ts";
import { decideResult } from "./decide.ts";
import { interpret, oversizeDecision } from "./interpret.ts";
/** Chunk boundaries without their text: the text is a slice of the output the caller already has. */
import type { ChunkMeta, RunPlan } from "./plan.ts";

export type FinishConfig = Pick<
  GuardConfig,
  | "keepWholeThreshold"
  | "focusWholeThreshold"
  | "chunkKeepThreshold"
  | "noneThreshold"
  | "maxKeepRatio"
  | "keepCitedFiles"
  | "smallKeepThreshold"
  | "exchangeOmitThreshold"
  | "exchangeBreakEven"
  | "exchangeMinSavingChars"
  | "midRunChunkKeepThreshold"
>;

export interface FinishInput {
  plan: RunPlan;
  /** The snapshot the plan was made from (for the break-even gate). */
  entries: SnapEntry[];
  /** The output text of each large candidate, same order as plan.candidates. */
  texts: string[];
  /** One outcome per planned request, same order. */
  outcomes: ClassifierOutcome[];
  config: FinishConfig;
  /** How the main model's prompt cache reacts to edits. */
  family?: CacheModel["family"];
}

export interface FinishOutput {
  drafts: ContextEditDraft[];
  results: RecordResult[];
}

function restoreChunks(meta: ChunkMeta[], text: string): Chunk[] {
  return meta.map((m) => ({ ...m, text: text.slice(m.start, m.end) }));
}

const outcomeAt = (outcomes: ClassifierOutcome[], i: number | undefined): ClassifierOutcome =>
  (i === undefined ? undefined : outcomes[i]) ?? { status: "timeout" };

/** A judged output of an earlier run: its edit (when judged not needed) waits for the cache gate. */
interface EarlierOutcome {
  draft?: ContextEditDraft;
  result: RecordResult;
}

function finishLarge(
  input: FinishInput,
  drafts: ContextEditDraft[],
  results: RecordResult[],
  earlier: EarlierOutcome[],
): void {
  const thresholds =
    input.plan.phase === "mid-run"
      ? { ...input.config, chunkKeepThreshold: input.config.midRunChunkKeepThreshold }
      : input.config;
  input.plan.candidates.forEach((planned, i) => {
    const text = input.texts[i] ?? "";
    if (text.length !== planned.chars) throw new Error(`output of ${planned.entryId} changed during the pass`);
    const chunks = restoreChunks(planned.chunks, text);
    const decisions: SegmentDecision[] = planned.segments.map((segment) =>
      segment.oversize || segment.request === undefined
        ? oversizeDecision(segment.chunkNumbers)
        : interpret(outcomeAt(input.outcomes, segment.request), segment.chunkNumbers, thresholds),
    );
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
      citedFiles: planned.citedFiles ?? input.plan.citedFiles,
      keepCitedFiles: input.config.keepCitedFiles,
      maxKeepRatio: input.config.maxKeepRatio,
      ...(planned.anchors ? { anchors: planned.anchors } : {}),
      ...(planned.changedOnDisk ? { changedOnDisk: true } : {}),
    });
    const rule = input.plan.kept?.[planned.entryId];
    const draft: ContextEditDraft | undefined =
      decision.replacement !== undefined && decision.outcome !== "kept" && rule === undefined
        ? {
            type: "context_edit",
            targetId: planned.entryId,
            replacement: { content: [{ type: "text", text: decision.replacement }] },
          }
        : undefined;
    const judged: RecordResult = {
      kind: "large",
      entryId: planned.entryId,
      tool: planned.tool,
      label: planned.label,
      outcome: decision.outcome,
      reason: decision.reason,
      beforeChars: decision.beforeChars,
      afterChars: decision.afterChars,
      jev: collapseTraces(decisions.map((d) => d.trace)),
    };
    const result = rule && decision.outcome !== "kept" ? heldByRule(judged, rule) : judged;
    if (planned.earlier) {
      earlier.push(draft ? { draft, result } : { result });
      return;
    }
    if (draft) drafts.push(draft);
    results.push(result);
  });
}

/** A result that a keep rule holds: the item stays whole and the rule is the reason (the trace stays). */
function heldByRule(result: RecordResult, rule: KeepRule): RecordResult {
  const { omitted: _omitted, ...rest } = result;
  return { ...rest, outcome: "kept", reason: keepReason(rule), afterChars: result.beforeChars };
}

/**
 * One trace per segment, except that a run of three or more identical ones (a huge output's segments
 * the deadline left unanswered: `timeout`) reads `timeout ×1200`, so a record stays small.
 */
export function collapseTraces(traces: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < traces.length; ) {
    let j = i + 1;
    while (j < traces.length && traces[j] === traces[i]) j++;
    if (j - i >= 3) out.push(`${traces[i]} ×${j - i}`);
    else for (let k = i; k < j; k++) out.push(traces[k] as string);
    i = j;
  }
  return out;
}

function finishSmall(
  input: FinishInput,
  drafts: ContextEditDraft[],
  results: RecordResult[],
  earlier: EarlierOutcome[],
): void {
  const byId = new Map(input.plan.small.map((item) => [item.entryId, item]));
  for (const batch of input.plan.smallBatches) {
    const verdicts = interpretSmall(
      outcomeAt(input.outcomes, batch.request),
      batch.ids,
      input.config.smallKeepThreshold,
    );
    for (const verdict of verdicts) {
      const item = byId.get(verdict.entryId);
      if (!item) continue;
      const rule = input.plan.kept?.[verdict.entryId];
      const draft = verdict.keep === false && rule === undefined ? smallDraft(item) : undefined;
      const judged = smallResult(item, verdict);
      const result = rule && verdict.keep === false ? heldByRule(judged, rule) : judged;
      if (batch.earlier) {
        earlier.push(draft ? { draft, result } : { result });
        continue;
      }
      if (draft) drafts.push(draft);
      results.push(result);
    }
  }
}

/** Marginal-cost gate for edits before the run's prompt that have no minimum saving (old images). */
function imagesPay(
  entries: SnapEntry[],
  items: ImageItem[],
  otherEditIds: string[],
  family: CacheModel["family"],
  factor: number,
  requests: number,
): boolean {
  const withThem = rewriteChars(entries, [...otherEditIds, ...items.map((i) => i.entryId)], family);
  const marginal = Math.max(0, withThem - rewriteChars(entries, otherEditIds, family));
  if (marginal === 0) return true;
  const saving = items.reduce((n, i) => n + Math.max(0, i.beforeChars - i.afterChars), 0);
  return saving * requests >= factor * marginal;
}

/** Adds the earlier runs' outputs that pay (or all, with the gate off); returns the ids it edits. */
function finishEarlierOutputs(
  input: FinishInput,
  outcomes: EarlierOutcome[],
  otherEditIds: string[],
  drafts: ContextEditDraft[],
  results: RecordResult[],
): string[] {
  const editing = outcomes.filter((x) => x.draft !== undefined);
  const gated = gatesOn(input) && editing.length > 0;
  const pay = gated
    ? retryEditsThatPay(
        input.entries,
        editing.map((x) => ({ entryId: x.result.entryId, savingChars: x.result.beforeChars - x.result.afterChars })),
        otherEditIds,
        input.family ?? "other",
        factorOf(input),
        requestsOf(input),
      )
    : new Set(editing.map((x) => x.result.entryId));
  for (const { draft, result } of outcomes) {
    if (draft && pay.has(result.entryId)) {
      drafts.push(draft);
      results.push(result);
    } else if (draft) {
      results.push({ ...result, outcome: "kept", reason: "deferred", afterChars: result.beforeChars });
    } else {
      results.push(result);
    }
  }
  return [...pay];
}

/**
 * The money gates apply wherever a pass is made, run end or checkpoint, unless the cache is cold (a cold
 * one makes every edit free) or the setting for that point turns them off.
 */
function gatesOn(input: FinishInput): boolean {
  const planned = input.plan.breakEven;
  if (planned) return planned.on;
  return input.plan.phase === "run-end" && input.config.exchangeBreakEven;
}

/** The requests the gates count on (fixed at plan time; the requests so far without a plan's). */
function requestsOf(input: FinishInput): number {
  return input.plan.breakEven?.requests ?? sessionRequests(input.entries);
}

function factorOf(input: FinishInput): number {
  return input.plan.breakEven?.factor ?? REWRITE_FACTOR[input.family ?? "other"];
}

/** Decisions, edits and record results for a planned pass (run end or checkpoint). */
export function finishPass(input: FinishInput): FinishOutput {
  const drafts: ContextEditDraft[] = [];
  const results: RecordResult[] = [];
  const family = input.family ?? "other";
  const earlierOutputs: EarlierOutcome[] = [];
  // The edits of a pass landing at this boundary rewrite the cache from the first of them anyway.
  const paid = input.plan.paidEdits ?? [];
  finishLarge(input, drafts, results, earlierOutputs);
  finishSmall(input, drafts, results, earlierOutputs);
  // The run's own edits, at run end and at checkpoints, with what they really save; only where the provider
  // is known to cache (an unknown one may not, and then the edit costs nothing).
  const planned = input.plan.breakEven;
  if (planned?.on && family !== "other") {
    const inRun = [...input.plan.images.filter((i) => !i.beforePrompt).map((i) => i.entryId), ...paid];
    deferEditsThatDoNotPay({ entries: input.entries, drafts, results, otherEditIds: inRun, family, gate: planned });
  }

  // Exchanges: judged unrelated ones are omitted only when the cache rewrite they add pays off.
  const exById = new Map(input.plan.exchanges.map((x) => [x.promptId, x]));
  const verdicts = input.plan.exchangeBatches.flatMap((batch) =>
    interpretExchanges(outcomeAt(input.outcomes, batch.request), batch.ids, input.config.exchangeOmitThreshold),
  );
  const held = (v: { promptId: string }) => input.plan.kept?.[v.promptId];
  const unrelated = verdicts
    .filter((v) => v.relevant === false && held(v) === undefined)
    .map((v) => exById.get(v.promptId) as Exchange);
  const inRunImages = input.plan.images.filter((i) => !i.beforePrompt);
  const otherEditIds = [...drafts.map((d) => d.targetId), ...inRunImages.map((i) => i.entryId), ...paid];
  const midRun = input.plan.phase === "mid-run";
  const gate =
    gatesOn(input) && unrelated.length > 0
      ? exchangeGate({
          entries: input.entries,
          omitted: unrelated,
          otherEditIds,
          sessionRequests: requestsOf(input),
          minSavingChars: input.config.exchangeMinSavingChars,
          family,
          factor: factorOf(input),
          // A run still going may need an old exchange again: mid-run, a small one waits for the run end.
          minSavingAlways: midRun,
        })
      : { pass: true };
  const omittedIds = new Set<string>();
  for (const verdict of verdicts) {
    const ex = exById.get(verdict.promptId);
    if (!ex) continue;
    const rule = verdict.relevant === false ? held(verdict) : undefined;
    if (rule) {
      results.push(heldByRule(exchangeResult(ex, verdict, false), rule));
      continue;
    }
    const omit = verdict.relevant === false && gate.pass;
    const shown = omit ? withKeyFacts(ex, input.entries) : ex;
    if (omit) {
      drafts.push(...exchangeDrafts(shown));
      omittedIds.add(ex.promptId);
      for (const id of ex.entryIds) omittedIds.add(id);
    }
    results.push(exchangeResult(shown, verdict, verdict.relevant === false && !gate.pass));
  }

  // Earlier runs' outputs asked again: edited only when the rewrite they add pays off, else deferred (asked
  // again at a later run end, within their passes). One inside an exchange omitted above is gone with it.
  const retryEditIds = finishEarlierOutputs(
    input,
    earlierOutputs.filter((x) => !omittedIds.has(x.result.entryId)),
    [...otherEditIds, ...omittedIds],
    drafts,
    results,
  );

  // Old images: in-run ones always go; earlier ones only when their extra rewrite pays off. An image
  // inside an exchange omitted above is gone with it.
  const earlier = input.plan.images.filter((i) => i.beforePrompt && !omittedIds.has(i.entryId));
  const earlierPay =
    earlier.length === 0 ||
    !gatesOn(input) ||
    imagesPay(
      input.entries,
      earlier,
      [...otherEditIds, ...omittedIds, ...retryEditIds],
      family,
      factorOf(input),
      requestsOf(input),
    );
  for (const item of [...(earlierPay ? earlier : []), ...inRunImages]) {
    if (omittedIds.has(item.entryId)) continue;
    drafts.push(imageDraft(item));
    results.push(imageResult(item));
  }

  // Earlier reads whose file changed on disk, under the same gate as the earlier runs' outputs. One whose
  // rewrite does not pay yet is left without a result: the disk is asked again at the next run end.
  const stale = (input.plan.staleReads ?? []).filter((item) => !omittedIds.has(item.entryId));
  const staleEdits = stale.map((item) => ({
    entryId: item.entryId,
    savingChars: item.chars - changedOnDiskStub(item).length,
  }));
  const stalePay =
    gatesOn(input) && stale.length > 0
      ? retryEditsThatPay(
          input.entries,
          staleEdits,
          [...otherEditIds, ...omittedIds, ...retryEditIds],
          family,
          factorOf(input),
          requestsOf(input),
        )
      : new Set(stale.map((item) => item.entryId));
  for (const item of stale) {
    if (!stalePay.has(item.entryId)) continue;
    const text = changedOnDiskStub(item);
    drafts.push({ type: "context_edit", targetId: item.entryId, replacement: { content: [{ type: "text", text }] } });
    results.push(staleReadResult(item));
  }
  return { drafts, results };
}
