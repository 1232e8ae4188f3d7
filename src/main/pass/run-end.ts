// One run-end pass: the plan and the rendering run in the worker pool, the classifier requests go
// through the queue in between. Only data crosses threads, and after the first pass only new entries.
import { randomUUID } from "node:crypto";
import type { CacheModel } from "../../core/cache/break-even.ts";
import type { CheckpointCacheView } from "../../core/cache/checkpoint.ts";
import { buildRecord, recordDraft } from "../../core/records/record.ts";
import type { GuardConfig } from "../../core/shared/config.ts";
import type {
  ClassifierRequest,
  ContextEditDraft,
  CustomDraft,
  GuardRecord,
  SnapEntry,
} from "../../core/shared/types.ts";
import { unwrapFailure, type WorkerFailure } from "../../workers/pass/failures.ts";
import { type PackedValues, packedCount, unpackValue } from "../../workers/pass/packed-values.ts";
import type { SyncEntry, SyncInput, TextPiece } from "../../workers/pass/session-store.ts";
import type { PlanSummary } from "../../workers/tasks.ts";
import { callback } from "../platform/callbacks.ts";
import { InFlight } from "../platform/in-flight.ts";
import { nextTurn } from "../platform/pace.ts";
import type { TaskRunner } from "../platform/pool.ts";
import { knownSecrets } from "../platform/secrets.ts";
import { type ClassifyFn, classifyAll, type QueueResult, type RequestSource } from "./classify-queue.ts";
import type { ProjectedLike, SnapshotBuilder } from "./snapshot.ts";
import { type Validation, validateEditsPaced } from "./validate.ts";
import { WorkerMirror } from "./worker-mirror.ts";

export interface RunEndDeps {
  runner: TaskRunner;
  /** Absent when the classifier is unavailable: then only what needs no classifier (old images) is done. */
  classify?: ClassifyFn;
  /** How the main model's prompt cache reacts to edits (for the break-even gates). */
  family?: CacheModel["family"];
  config: GuardConfig;
  modelRef: string;
  /** What the pass worker already holds; without one every entry is sent. */
  mirror?: WorkerMirror;
  /** Checks the edits against the context they will be applied to; rejected ones become "kept". */
  validate?: (edits: ContextEditDraft[]) => Validation | Promise<Validation>;
  /** Called once the pass knows it will ask the classifier (for the busy status). */
  onJudging?: () => void;
  /** Stops the classifier requests early (the agent's signal, mid-run). */
  signal?: AbortSignal;
  /** Most time one worker task (plan, finish) may take before its worker is stopped. Default 30 s. */
  workerTimeoutMs?: number;
}

/** A stuck worker task (a pathological input, a bug) must not hold the hook forever. */
export const WORKER_TASK_TIMEOUT_MS = 30_000;

/**
 * Runs one worker task under the pass's worker time limit (the pool terminates the worker on abort); a
 * coded failure of the task becomes a PassWorkerError with its code.
 */
async function inWorker<T>(
  deps: Pick<RunEndDeps, "workerTimeoutMs">,
  task: (signal: AbortSignal) => Promise<T | WorkerFailure>,
): Promise<T> {
  const ms = deps.workerTimeoutMs ?? WORKER_TASK_TIMEOUT_MS;
  const controller = new AbortController();
  const timer = setTimeout(
    callback("worker-timer", () => controller.abort()),
    ms,
  );
  try {
    return unwrapFailure(await task(controller.signal));
  } catch (error) {
    if (controller.signal.aborted) throw new Error(`a worker task took longer than ${ms} ms and was stopped`);
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

export interface PassOptions {
  phase: "run-end" | "mid-run";
  /** Mid-run: what the main model's cache can still read, for the break-even rule. */
  cache?: CheckpointCacheView;
}

export type RunEndResult =
  | { status: "skipped"; reason: string }
  | {
      status: "done";
      edits: ContextEditDraft[];
      record: GuardRecord;
      recordDraft: CustomDraft;
      /** What the classifier did in this pass (for the circuit breaker). */
      classifier: Pick<QueueResult, "sent" | "answered" | "aborted" | "lastError">;
    };

/**
 * Size of one message to the worker when a large sync is sent ahead of the plan: about a millisecond of
 * cloning. Counted in characters, plus ENTRY_WEIGHT per entry for the fields every entry carries.
 */
export const SYNC_SLICE_CHARS = 500_000;
const ENTRY_WEIGHT = 1000;

const headChars = (heads: SnapEntry["imageHeads"]) => heads?.reduce((n, h) => n + h.head.length, 0) ?? 0;
const sentChars = (e: SnapEntry) =>
  ENTRY_WEIGHT + e.text.length + (e.rawText?.length ?? 0) + headChars(e.imageHeads) + headChars(e.rawImageHeads);

/**
 * Sends what the worker does not hold yet in slices of about SYNC_SLICE_CHARS, yielding between them,
 * so a pass over a large session or a huge output never blocks the main thread on one big message. A
 * text larger than a slice travels as pieces ahead of its entry. Returns false if the store turned out
 * to be another than the mirror thought (it has been reset; the caller starts over).
 */
async function sendAhead(
  fresh: SyncEntry[],
  deps: Pick<RunEndDeps, "runner" | "workerTimeoutMs">,
  mirror: WorkerMirror,
  rest: "with-plan" | "now" = "with-plan",
  signal?: AbortSignal,
): Promise<boolean> {
  const send = async (part: SyncInput): Promise<boolean> => {
    // The worker answers within the same event-loop turn when it is quick: without a turn of our own
    // between messages, several slices would go out back to back in one block.
    await nextTurn();
    signal?.throwIfAborted();
    const out = await inWorker(deps, (taskSignal) => deps.runner.run("sync", part, { signal: taskSignal }));
    if (out.missing) {
      mirror.reset(out.storeId);
      return false;
    }
    mirror.accept(out.storeId, part);
    return true;
  };
  let slice: SyncEntry[] = [];
  let chars = 0;
  for (const e of fresh) {
    let entry: SyncEntry = e;
    for (const field of ["text", "rawText"] as const) {
      const text = entry[field];
      if (text === undefined || text.length <= SYNC_SLICE_CHARS) continue;
      for (let at = 0; at < text.length; at += SYNC_SLICE_CHARS) {
        const piece: TextPiece = { id: e.id, field, offset: at, part: text.slice(at, at + SYNC_SLICE_CHARS) };
        const ok = await send({ storeId: mirror.storeId, base: mirror.orderVersion, fresh: [], pieces: [piece] });
        if (!ok) return false;
      }
      entry =
        field === "text" ? { ...entry, text: "", textInPieces: true } : { ...entry, rawText: "", rawInPieces: true };
    }
    if (entry !== e) mirror.sentAs(entry, mirror.fullOf(e));
    slice.push(entry);
    chars += sentChars(entry);
    if (chars < SYNC_SLICE_CHARS && entry === e) continue;
    if (!(await send({ storeId: mirror.storeId, base: mirror.orderVersion, fresh: slice }))) return false;
    slice = [];
    chars = 0;
  }
  // The rest, under a slice's worth, goes with the plan's own sync, unless there is no plan to carry it.
  if (rest === "now" && slice.length > 0) {
    return send({ storeId: mirror.storeId, base: mirror.orderVersion, fresh: slice });
  }
  return true;
}

/**
 * Sends the session to the pass worker before any pass needs it (when a session's first run starts),
 * in the same paced slices a first pass would use. The first pass of a resumed session then finds the
 * worker warm and sends only what changed since. Returns the number of entries sent.
 */
export async function warmWorker(
  entries: SnapEntry[],
  deps: Pick<RunEndDeps, "runner" | "workerTimeoutMs"> & { mirror: WorkerMirror; signal?: AbortSignal },
): Promise<number> {
  const sync = await deps.mirror.preparePaced(entries);
  if (sync.fresh.length === 0) return 0;
  const sent = await sendAhead(sync.fresh, deps, deps.mirror, "now", deps.signal);
  return sent ? sync.fresh.length : 0;
}

async function planInWorker(
  entries: SnapEntry[],
  deps: RunEndDeps,
  passId: string,
  options: PassOptions,
): Promise<PlanSummary> {
  const mirror = deps.mirror ?? new WorkerMirror();
  for (let attempt = 0; attempt < 2; attempt++) {
    let sync = await mirror.preparePaced(entries);
    let chars = 0;
    for (const e of sync.fresh) chars += sentChars(e);
    if (chars >= SYNC_SLICE_CHARS) {
      // Too much for the plan's own message: send it ahead, then the plan's sync carries the rest.
      if (!(await sendAhead(sync.fresh, deps, mirror))) continue;
      sync = await mirror.preparePaced(entries);
    }
    const out = await inWorker(deps, (signal) =>
      deps.runner.run(
        "plan",
        { sync, config: deps.config, passId, phase: options.phase, cache: options.cache },
        { signal },
      ),
    );
    if ("plan" in out) {
      mirror.accept(out.storeId, sync);
      return out.plan;
    }
    mirror.reset(out.storeId);
  }
  throw new Error("the pass worker could not take the session snapshot");
}

/**
 * Time kept back after the classifier queue, as a share of the time the pass took to plan. Measured
 * (bench/RESULTS.md, step by step): finishing costs about a fifth of planning, transport included.
 */
const FINISH_SHARE_OF_PLAN = 0.3;

/** Classifier outcomes per message to the worker (each carries the answers to up to 40 questions). */
const OUTCOME_SLICE = 100;

/**
 * The pass's requests, fetched from the worker a window at a time as the queue starts them. The next
 * window is asked for as soon as one is first used, so a freed slot does not wait for a worker round
 * trip; a window is let go once each of its requests has been taken (a retry fetches it again), so a
 * long pass does not keep every request body it sent alive on the main thread.
 */
function requestsFromWorker(deps: RunEndDeps, passId: string, count: number, window: number): RequestSource {
  const windows = new InFlight<{ list: Promise<PackedValues>; taken: Set<number> }>();
  let furthest = -1;
  const fetch = (from: number) => {
    furthest = Math.max(furthest, from);
    let held = windows.get(from);
    if (!held) {
      const to = Math.min(count, from + window);
      const list = inWorker(deps, (signal) => deps.runner.run("requests", { passId, from, to }, { signal }));
      const made = { list, taken: new Set<number>() };
      windows.set(from, made);
      // A failed fetch is tried again by the request's retry.
      list.catch(() => windows.release(from, made));
      held = made;
    }
    return held;
  };
  return {
    count,
    async get(index) {
      const from = index - (index % window);
      const held = fetch(from);
      if (from + window < count && from + window > furthest) fetch(from + window);
      const list = await held.list;
      held.taken.add(index);
      if (held.taken.size === packedCount(list)) windows.release(from, held);
      return unpackValue<ClassifierRequest>(list, index - from);
    },
  };
}

/**
 * A pass over Pi's projection as the hooks run it: the snapshot is built paced (with the builder's
 * reuse by position), and the drafts are validated against that same projection, paced, with the
 * builder's positions as hints.
 */
export async function runPassOnContext(
  context: readonly ProjectedLike[],
  snapshots: SnapshotBuilder,
  deps: Omit<RunEndDeps, "validate">,
  options: PassOptions,
): Promise<RunEndResult> {
  const entries = await snapshots.entriesPaced(context);
  const validate = (edits: ContextEditDraft[]) => validateEditsPaced(edits, context, (id) => snapshots.positionOf(id));
  return runPass(entries, { ...deps, validate }, options);
}

/** The run-end pass (agent_before_settle). */
export function distillRunEnd(entries: SnapEntry[], deps: RunEndDeps): Promise<RunEndResult> {
  return runPass(entries, deps, { phase: "run-end" });
}

/** A pass of either phase: plan in the worker, ask the classifier, finish in the worker, record. */
export async function runPass(entries: SnapEntry[], deps: RunEndDeps, options: PassOptions): Promise<RunEndResult> {
  const { config } = deps;
  // The budget counts from the start of the pass, so planning a cold session does not add to it.
  const started = performance.now();
  const passId = randomUUID();
  const plan = await planInWorker(entries, deps, passId, options);
  if (plan.status === "skip") return { status: "skipped", reason: plan.reason };
  if (!deps.classify && plan.images === 0) return { status: "skipped", reason: "no classifier" };
  if (deps.classify && plan.requestCount > 0) deps.onJudging?.();
  const requests = requestsFromWorker(deps, passId, plan.requestCount, config.concurrency);
  // What follows the classifier (outcomes to the worker, finish, results back, validation) also has to
  // fit before the deadline: it grows with the pass much like the plan did, so a share of the plan's time
  // is kept back for it.
  const planned = performance.now() - started;
  const reserve = Math.min(config.timeoutMs / 4, FINISH_SHARE_OF_PLAN * planned);
  const queued: QueueResult = deps.classify
    ? await classifyAll(requests, deps.classify, {
        concurrency: config.concurrency,
        timeoutMs: Math.max(1, config.timeoutMs - planned - reserve),
        signal: deps.signal,
      })
    : {
        outcomes: Array.from({ length: plan.requestCount }, () => ({
          status: "error" as const,
          error: "no classifier",
        })),
        sent: 0,
        answered: 0,
        aborted: false,
        gaveUp: false,
        ms: 0,
        timedOut: false,
      };
  // Many outcomes go ahead of finish in slices, each a message of bounded size.
  const inline = queued.outcomes.length <= OUTCOME_SLICE;
  for (let from = 0; !inline && from < queued.outcomes.length; from += OUTCOME_SLICE) {
    const list = queued.outcomes.slice(from, from + OUTCOME_SLICE);
    await nextTurn();
    await inWorker(deps, (signal) => deps.runner.run("outcomes", { passId, from, list }, { signal }));
  }
  const finished = await inWorker(deps, (signal) =>
    deps.runner.run(
      "finish",
      { passId, outcomes: inline ? queued.outcomes : undefined, config, family: deps.family },
      { signal },
    ),
  );
  let edits = finished.drafts;
  let results = finished.results;
  // A large output comes back in parts, each a message of bounded size.
  for (let part = 0; part < finished.parts; part++) {
    const more = await inWorker(deps, (signal) => deps.runner.run("finishPart", { passId }, { signal }));
    edits = edits.concat(more.drafts);
    results = results.concat(more.results);
  }
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
  let inputTokens = 0;
  let costUsd = 0;
  for (const o of queued.outcomes) {
    // A figure that is not a finite number says nothing about the call; the record caps the sums.
    if (Number.isFinite(o.inputTokens)) inputTokens += o.inputTokens as number;
    if (Number.isFinite(o.costUsd)) costUsd += o.costUsd as number;
  }
  const record = buildRecord({
    phase: options.phase,
    model: deps.modelRef,
    results,
    requests: queued.sent,
    inputTokens,
    costUsd,
    ms: queued.ms,
    timedOut: queued.timedOut,
    secrets: knownSecrets(),
  });
  const classifier = {
    sent: queued.sent,
    answered: queued.answered,
    aborted: queued.aborted,
    ...(queued.lastError !== undefined ? { lastError: queued.lastError } : {}),
  };
  return { status: "done", edits, record, recordDraft: recordDraft(record), classifier };
}
