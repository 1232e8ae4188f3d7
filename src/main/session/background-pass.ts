// The pass that goes on while the agent works (docs/DESIGN.md, mid-run checkpoints and a prompt is never
// held): a mid-run checkpoint, or the rest of a run-end pass handed over to a prompt. At most one is
// pending, in the BackgroundCheckpoint slot; this lands its drafts at a later boundary, holds the stop a
// boundary waiting for it aborts when a prompt comes, and tells the footer while it asks.
import type { ExtensionContext, SessionBoundaryDraft } from "@earendil-works/pi-coding-agent";
import { BackgroundCheckpoint, type Judged, type RunningJob } from "../pass/background-checkpoint.ts";
import type { PassRest } from "../pass/handed-over.ts";
import type { PassPipeline } from "../pass/pass-pipeline.ts";
import type { ProjectedLike } from "../pass/snapshot.ts";
import type { Telemetry } from "../platform/telemetry.ts";
import { recordPass } from "../platform/telemetry.ts";
import { restResult } from "./hand-over.ts";
import type { PassNotices } from "./pass-notices.ts";
import type { Boundary } from "./session-parts.ts";
import { joinParts, within } from "./settle-budget.ts";

/** What the pending pass needs of its session. */
export interface BackgroundHost {
  readonly telemetry: Telemetry;
  /** The pass pipeline: the snapshot's positions, the breaker and its clock. */
  readonly pipeline: Pick<PassPipeline, "snapshots" | "report" | "clock">;
  readonly notices: PassNotices;
  closed(): boolean;
  draw(ctx: ExtensionContext): void;
}

export class BackgroundPass {
  readonly #slot = new BackgroundCheckpoint();
  readonly #host: BackgroundHost;
  /** Stops the pending pass's classifier requests (when a prompt would otherwise wait for them). */
  stop: AbortController | undefined;
  /** It is asking the classifier (the footer says so). */
  asking = false;

  constructor(host: BackgroundHost) {
    this.#host = host;
  }

  /**
   * The pending pass's drafts appended to the boundary's, if it has finished (or once it has, with
   * `wait`). One still planning or asking holds no boundary: it lands at a later one.
   */
  async land(
    event: Boundary,
    ctx: ExtensionContext,
    wait: boolean,
  ): Promise<{ entries: SessionBoundaryDraft[] } | undefined> {
    if (!this.#slot.pending) return;
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
      return { entries: [...event.entries, ...landed.edits, landed.recordDraft] };
    } catch (error) {
      this.#host.notices.failed(ctx, error, this.#host.closed());
      return;
    }
  }

  /** Starts a checkpoint on `context` unless one is pending (BackgroundCheckpoint.start). */
  start(
    context: readonly ProjectedLike[],
    run: (job: RunningJob, signal: AbortSignal) => Promise<Judged | undefined>,
  ): void {
    const stop = new AbortController();
    if (this.#slot.start(context, (job) => run(job, stop.signal))) this.stop = stop;
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
    this.stop = stop;
    this.asking = true;
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

  /**
   * Lands the pending pass if it ends within `ms` (and before `stop`); otherwise it stays pending and
   * lands at a later boundary.
   */
  async landWithin(
    event: Boundary,
    ctx: ExtensionContext,
    ms: number,
    stop: AbortSignal,
  ): Promise<{ entries: SessionBoundaryDraft[] } | undefined> {
    if (!this.#slot.pending) return;
    const ended = await within(this.#slot.finished(), ms, stop);
    return ended.done ? this.land(event, ctx, false) : undefined;
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
    this.stop = stop;
    this.asking = true;
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

  /** The pending pass stopped asking: the footer is redrawn. */
  done(ctx: ExtensionContext): void {
    if (!this.asking) return;
    this.asking = false;
    this.#host.draw(ctx);
  }

  /** Forgets the pending pass (shutdown): its drafts never land. */
  drop(): void {
    this.#slot.drop();
    this.asking = false;
  }
}
