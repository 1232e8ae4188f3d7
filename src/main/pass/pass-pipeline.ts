// The pass as every caller runs it: the extension's hooks, the offline replay and the benchmarks all go
// through PassPipeline.pass, so there is one copy of the wiring (which classifier may be asked, the cache
// view each phase gets, the snapshot and validation against Pi's projection, the breaker's bookkeeping).
// It owns the per-session state of that pipeline and nothing of Pi's: the caller hands it the projection,
// the classify function and the main model's cache family.
import type { LandingPass } from "../../core/boundary/landed-items.ts";
import type { CacheModel, TokenPrices } from "../../core/cache/break-even.ts";
import {
  type AssistantRecord,
  type BreakEvenView,
  breakEvenFamily,
  breakEvenView,
  type ModelInfo,
  modelKey,
  priorFor,
  profileFromMessages,
} from "../../core/cache/cache-behaviour.ts";
import { type CacheDoubt, gateView } from "../../core/cache/cache-doubt.ts";
import type { Prices } from "../../core/cache/prompt-cache.ts";
import { Breaker, type BreakerState } from "../../core/classifier/breaker.ts";
import type { GuardConfig } from "../../core/shared/config.ts";
import type { TaskRunner } from "../platform/pool.ts";
import type { ClassifyFn } from "./classify-queue.ts";
import type { ClassifierStats } from "./handed-over.ts";
import { PassWorker } from "./pass-worker.ts";
import { type PassOptions, type PassResult, runPassOnContext } from "./run-pass.ts";
import { type ProjectedLike, SnapshotBuilder } from "./snapshot.ts";
import { WorkerMirror } from "./worker-mirror.ts";

/**
 * How the main model's prompt cache reacts to an edit before the session has recorded any usage: what
 * Pi's provider code sends for the model (cacheView learns from the session once it has requests).
 */
export function cacheFamily(model: (ModelInfo & { model?: string }) | undefined): CacheModel["family"] {
  return breakEvenFamily(priorFor(model && { ...model, id: model.id ?? model.model }).behaviour);
}

/** The assistant messages of Pi's projection, oldest first. */
export function assistantMessages(context: readonly ProjectedLike[]): AssistantRecord[] {
  const out: AssistantRecord[] = [];
  for (const p of context) {
    for (const m of p.messages as Array<AssistantRecord & { role?: unknown }>) {
      if (m && typeof m === "object" && m.role === "assistant") out.push(m);
    }
  }
  return out;
}

/**
 * The break-even inputs at a boundary, learned from the main model's requests in the projection with Pi's
 * registry entry for the model (its `cost`) as the prior. The extension and the replay both call this.
 */
export function cacheView(
  context: readonly ProjectedLike[],
  model: ModelInfo | undefined,
  list?: Prices,
): BreakEvenView {
  return breakEvenView(profileFromMessages(assistantMessages(context), model, list));
}

/**
 * What Pi's current model (ctx.model) gives the pass: the view learned with its registry entry as prior,
 * or the conservative one when `doubts` (the live money view's misses) name the model (cache-doubt.ts).
 */
export function hostCacheView(
  context: readonly ProjectedLike[],
  model: (ModelInfo & { cost?: Prices }) | undefined,
  doubts: readonly CacheDoubt[] = [],
): Pick<PassRequest, "family" | "prices" | "pins" | "doubt"> {
  const key = model ? modelKey({ provider: model.provider, model: model.id }) : undefined;
  const doubt = doubts.find((d) => d.model === key);
  const view = gateView(cacheView(context, model, model?.cost), doubt, model, model?.cost);
  return {
    family: view.family,
    pins: view.pins,
    ...(view.prices ? { prices: view.prices } : {}),
    ...(view.doubt ? { doubt: view.doubt } : {}),
  };
}

/** The session asks providers for their long cache retention (Pi reads the same variable). */
const longRetention = () => process.env.PI_CACHE_RETENTION === "long";

/**
 * How long ago the main model was last asked: the newest assistant message's time. A boundary after a
 * tool that ran longer than the cache's TTL finds the cache cold, and an edit then costs no rewrite.
 */
export function sinceLastRequest(
  context: readonly ProjectedLike[],
  now: number,
): { sinceRequestMs?: number; longRetention?: boolean } {
  for (let i = context.length - 1; i >= 0; i--) {
    for (const m of (context[i] as ProjectedLike).messages as Array<{ role?: string; timestamp?: unknown }>) {
      if (m?.role !== "assistant" || typeof m.timestamp !== "number") continue;
      return { sinceRequestMs: Math.max(0, now - m.timestamp), ...(longRetention() ? { longRetention: true } : {}) };
    }
  }
  return {};
}

export interface PassPipelineParts {
  config: GuardConfig;
  /** The pool the pass worker runs on (a larger one lends it a thread of its own: TaskRunner.oneThread). */
  runner: TaskRunner;
  /** The session's time: the wall clock in Pi, the entries' timestamps in a replay. */
  clock?: () => number;
  breaker?: Breaker;
}

export interface PassRequest {
  phase: PassOptions["phase"];
  /** Pi's projection at the boundary (the drafts are validated against it). */
  context: readonly ProjectedLike[];
  /** The usable classifier, if any; the breaker decides whether this pass asks it. */
  classify?: ClassifyFn;
  modelRef: string;
  family: CacheModel["family"];
  /** The guard may pin its own cache breakpoints for this model (false: the config's pins are off). */
  pins?: boolean;
  /** Anthropic cache entries this process can still read (mid-run break-even). */
  trustedIds?: readonly string[];
  /** The main model's prices (Pi's registry), for the break-even factor. */
  prices?: TokenPrices;
  /** The learned cache model misses the bill: the view above is the conservative one (cache-doubt.ts). */
  doubt?: CacheDoubt;
  /** The requests the gates may count on, when known (the replay's oracle); else those so far. */
  requestsAhead?: number;
  signal?: AbortSignal;
  /** A prompt was sent: stop waiting, finish what was answered, and hand back the rest (PassDeps). */
  handOver?: AbortSignal;
  onJudging?: () => void;
  /** The session's working directory, where the run's reads are checked against the disk. */
  cwd?: string;
  /** A pass landing at the same boundary: what it judged is left alone (core/boundary/landed-items.ts). */
  landing?: LandingPass;
}

export interface PassOutcome {
  result: PassResult;
  /** The breaker's state when this pass made it open (the caller says so once). */
  opened?: Extract<BreakerState, { kind: "open" }>;
}

export class PassPipeline {
  config: GuardConfig;
  readonly runner: TaskRunner;
  readonly snapshots = new SnapshotBuilder();
  /** The session's side of the pass worker (it knows what the worker holds). */
  readonly worker: PassWorker;
  readonly breaker: Breaker;
  readonly clock: () => number;
  /** Models whose learned cache model misses what they billed (the live money view's, hostCacheView's input). */
  cacheDoubts: readonly CacheDoubt[] = [];
  /** The cache view the last pass's gates acted on (`/guard` says when it was the conservative one). */
  lastGate: Pick<PassRequest, "family" | "prices" | "doubt"> | undefined;

  constructor(parts: PassPipelineParts) {
    this.config = parts.config;
    this.runner = parts.runner;
    this.worker = new PassWorker(parts.runner, { mirror: new WorkerMirror(this.snapshots) });
    this.breaker = parts.breaker ?? new Breaker();
    this.clock = parts.clock ?? Date.now;
  }

  /** The footer's view of the breaker. */
  breakerState(): BreakerState {
    return this.breaker.state(this.clock());
  }

  /** Sends the session to the pass worker ahead of the first pass (paced). Returns the entries sent. */
  async warm(context: readonly ProjectedLike[], signal?: AbortSignal): Promise<number> {
    const entries = await this.snapshots.entriesPaced(context);
    return this.worker.warm(entries, signal);
  }

  /** One pass at a boundary. Rejects when a worker task fails (the caller changes nothing). */
  async pass(request: PassRequest): Promise<PassOutcome> {
    this.lastGate = {
      family: request.family,
      ...(request.prices ? { prices: request.prices } : {}),
      ...(request.doubt ? { doubt: request.doubt } : {}),
    };
    const asking = request.classify !== undefined && this.breaker.allow(this.clock());
    const result = await runPassOnContext(
      request.context,
      this.snapshots,
      {
        ...(asking ? { classify: request.classify } : {}),
        family: request.family,
        config: request.pins === false ? { ...this.config, pinAnthropicCache: false } : this.config,
        modelRef: request.modelRef,
        worker: this.worker,
        ...(request.signal ? { signal: request.signal } : {}),
        ...(request.handOver ? { handOver: request.handOver } : {}),
        ...(request.onJudging ? { onJudging: request.onJudging } : {}),
      },
      {
        phase: request.phase,
        ...(request.cwd !== undefined ? { cwd: request.cwd } : {}),
        ...(request.landing ? { landing: request.landing } : {}),
        // Both phases need the family (break-even at checkpoints, the retry gate at run end).
        cache: {
          family: request.family,
          ...(request.trustedIds ? { trustedIds: request.trustedIds } : {}),
          ...(request.prices ? { prices: request.prices } : {}),
          ...(request.requestsAhead !== undefined ? { requestsAhead: request.requestsAhead } : {}),
          ...sinceLastRequest(request.context, this.clock()),
        },
      },
    );
    if (result.status !== "done") return { result };
    const opened = this.report(result.classifier);
    return opened ? { result, opened } : { result };
  }

  /**
   * Tells the breaker how the classifier did in a pass (a handed-over one's rest reports when it ends).
   * Returns the breaker's state when this report opened it.
   */
  report({ sent, answered, aborted, lastError }: ClassifierStats): Extract<BreakerState, { kind: "open" }> | undefined {
    const now = this.clock();
    if (!this.breaker.report(now, { sent, answered, aborted, ...(lastError ? { error: lastError } : {}) })) return;
    const state = this.breaker.state(now);
    return state.kind === "open" ? state : undefined;
  }
}
