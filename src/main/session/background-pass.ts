// The pass that goes on behind the agent (docs/DESIGN.md, mid-run checkpoints and a prompt is never
// held): a mid-run checkpoint, the rest of a run-end pass handed over to a prompt, or a run-end pass over
// its budget. At most one is pending, in the slot; its drafts land at a later boundary, re-validated
// (pass/revalidate.ts). What it does is reported to the boundary state (boundary.ts), which the footer reads.
import type { ExtensionContext, SessionBoundaryDraft } from "@earendil-works/pi-coding-agent";
import type { BoundaryEvent, PassPhase } from "../../core/boundary/boundary-state.ts";
import { recordDraft } from "../../core/records/record.ts";
import type { ClassifierStats, PassRest } from "../pass/handed-over.ts";
import type { PassPipeline } from "../pass/pass-pipeline.ts";
import { type Judged, keptWhole, type Landed, revalidate } from "../pass/revalidate.ts";
import type { ProjectedLike } from "../pass/snapshot.ts";
import { background } from "../platform/callbacks.ts";
import type { Telemetry } from "../platform/telemetry.ts";
import { recordPass } from "../platform/telemetry.ts";
import type { PassNotices } from "./pass-notices.ts";
import type { PiBoundary } from "./session-parts.ts";
import { joinParts, within } from "./settle-budget.ts";

/**
 * The rest of a handed-over pass as a background pass's result. What the classifier did in the whole
 * pass is reported once it is known; a failure lands nothing (the first part recorded the waiting items
 * `aborted`, so a later pass asks them again).
 */
export async function restResult(
  rest: Promise<PassRest>,
  on: { report(classifier: ClassifierStats): void; failed(error: unknown): void; ended(): void },
): Promise<Judged | undefined> {
  try {
    const { edits, record, classifier } = await rest;
    on.report(classifier);
    return { edits, record };
  } catch (error) {
    on.failed(error);
    return undefined;
  } finally {
    on.ended();
  }
}

interface Job {
  /** The boundary's context the checkpoint judges (the latest one until it begins). */
  context: readonly ProjectedLike[];
  begun: boolean;
  /** Its plan is made and it asks the classifier (until then it is quick to wait for). */
  asking: boolean;
  /** Resolves once it asks the classifier or ends. */
  planned: Promise<void>;
  done: Promise<void>;
  settled: boolean;
  result: Judged | undefined;
}

/** What a running checkpoint tells its holder. */
export interface RunningJob {
  /** Marks it begun and returns the context to judge. */
  begin(): readonly ProjectedLike[];
  asking(): void;
}

/** The one pass behind the agent, from its start until its drafts land. */
export class BackgroundSlot {
  #job: Job | undefined;
  /** Told when a pass ends; one that ended with nothing to land has left the slot already. */
  readonly #ended: (drafts: boolean) => void;

  constructor(ended: (drafts: boolean) => void = () => undefined) {
    this.#ended = ended;
  }

  /** A checkpoint was started and its drafts have not landed yet (finished or not). */
  get pending(): boolean {
    return this.#job !== undefined;
  }

  /** A pending pass has taken the context it judges. */
  get begun(): boolean {
    return this.#job?.begun === true;
  }

  /** A checkpoint is planning (in the worker): it will skip or start asking within moments. */
  get planning(): boolean {
    const job = this.#job;
    return job?.begun === true && !job.asking && !job.settled;
  }

  /** Resolves once the pending checkpoint asks the classifier or ends: its plan is made. */
  async planned(): Promise<void> {
    await this.#job?.planned;
  }

  /**
   * The pending pass's drafts once it has ended, before they land (re-validated then), with the last
   * entry of the context it judged (its drafts belong to the branch that holds it).
   */
  get ready(): (Judged & { leaf?: string }) | undefined {
    const job = this.#job;
    if (!job?.settled || !job.result) return undefined;
    const leaf = job.context.at(-1)?.sourceEntry.id;
    return leaf === undefined ? job.result : { ...job.result, leaf };
  }

  /** Resolves once the pending checkpoint has ended (its drafts can land). */
  async finished(): Promise<void> {
    await this.#job?.done;
  }

  /**
   * Starts `run` unless a checkpoint is pending. `run` calls `begin` once it is ready to plan (the pass
   * worker is up) and judges the context it returns, and calls `asking` once its plan asks the
   * classifier. A failed run lands nothing (`run` reports its own failures). Returns whether it started.
   */
  start(context: readonly ProjectedLike[], run: (job: RunningJob) => Promise<Judged | undefined>): boolean {
    if (this.#job) {
      // Not planning yet (the worker is still starting): it judges the newer boundary instead, so a
      // checkpoint that waited is not one about outputs too young to judge.
      if (!this.#job.begun) this.#job.context = context;
      return false;
    }
    this.#job = this.#run(context, false, run);
    return true;
  }

  /**
   * Takes the rest of a handed-over pass into the slot: it was judging `context` and is asking the
   * classifier; its drafts land like a checkpoint's. A checkpoint pending here cannot be, since a pass
   * at a boundary lands it first; it would be dropped.
   */
  adopt(context: readonly ProjectedLike[], rest: Promise<Judged | undefined>): void {
    this.#job = this.#run(context, true, () => rest);
  }

  #run(context: readonly ProjectedLike[], asking: boolean, run: (job: RunningJob) => Promise<Judged | undefined>): Job {
    let planned = () => {};
    const job: Job = {
      context,
      begun: asking,
      asking,
      settled: false,
      result: undefined,
      planned: new Promise((resolve) => {
        planned = resolve;
      }),
      done: Promise.resolve(),
    };
    const running: RunningJob = {
      begin: () => {
        job.begun = true;
        return job.context;
      },
      asking: () => {
        job.asking = true;
        planned();
      },
    };
    job.done = background("checkpoint", async () => {
      try {
        job.result = await run(running);
      } finally {
        job.settled = true;
        planned();
        // Nothing to land: the slot is free at once, so no boundary is needed to clear it.
        if (!job.result && this.#job === job) this.#job = undefined;
        if (this.#job === job || !job.result) this.#ended(job.result !== undefined);
      }
    });
    return job;
  }

  /**
   * The pending checkpoint's drafts, re-validated against `now`, if it has finished (or, with `wait`,
   * once it has). Undefined when nothing lands at this boundary.
   */
  async land(
    now: readonly ProjectedLike[],
    options: {
      wait: boolean;
      positionOf?: (id: string) => number | undefined;
      /** Whether an entry is on the current branch (the judged context's last entry is asked). */
      onBranch?: (id: string) => boolean;
    },
  ): Promise<Landed | undefined> {
    const job = this.#job;
    if (!job || (!job.settled && !options.wait)) return undefined;
    await job.done;
    this.#job = undefined;
    if (!job.result) return undefined;
    // Judged for a run on a branch the session has left (/tree, /fork): its question is not this branch's.
    const leaf = job.context.at(-1)?.sourceEntry.id;
    if (leaf !== undefined && options.onBranch && !options.onBranch(leaf)) {
      const record = keptWhole(job.result.record, "judged on another branch");
      return { edits: [], record, recordDraft: recordDraft(record), dropped: [], offBranch: true };
    }
    return revalidate(job.result, job.context, now, options.positionOf);
  }

  /** Forgets a pending checkpoint (shutdown): its drafts never land. */
  drop(): void {
    this.#job = undefined;
  }
}

/** The boundary's draft list with a pending pass's drafts appended, and what of them landed. */
export interface LandedDrafts {
  entries: SessionBoundaryDraft[];
  judged: Judged;
}

/** What the pending pass needs of its session. */
export interface BackgroundHost {
  readonly telemetry: Telemetry;
  /** The pass pipeline: the snapshot's positions, the breaker and its clock. */
  readonly pipeline: Pick<PassPipeline, "snapshots" | "report" | "clock">;
  readonly notices: PassNotices;
  closed(): boolean;
  draw(ctx: ExtensionContext): void;
  /** Tells the boundary state what the pass behind the agent does; returns whether the state changed. */
  report(event: BoundaryEvent): boolean;
  /** The pending pass has ended: its drafts wait for the next boundary, or it left the slot with none. */
  ended?(): void;
}

export class BackgroundPass {
  readonly #slot: BackgroundSlot;
  readonly #host: BackgroundHost;
  /** Stops the pending pass's classifier requests (when a prompt would otherwise wait for them). */
  stop: AbortController | undefined;

  constructor(host: BackgroundHost) {
    this.#host = host;
    this.#slot = new BackgroundSlot((drafts) => {
      if (!drafts && !this.#slot.pending) {
        this.stop = undefined;
        host.report({ type: "landed" });
      }
      host.ended?.();
    });
  }

  /**
   * The pending pass's drafts appended to the boundary's, if it has finished (or once it has, with
   * `wait`). One still planning or asking holds no boundary: it lands at a later one.
   */
  async land(
    event: PiBoundary,
    ctx: ExtensionContext,
    wait: boolean,
  ): Promise<{ entries: SessionBoundaryDraft[] } | undefined> {
    const landed = await this.#landJudged(event, ctx, wait);
    return landed && { entries: landed.entries };
  }

  /** As `land`, with what landed: the edits and record that follow the boundary's own drafts. */
  async #landJudged(event: PiBoundary, ctx: ExtensionContext, wait: boolean): Promise<LandedDrafts | undefined> {
    if (!this.#slot.pending) return;
    try {
      return await this.#land(event, ctx, wait);
    } finally {
      if (!this.#slot.pending) {
        this.stop = undefined;
        this.#host.report({ type: "landed" });
      }
    }
  }

  async #land(event: PiBoundary, ctx: ExtensionContext, wait: boolean): Promise<LandedDrafts | undefined> {
    try {
      let branch: Set<string> | undefined;
      const landed = await this.#slot.land(event.context.contextEntries as ProjectedLike[], {
        wait,
        positionOf: (id) => this.#host.pipeline.snapshots.positionOf(id),
        onBranch: (id) => {
          branch ??= new Set(ctx.sessionManager.getBranch().map((e) => e.id));
          return branch.has(id);
        },
      });
      if (!landed || this.#host.closed()) return;
      recordPass(this.#host.telemetry, landed.record);
      // Only the telemetry hears of a pass judged on another branch; this branch gets nothing of it.
      if (landed.offBranch) return;
      return {
        entries: [...event.entries, ...landed.edits, landed.recordDraft],
        judged: { edits: landed.edits, record: landed.record },
      };
    } catch (error) {
      this.#host.notices.failed(ctx, error, this.#host.closed());
      return;
    }
  }

  /** Starts a checkpoint on `context` unless one is pending (BackgroundSlot.start). */
  start(
    context: readonly ProjectedLike[],
    run: (job: RunningJob, signal: AbortSignal) => Promise<Judged | undefined>,
  ): void {
    const stop = new AbortController();
    if (!this.#slot.start(context, (job) => run(job, stop.signal))) return;
    this.stop = stop;
    this.#host.report({ type: "start-behind", phase: "mid-run" });
  }

  /**
   * Takes the rest of a pass handed over at a boundary whose context was `context`: it lands like a
   * checkpoint, `stop` stops its requests, and the breaker hears how the classifier did in the whole pass.
   */
  adopt(
    ctx: ExtensionContext,
    context: readonly ProjectedLike[],
    rest: Promise<PassRest>,
    stop: AbortController,
  ): void {
    this.#goBehind("run-end", stop);
    this.#slot.adopt(context, this.#restOf(ctx, rest));
    this.#host.draw(ctx);
  }

  /** The drafts of a pending pass that has ended, until they land. */
  get ready(): (Judged & { leaf?: string }) | undefined {
    return this.#slot.ready;
  }

  /** Whether a pass is pending (its drafts have not landed yet). */
  get pending(): boolean {
    return this.#slot.pending;
  }

  /** Whether a pending pass has taken its context (a newer one is of no use to it). */
  get begun(): boolean {
    return this.#slot.begun;
  }

  /**
   * Lands the pending pass if it ends within `ms` (and before `stop`); otherwise it stays pending and
   * lands at a later boundary.
   */
  async landWithin(
    event: PiBoundary,
    ctx: ExtensionContext,
    ms: number,
    stop: AbortSignal,
  ): Promise<LandedDrafts | undefined> {
    if (!this.#slot.pending) return;
    const ended = await within(this.#slot.finished(), ms, stop);
    return ended.done ? this.#landJudged(event, ctx, false) : undefined;
  }

  /**
   * Takes a whole pass the boundary stopped waiting for (run-end, over its budget): it lands like a
   * checkpoint once it has finished; `stop` stops its requests.
   */
  adoptPass(
    ctx: ExtensionContext,
    context: readonly ProjectedLike[],
    judging: Promise<(Judged & { rest?: Promise<PassRest> }) | undefined>,
    stop: AbortController,
  ): void {
    this.#goBehind("run-end", stop);
    const whole = judging.then(async (judged) => {
      // A prompt handed it over before the budget ran out: its rest is joined to its first part.
      if (!judged?.rest) {
        this.done(ctx);
        return judged && { edits: judged.edits, record: judged.record };
      }
      const rest = await this.#restOf(ctx, judged.rest);
      return rest ? joinParts(judged, rest) : { edits: judged.edits, record: judged.record };
    });
    this.#slot.adopt(context, whole);
    this.#host.draw(ctx);
  }

  #restOf(ctx: ExtensionContext, rest: Promise<PassRest>): Promise<Judged | undefined> {
    const { pipeline, notices } = this.#host;
    return restResult(rest, {
      report: (c) => notices.opened(ctx, pipeline.report(c), c.lastError, pipeline.clock()),
      failed: (error) => notices.failed(ctx, error, this.#host.closed()),
      ended: () => this.done(ctx),
    });
  }

  #goBehind(phase: PassPhase, stop: AbortController): void {
    this.stop = stop;
    this.#host.report({ type: "go-behind", phase });
  }

  /** The pending pass stopped asking: the footer is redrawn. Returns whether it was asking. */
  done(ctx: ExtensionContext): boolean {
    if (!this.#host.report({ type: "quiet" })) return false;
    this.#host.draw(ctx);
    return true;
  }

  /** Forgets the pending pass (shutdown): its drafts never land. */
  drop(): void {
    this.#slot.drop();
    this.stop = undefined;
  }
}
