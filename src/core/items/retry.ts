// Outputs of earlier runs that the classifier never answered for (the request failed, timed out, or the
// pass was stopped), outputs whose removal the cache gate deferred, and outputs of a run whose run-end
// pass never ran (skipped-runs.ts): a later run end asks about them again, each against its own run's
// question and answer, a bounded number of times (judged.ts).
// Earlier runs are otherwise only edited as whole exchanges: editing one of their outputs rewrites the
// prompt cache from that output on, so these edits go through the same marginal-cost gate as old images
// and exchanges, and are made only when the saving pays for the rewrite they add.

import { type CacheModel, REWRITE_FACTOR, rewriteChars, sessionRequests } from "../cache/break-even.ts";
import { chunkedFrom, collectRun, isUserMessage, resultCandidate } from "../distill/run.ts";
import type { GuardConfig } from "../shared/config.ts";
import type { Candidate, RunSpan, SnapEntry } from "../shared/types.ts";
import { dueForRetry, type GuardJudgments } from "./judged.ts";
import { firstSkippableRun, readOutputRecords, runEndSkipped, unjudgedOutputs } from "./skipped-runs.ts";
import { type SmallItem, smallItem, smallStub } from "./small.ts";
import { supersededIn } from "./superseded.ts";

/** The outputs of one earlier run to ask about again, with that run's span (question, answer, history). */
export interface RetryGroup {
  span: RunSpan;
  large: Candidate[];
  small: SmallItem[];
}

export type RetryConfig = Pick<
  GuardConfig,
  "historyExchanges" | "minResultChars" | "smallResultMinChars" | "excludeTools" | "distillErrors" | "minRunChars"
>;

/** An assistant message that asked for tools and was not cut off (its run went on). */
function asksForTools(e: SnapEntry): boolean {
  const ended = e.stopReason === "error" || e.stopReason === "aborted";
  return (e.toolCalls?.length ?? 0) > 0 && !ended;
}

/** A run whose last message is a completed answer: Pi's run end (an aborted or failed run has none). */
function answered(last: SnapEntry | undefined): boolean {
  return (
    last?.role === "assistant" &&
    (last.toolCalls?.length ?? 0) === 0 &&
    last.stopReason !== "error" &&
    last.stopReason !== "aborted"
  );
}

/**
 * Outputs before the prompt at `promptIndex` whose latest guard result had no usable answer (or was
 * deferred) and that have not used up their passes, and outputs of runs whose run-end pass never judged
 * them (skipped-runs.ts) that no record names, grouped by the run they belong to. They must still pass
 * the candidate rules (unedited, text only, …) and be large or small enough to be judged; a skipped
 * run's large outputs only as its own run end would have judged them (together `minRunChars` at least).
 */
export function collectRetries(
  entries: SnapEntry[],
  promptIndex: number,
  config: RetryConfig,
  judged: Pick<GuardJudgments, "retry">,
): RetryGroup[] {
  if (promptIndex <= 0) return [];
  const records = readOutputRecords(entries);
  if (judged.retry.size === 0 && records.named.size === 0) return [];
  const end = Math.min(promptIndex, entries.length);
  // Run starts (prompts that are not steering, as run.ts isSteering tells) and each run's outputs, in one pass.
  const starts: number[] = [];
  const outputs: number[][] = [];
  /** Each run's last user, assistant or tool-result message: whether it ended with an answer. */
  const lasts: Array<SnapEntry | undefined> = [];
  let previous: SnapEntry | undefined;
  for (let i = 0; i < end; i++) {
    const e = entries[i] as SnapEntry;
    const steering =
      previous !== undefined &&
      (previous.role === "toolResult" || (previous.role === "assistant" && asksForTools(previous)));
    if (e.visible && e.role !== undefined && e.role !== "custom") previous = e;
    if (isUserMessage(e) && !steering) {
      starts.push(i);
      outputs.push([]);
      lasts.push(e);
      continue;
    }
    if (starts.length === 0) continue;
    if (e.role === "toolResult") (outputs.at(-1) as number[]).push(i);
    if (e.visible && (e.role === "assistant" || e.role === "toolResult" || e.role === "user"))
      lasts[lasts.length - 1] = e;
  }
  const groups: RetryGroup[] = [];
  const guarded = firstSkippableRun(starts, end, records);
  for (let run = 0; run < starts.length; run++) {
    const runEnd = starts[run + 1] ?? end;
    const indices = outputs[run] as number[];
    const ids = indices.map((i) => (entries[i] as SnapEntry).id);
    const skipped = run >= guarded && answered(lasts[run]) && runEndSkipped(ids, records);
    // Checked before the run is rebuilt, which costs a pass over the session: a run whose outputs are
    // all too small to judge is left as quickly at every later run end.
    const unjudged = skipped
      ? unjudgedOutputs(
          indices.map((i) => entries[i] as SnapEntry).filter((e) => !records.named.has(e.id)),
          config,
        )
      : new Set<string>();
    const due = indices.filter((i) => {
      const id = (entries[i] as SnapEntry).id;
      return dueForRetry(id, judged) || unjudged.has(id);
    });
    if (due.length === 0) continue;
    const span = collectRun(entries, config.historyExchanges, runEnd);
    if (!span) continue;
    const large: Candidate[] = [];
    const small: SmallItem[] = [];
    let superseded: Map<string, string> | undefined;
    for (const i of due) {
      const e = entries[i] as SnapEntry;
      const c = resultCandidate(e, span.calls, config);
      if (!c) continue;
      if (c.text.length >= chunkedFrom(config)) {
        large.push(c);
      } else if (config.smallResultMinChars > 0 && c.text.length >= config.smallResultMinChars) {
        superseded ??= supersededIn(entries, span);
        const item = smallItem(c, superseded.get(c.entryId));
        if (item) small.push(item);
      }
    }
    if (large.length > 0 || small.length > 0) groups.push({ span, large, small });
  }
  return groups;
}

/** The most a group's edits could take out of the context: every output replaced by a one-line stub. */
export function retrySavingBound(groups: readonly RetryGroup[]): number {
  let saving = 0;
  for (const g of groups) {
    for (const c of g.large) saving += c.text.length;
    for (const item of g.small) saving += Math.max(0, item.chars - smallStub(item).length);
  }
  return saving;
}

/**
 * Before any request: whether editing these outputs could pay for the cache rewrite they add, at best.
 * `family` undefined means the provider is not known, so the most favourable one is assumed: OpenAI Codex
 * rewrites everything on any edit, so with other edits possible the outputs would ride along for free.
 * When this says no, nothing is asked and nothing is recorded: the outputs stay due for a later run end.
 */
export function retriesMayPay(
  entries: readonly SnapEntry[],
  retryIds: readonly string[],
  savingBound: number,
  otherIds: readonly string[],
  family?: CacheModel["family"],
): boolean {
  if (retryIds.length === 0) return false;
  const families: Array<CacheModel["family"]> = family ? [family] : ["other", "openai-codex"];
  const requests = sessionRequests(entries);
  return families.some((f) => {
    const marginal = Math.max(
      0,
      rewriteChars(entries, [...otherIds, ...retryIds], f) - rewriteChars(entries, otherIds, f),
    );
    return marginal === 0 || savingBound * requests >= REWRITE_FACTOR[f] * marginal;
  });
}

/** One edit an earlier run's output would get, and the characters it takes out. */
export interface RetryEdit {
  entryId: string;
  savingChars: number;
}

/**
 * After judging: the edits that pay for the rewrite they add on top of the pass's other edits. The
 * rewrite starts at the earliest edited entry, so the earliest edits are dropped first until the rest
 * pays (a marginal cost of zero always does); the dropped ones are deferred.
 */
export function retryEditsThatPay(
  entries: readonly SnapEntry[],
  edits: readonly RetryEdit[],
  otherEditIds: readonly string[],
  family: CacheModel["family"],
  factor = REWRITE_FACTOR[family],
  requests = sessionRequests(entries),
): Set<string> {
  if (edits.length === 0) return new Set();
  const wanted = new Set(edits.map((x) => x.entryId));
  const position = new Map<string, number>();
  for (let i = 0; i < entries.length; i++) {
    const id = (entries[i] as SnapEntry).id;
    if (wanted.has(id)) position.set(id, i);
  }
  const ordered = [...edits].sort((a, b) => (position.get(a.entryId) ?? 0) - (position.get(b.entryId) ?? 0));
  const base = rewriteChars(entries, otherEditIds, family);
  for (let k = 0; k < ordered.length; k++) {
    const set = ordered.slice(k);
    const ids = set.map((x) => x.entryId);
    const marginal = Math.max(0, rewriteChars(entries, [...otherEditIds, ...ids], family) - base);
    const saving = set.reduce((n, x) => n + Math.max(0, x.savingChars), 0);
    if (marginal === 0 || saving * requests >= factor * marginal) return new Set(ids);
  }
  return new Set();
}
