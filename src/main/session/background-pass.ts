// The pass that goes on behind the agent (docs/DESIGN.md, mid-run checkpoints and a prompt is never
// held): a mid-run checkpoint, the rest of a run-end pass handed over to a prompt, or a run-end pass over
// its budget. At most one is pending, in the slot; its drafts land at a later boundary, re-validated
// (pass/revalidate.ts). Which pass starts, follows and lands is the boundary machine's (boundary-machine.ts).
import type { ExtensionContext, SessionBoundaryDraft } from "@earendil-works/pi-coding-agent";
import { shown } from "../../core/boundary/boundary-state.ts";
import type { Effect } from "../../core/boundary/machine.ts";
import type { ClassifierStats, PassRest } from "../pass/handed-over.ts";
import type { PassPipeline } from "../pass/pass-pipeline.ts";
import type { Judged } from "../pass/revalidate.ts";
import type { ProjectedLike } from "../pass/snapshot.ts";
import type { Telemetry } from "../platform/telemetry.ts";
import { recordPass } from "../platform/telemetry.ts";
import { BackgroundSlot, type RunningJob } from "./background-slot.ts";
import type { BoundaryMachine } from "./boundary-machine.ts";
import type { PassNotices } from "./pass-notices.ts";
import type { PiBoundary } from "./session-parts.ts";
import { joinParts, within } from "./settle-budget.ts";

export { BackgroundSlot, type RunningJob };

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

/** The boundary's draft list with the drafts of the passes that landed appended, and those passes. */
export interface LandedDrafts {
  entries: SessionBoundaryDraft[];
  judged: Judged[];
}

/** What the pending pass needs of its session. */
export interface BackgroundHost {
  readonly telemetry: Telemetry;
  /** The pass pipeline: the snapshot's positions, the breaker and its clock. */
  readonly pipeline: Pick<PassPipeline, "snapshots" | "report" | "clock">;
  readonly notices: PassNotices;
  closed(): boolean;
  draw(ctx: ExtensionContext): void;
  /** The session's boundary machine, whose slot this runs. */
  readonly machine: BoundaryMachine;
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
      if (!drafts && !this.#slot.pending) this.stop = undefined;
      host.ended?.();
    }, host.machine);
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
      if (!this.#slot.pending) this.stop = undefined;
    }
  }

  async #land(event: PiBoundary, ctx: ExtensionContext, wait: boolean): Promise<LandedDrafts | undefined> {
    try {
      let branch: Set<string> | undefined;
      const options = {
        positionOf: (id: string) => this.#host.pipeline.snapshots.positionOf(id),
        onBranch: (id: string) => {
          branch ??= new Set(ctx.sessionManager.getBranch().map((e) => e.id));
          return branch.has(id);
        },
      };
      const now = event.context.contextEntries as ProjectedLike[];
      const out: LandedDrafts = { entries: [...event.entries], judged: [] };
      // The pending pass, then the one that followed it if that has ended too: each lands at the first
      // boundary after it has ended (their targets are apart: the second was told what the first judged).
      for (let part = 0; part < 2; part++) {
        const landed = await this.#slot.land(now, { ...options, wait: wait && part === 0 });
        if (!landed || this.#host.closed()) break;
        recordPass(this.#host.telemetry, landed.record);
        // Only the telemetry hears of a pass judged on another branch; this branch gets nothing of it.
        if (landed.offBranch) continue;
        out.entries.push(...landed.edits, landed.recordDraft);
        out.judged.push({ edits: landed.edits, record: landed.record });
      }
      return out.judged.length > 0 ? out : undefined;
    } catch (error) {
      this.#host.notices.failed(ctx, error, this.#host.closed());
      return;
    }
  }

  /**
   * A run end that found a pass pending: its own pass on `context` runs once that one has ended, told what
   * it judged, and lands like it (BackgroundSlot.follow). Returns whether it was queued.
   */
  follow(
    context: readonly ProjectedLike[],
    run: (job: RunningJob, signal: AbortSignal, first: Judged | undefined) => Promise<Judged | undefined>,
    effects: readonly Effect[],
  ): boolean {
    const stop = new AbortController();
    return this.#slot.follow(
      context,
      (job, first) => {
        this.stop = stop;
        return run(job, stop.signal, first);
      },
      effects,
    );
  }

  /** Starts the checkpoint the machine said (`effects`), or has the pending one judge `context` instead. */
  start(
    context: () => readonly ProjectedLike[],
    run: (job: RunningJob, signal: AbortSignal) => Promise<Judged | undefined>,
    effects: readonly Effect[],
  ): void {
    const stop = new AbortController();
    if (this.#slot.start(context, (job) => run(job, stop.signal), effects)) this.stop = stop;
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
    this.stop = stop;
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

  /** Job `id` (the pending pass by default) stopped asking: the footer is redrawn. Returns whether it was asking. */
  done(ctx: ExtensionContext, id = this.#slot.pendingId): boolean {
    const machine = this.#host.machine;
    if (id === undefined) return false;
    const before = shown(machine.state);
    machine.send({ type: "quiet", id });
    const after = shown(machine.state);
    if (before.kind !== "background" || after.kind !== "background" || before.asking === after.asking) return false;
    this.#host.draw(ctx);
    return true;
  }

  /** Forgets the pending pass (shutdown): its drafts never land. */
  drop(): void {
    this.#slot.drop();
    this.stop = undefined;
  }
}
