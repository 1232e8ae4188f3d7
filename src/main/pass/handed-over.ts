// A pass handed over to a prompt (docs/DESIGN.md, a prompt is never held): the hook stops
// waiting for the classifier, but the queue goes on. What has been answered finishes now and lands at
// once; the items still waiting for an answer finish when the queue ends, from the same plan in the
// worker (core/distill/split.ts), and land at a later boundary. No request is cancelled or sent again.

import type { CacheModel } from "../../core/cache/break-even.ts";
import type { FinishOutput } from "../../core/distill/finish.ts";
import { buildRecord } from "../../core/records/record.ts";
import type { ClassifierOutcome, ContextEditDraft, GuardRecord, RecordResult } from "../../core/shared/types.ts";
import { knownSecrets } from "../platform/secrets.ts";
import type { QueueProgress, QueueResult } from "./classify-queue.ts";
import type { PassWorker } from "./pass-worker.ts";

/** What the classifier did in a pass (for the circuit breaker). */
export type ClassifierStats = Pick<QueueResult, "sent" | "answered" | "aborted" | "lastError">;

/** What a part of a pass spent on the classifier, for its record. */
type PartQueue = ClassifierStats & Pick<QueueResult, "ms" | "timedOut">;

/** One finish of a pass, with the outcomes its record counts. */
export interface FinishedPart {
  finished: FinishOutput;
  outcomes: readonly ClassifierOutcome[];
  queued: PartQueue;
}

/**
 * The waiting part of a handed-over pass: its drafts (checked when they land) and record, and what the
 * classifier did in the whole pass (reported once, when it is known).
 */
export interface PassRest {
  edits: ContextEditDraft[];
  record: GuardRecord;
  classifier: ClassifierStats;
}

interface Finishing {
  worker: PassWorker;
  passId: string;
  family: CacheModel["family"] | undefined;
  phase: GuardRecord["phase"];
  modelRef: string;
  /** When the queue started (performance.now()). */
  queueStarted: number;
}

export function classifierOf(q: ClassifierStats): ClassifierStats {
  return {
    sent: q.sent,
    answered: q.answered,
    aborted: q.aborted,
    ...(q.lastError !== undefined ? { lastError: q.lastError } : {}),
  };
}

/** The record of one finish of a pass. */
export function partRecord(
  phase: GuardRecord["phase"],
  model: string,
  results: RecordResult[],
  outcomes: readonly ClassifierOutcome[],
  queued: PartQueue,
): GuardRecord {
  let inputTokens = 0;
  let costUsd = 0;
  for (const o of outcomes) {
    // A figure that is not a finite number says nothing about the call; the record caps the sums.
    if (Number.isFinite(o.inputTokens)) inputTokens += o.inputTokens as number;
    if (Number.isFinite(o.costUsd)) costUsd += o.costUsd as number;
  }
  return buildRecord({
    phase,
    model,
    results,
    requests: queued.sent,
    inputTokens,
    costUsd,
    ms: queued.ms,
    timedOut: queued.timedOut,
    secrets: knownSecrets(),
  });
}

/** Resolves true when `handOver` aborts before the queue ends, false when the queue ends first. */
export function handedOver(queuing: Promise<unknown>, handOver: AbortSignal): Promise<boolean> {
  if (handOver.aborted) return Promise.resolve(true);
  return new Promise((resolve) => {
    const stop = () => resolve(true);
    handOver.addEventListener("abort", stop, { once: true });
    const end = () => {
      handOver.removeEventListener("abort", stop);
      resolve(false);
    };
    queuing.then(end, end);
  });
}

/**
 * Finishes what has been answered now, and returns it with the waiting part, which finishes once the
 * queue has ended (it rejects when the worker fails; the first part has then recorded the waiting items
 * `aborted`, to be asked again later).
 */
export async function finishHandedOver(
  queuing: Promise<QueueResult>,
  progress: QueueProgress,
  count: number,
  { worker, passId, family, phase, modelRef, queueStarted }: Finishing,
): Promise<{ answered: FinishedPart; waiting: Promise<PassRest> }> {
  const msThen = Math.round(performance.now() - queueStarted);
  const pending: number[] = [];
  const now: ClassifierOutcome[] = [];
  for (let i = 0; i < count; i++) {
    const final = progress.final.get(i);
    if (!final) pending.push(i);
    now.push(final ?? { status: "aborted" });
  }
  const sentThen = progress.sent;
  const answeredThen = now.filter((o) => o.status === "stop").length;
  const finished = await worker.finish(passId, now, family, { pending, part: "answered" });
  const waiting = queuing.then(async (q): Promise<PassRest> => {
    const rest = await worker.finish(passId, q.outcomes, family, { pending, part: "waiting" });
    const queued: PartQueue = {
      ...classifierOf(q),
      sent: q.sent - sentThen,
      ms: Math.max(0, q.ms - msThen),
      timedOut: q.timedOut,
    };
    const outcomes = pending.map((i) => q.outcomes[i] as ClassifierOutcome);
    const record = partRecord(phase, modelRef, rest.results, outcomes, queued);
    return { edits: rest.drafts, record, classifier: classifierOf(q) };
  });
  // swallow-ok: Whoever takes the rest hears of its failure; until then it is not an unhandled rejection.
  waiting.catch(() => undefined);
  // The first part's classifier figures are partial: the breaker hears of the whole pass, from the rest.
  const queued: PartQueue = { sent: sentThen, answered: answeredThen, aborted: true, ms: msThen, timedOut: false };
  return { answered: { finished, outcomes: now, queued }, waiting };
}
