// One pass, in order: plan in the pass worker, ask the classifier through the queue, finish in the
// worker, validate the drafts, build the record. Every message to the worker goes through PassWorker.
// A pass handed over to a prompt finishes in two parts (handed-over.ts).
import { randomUUID } from "node:crypto";
import type { LandingPass } from "../../core/boundary/landed-items.ts";
import type { CacheModel } from "../../core/cache/break-even.ts";
import type { CheckpointCacheView } from "../../core/cache/checkpoint.ts";
import {
  type KindMisses,
  type Learned,
  MissesFold,
  sameForMisses,
  sessionMisses,
  taughtConfig,
} from "../../core/records/misses.ts";
import { recordDraft } from "../../core/records/record.ts";
import type { GuardConfig } from "../../core/shared/config.ts";
import type { ContextEditDraft, CustomDraft, GuardRecord, PassPhase, SnapEntry } from "../../core/shared/types.ts";
import { type ClassifyFn, classifyAll, type QueueProgress, type QueueResult } from "./classify-queue.ts";
import {
  type ClassifierStats,
  classifierOf,
  type FinishedPart,
  finishHandedOver,
  handedOver,
  type PassRest,
  partRecord,
} from "./handed-over.ts";
import type { PassWorker } from "./pass-worker.ts";
import type { ProjectedLike, SnapshotBuilder } from "./snapshot.ts";
import { type Validation, validateEditsPaced } from "./validate.ts";

/** What one pass runs with. */
export interface PassDeps {
  /** The session's side of the pass worker (it knows what the worker holds). */
  worker: PassWorker;
  /** Absent when the classifier is unavailable: then only what needs no classifier (old images) is done. */
  classify?: ClassifyFn;
  /** How the main model's prompt cache reacts to edits (for the break-even gates). */
  family?: CacheModel["family"];
  config: GuardConfig;
  modelRef: string;
  /** Checks the edits against the context they will be applied to; rejected ones become "kept". */
  validate?: (edits: ContextEditDraft[]) => Validation | Promise<Validation>;
  /** Called once the pass knows it will ask the classifier (for the busy status). */
  onJudging?: () => void;
  /** Stops the classifier requests early (the agent's signal, mid-run). */
  signal?: AbortSignal;
  /**
   * Stops the wait, not the requests (a prompt was sent): what has been answered finishes at once, and
   * the rest of the pass is the result's `rest`.
   */
  handOver?: AbortSignal;
}

export interface PassOptions {
  phase: PassPhase;
  /** Mid-run: what the main model's cache can still read, for the break-even rule. */
  cache?: CheckpointCacheView;
  /** The session's working directory: reads of the run whose file changed on disk since are stale. */
  cwd?: string;
  /** What the branch's misses moved toward keeping (set by runPass), for the record. */
  learned?: Learned[];
  /** A pass landing at the same boundary: what it judged is left alone, its edits' rewrite is paid. */
  landing?: LandingPass;
  /** The branch's misses when the caller keeps them (default: counted from the entries). */
  misses?: readonly KindMisses[];
}

/** Each session's misses, counted entry by entry along the snapshots its builder made. */
const missFolds = new WeakMap<SnapshotBuilder, { entries: readonly SnapEntry[]; fold: MissesFold }>();

/** sessionMisses of `entries`, adding only what changed since the builder's previous snapshot. */
function branchMisses(entries: readonly SnapEntry[], snapshots: SnapshotBuilder): readonly KindMisses[] {
  const held = missFolds.get(snapshots);
  const changes = held && snapshots.changesBetween(held.entries, entries);
  let fold = held?.fold;
  let from = held?.entries.length ?? 0;
  const kept =
    held !== undefined &&
    changes !== undefined &&
    entries.length >= held.entries.length &&
    changes.changed.every((i) => sameForMisses(held.entries[i] as SnapEntry, entries[i] as SnapEntry));
  if (kept) {
    for (let i = changes.from; i < held.entries.length; i++) {
      if (!sameForMisses(held.entries[i] as SnapEntry, entries[i] as SnapEntry)) fold = undefined;
    }
  }
  if (!kept || fold === undefined) {
    fold = new MissesFold();
    from = 0;
  }
  for (let i = from; i < entries.length; i++) fold.add(entries[i] as SnapEntry);
  missFolds.set(snapshots, { entries, fold });
  return fold.misses();
}

export type PassResult =
  | { status: "skipped"; reason: string }
  | {
      status: "done";
      edits: ContextEditDraft[];
      record: GuardRecord;
      recordDraft: CustomDraft;
      /** What the classifier did in this pass (for the circuit breaker). */
      classifier: ClassifierStats;
      /** Handed over: the items still waiting for answers, finished once they come. */
      rest?: Promise<PassRest>;
    };

/**
 * Time kept back after the classifier queue, as a share of the time the pass took to plan. Measured
 * (bench/RESULTS.md, step by step): finishing costs about a fifth of planning, transport included.
 */
const FINISH_SHARE_OF_PLAN = 0.3;

/**
 * A pass over Pi's projection as the hooks run it: the snapshot is built paced (with the builder's
 * reuse by position), and the drafts are validated against that same projection, paced, with the
 * builder's positions as hints.
 */
export async function runPassOnContext(
  context: readonly ProjectedLike[],
  snapshots: SnapshotBuilder,
  deps: Omit<PassDeps, "validate">,
  options: PassOptions,
): Promise<PassResult> {
  const entries = await snapshots.entriesPaced(context);
  const validate = (edits: ContextEditDraft[]) => validateEditsPaced(edits, context, (id) => snapshots.positionOf(id));
  return runPass(entries, { ...deps, validate }, { ...options, misses: branchMisses(entries, snapshots) });
}

/** A pass of either phase: plan in the worker, ask the classifier, finish in the worker, record. */
export async function runPass(entries: SnapEntry[], given: PassDeps, options: PassOptions): Promise<PassResult> {
  // What the branch's recalls and restores taught: a branch without misses is judged as set.
  const taught = taughtConfig(given.config, options.misses ?? sessionMisses(entries));
  const learning = taught.learned.length > 0;
  const deps = learning ? { ...given, config: taught.config } : given;
  if (learning) options = { ...options, learned: taught.learned };
  const { config } = deps;
  // The budget counts from the start of the pass, so planning a cold session does not add to it.
  const started = performance.now();
  const passId = randomUUID();
  const { worker } = deps;
  const plan = await worker.plan(entries, {
    passId,
    config,
    phase: options.phase,
    cache: options.cache,
    ...(options.cwd !== undefined ? { cwd: options.cwd } : {}),
    ...(options.landing ? { landing: options.landing } : {}),
  });
  if (plan.status === "skip") return { status: "skipped", reason: plan.reason };
  if (!deps.classify && plan.images === 0 && !plan.staleReads) return { status: "skipped", reason: "no classifier" };
  if (deps.classify && plan.requestCount > 0) deps.onJudging?.();
  const requests = worker.requests(passId, plan.requestCount, config.concurrency);
  // What follows the classifier (outcomes to the worker, finish, results back, validation) also has to
  // fit before the deadline: it grows with the pass much like the plan did, so a share of the plan's time
  // is kept back for it.
  const planned = performance.now() - started;
  const reserve = Math.min(config.timeoutMs / 4, FINISH_SHARE_OF_PLAN * planned);
  const progress: QueueProgress = { final: new Map(), sent: 0 };
  const queuing: Promise<QueueResult> = deps.classify
    ? classifyAll(requests, deps.classify, {
        concurrency: config.concurrency,
        timeoutMs: Math.max(1, config.timeoutMs - planned - reserve),
        signal: deps.signal,
        progress,
      })
    : Promise.resolve(unasked(plan.requestCount));
  const finishing = {
    worker,
    passId,
    family: deps.family,
    phase: options.phase,
    modelRef: deps.modelRef,
    queueStarted: performance.now(),
  };
  const handOver = deps.classify ? deps.handOver : undefined;
  if (handOver && (await handedOver(queuing, handOver)) && progress.final.size < plan.requestCount) {
    const parts = await finishHandedOver(queuing, progress, plan.requestCount, finishing);
    const first = await done(parts.answered, deps, options);
    return { ...first, rest: parts.waiting };
  }
  const queued = await queuing;
  const finished = await worker.finish(passId, queued.outcomes, deps.family);
  return done({ finished, outcomes: queued.outcomes, queued }, deps, options);
}

/** The outcomes of a pass that had no classifier to ask. */
function unasked(count: number): QueueResult {
  return {
    outcomes: Array.from({ length: count }, () => ({ status: "error" as const, error: "no classifier" })),
    sent: 0,
    answered: 0,
    aborted: false,
    gaveUp: false,
    ms: 0,
    timedOut: false,
  };
}

/** Validates a finished pass's drafts and builds its record. */
async function done(
  { finished, outcomes, queued }: FinishedPart,
  deps: PassDeps,
  options: PassOptions,
): Promise<Extract<PassResult, { status: "done" }>> {
  let edits = finished.drafts;
  let results = finished.results;
  if (deps.validate) {
    const { valid, dropped } = await deps.validate(edits);
    if (dropped.length > 0) {
      const why = new Map(dropped.map((d) => [d.draft.targetId, d.why]));
      edits = valid;
      results = results.map((r) =>
        why.has(r.entryId)
          ? { ...r, outcome: "kept", reason: `rejected: ${why.get(r.entryId)}`, afterChars: r.beforeChars }
          : r,
      );
    }
  }
  const part = partRecord(options.phase, deps.modelRef, results, outcomes, queued);
  const record = options.learned ? { ...part, learned: options.learned } : part;
  return { status: "done", edits, record, recordDraft: recordDraft(record), classifier: classifierOf(queued) };
}
