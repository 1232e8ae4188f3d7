// What happens at a session's boundaries (turn_end, agent_before_settle), carried out by one object: the
// pass a boundary waits for, the pass behind the agent (background-pass.ts) and the hand-over to a prompt.
// What to do is the boundary machine's (core/boundary/machine.ts, diagram in docs/DESIGN.md); the footer
// and `/guard` read its state (boundary-state.ts, shown).
//
// A prompt is never held by the guard. While a boundary waits for the classifier (the run-end pass, or the
// run's last turn_end waiting for a checkpoint), a prompt the user sends (Pi queues it as a steer or a
// follow-up) stops that wait: what was answered lands at once, and the rest of a run-end pass goes on
// behind the agent and lands at a later boundary; a checkpoint waited for stops asking, and its rest is
// recorded `aborted` and asked again at a later pass. A prompt already queued when a boundary starts to
// wait stops it from the start.
import type { ExtensionContext, SessionBoundaryDraft } from "@earendil-works/pi-coding-agent";
import { type BoundaryState, boundaryView, shown } from "../../core/boundary/boundary-state.ts";
import { type LandingPass, landingOf } from "../../core/boundary/landed-items.ts";
import type { Effect, PassPhase, Settings } from "../../core/boundary/machine.ts";
import { recordDraft } from "../../core/records/record.ts";
import type { GuardConfig } from "../../core/shared/config.ts";
import type { ClassifierLookup } from "../pass/classifier.ts";
import type { ClassifyFn } from "../pass/classify-queue.ts";
import type { PassRest } from "../pass/handed-over.ts";
import { hostCacheView, type PassPipeline } from "../pass/pass-pipeline.ts";
import type { Judged } from "../pass/revalidate.ts";
import type { ProjectedLike } from "../pass/snapshot.ts";
import { watchPass } from "../platform/interrupts.ts";
import { recordPass, type Telemetry } from "../platform/telemetry.ts";
import { warn } from "../platform/warn.ts";
import { BackgroundPass, type LandedDrafts, type RunningJob } from "./background-pass.ts";
import { BoundaryMachine } from "./boundary-machine.ts";
import type { CachePins } from "./cache-pins.ts";
import { PassNotices } from "./pass-notices.ts";
import type { PiBoundary } from "./session-parts.ts";
import { within } from "./settle-budget.ts";
import type { WarmUp } from "./warm-up.ts";

type Drafts = { entries: SessionBoundaryDraft[] } | undefined;

/** Print and JSON modes: Pi exits once the run has settled, and drops whatever is still behind it. */
export const exitsAfterRun = (mode: ExtensionContext["mode"] | undefined) => mode === "print" || mode === "json";

/**
 * Settings as a session in `mode` uses them. Print and JSON modes exit right after the run, so a run-end pass
 * left behind the agent would be dropped with its answers: there, unless the settings chose a budget, the
 * run end waits for its pass whole (bounded by `timeoutMs`).
 */
export function configForMode(
  settings: { config: GuardConfig; settleBudgetChosen?: boolean },
  mode: ExtensionContext["mode"],
): GuardConfig {
  const config = settings.config;
  return exitsAfterRun(mode) && !settings.settleBudgetChosen && config.settleBudgetMs < config.timeoutMs
    ? { ...config, settleBudgetMs: config.timeoutMs }
    : config;
}

/** What the boundaries need of their session. */
export interface BoundaryHost {
  readonly pipeline: PassPipeline;
  readonly telemetry: Telemetry;
  readonly cachePins: CachePins;
  readonly warmUp: WarmUp;
  /** Aborted at shutdown and at Pi's exit: a pass in flight stops at once. */
  readonly stopped: AbortSignal;
  config(): GuardConfig;
  lookup(ctx: ExtensionContext): ClassifierLookup;
  classifier(ctx: ExtensionContext, found: ClassifierLookup): ClassifyFn | undefined;
  draw(ctx: ExtensionContext): void;
  /** Pi is exiting (seen while a pass runs). */
  exiting(): void;
  /** What the boundary needs at the next turn_end may have changed (session-guard.ts registers it). */
  changed?(): void;
}

/** What of the settings the machine decides with. */
function settingsOf(config: GuardConfig): Settings {
  return {
    enabled: config.enabled,
    midRun: config.midRun,
    midRunWait: config.midRunWait,
    waitsWhole: config.settleBudgetMs >= config.timeoutMs,
  };
}

const sameSettings = (a: Settings, b: Settings) =>
  a.enabled === b.enabled && a.midRun === b.midRun && a.midRunWait === b.midRunWait && a.waitsWhole === b.waitsWhole;

const judgeIn = (effects: readonly Effect[]) => effects.some((e) => e.type === "judge");
const collectIn = (effects: readonly Effect[]) => effects.find((e) => e.type === "collect");

export class Boundary {
  /** The session's boundary machine: every decision below is its. */
  readonly machine = new BoundaryMachine();
  readonly #host: BoundaryHost;
  /** The checkpoint or handed-over rest running behind the agent, until its drafts land. */
  readonly #background: BackgroundPass;
  readonly #notices = new PassNotices();
  /** The stop of what holds the current boundary, while one does (the machine says when to stop it). */
  #holding: AbortController | undefined;
  /** Print mode's hand-over was said once. */
  #saidPrintHandOver = false;

  constructor(host: BoundaryHost) {
    this.#host = host;
    this.#background = new BackgroundPass({
      telemetry: host.telemetry,
      pipeline: host.pipeline,
      notices: this.#notices,
      closed: () => this.closed,
      draw: (ctx) => host.draw(ctx),
      machine: this.machine,
      ended: () => host.changed?.(),
    });
  }

  get state(): BoundaryState {
    return shown(this.machine.state);
  }

  /** What the footer and `/guard` show of it. */
  get view(): ReturnType<typeof boundaryView> {
    return boundaryView(this.state);
  }

  get closed(): boolean {
    return this.machine.state.closed;
  }

  /** The machine decides with the settings as they are now. */
  syncSettings(): void {
    const settings = settingsOf(this.#host.config());
    if (!sameSettings(settings, this.machine.state.settings)) this.machine.send({ type: "settings", settings });
  }

  /** The drafts of a pass behind the agent that has ended, until they land. */
  get ready(): (Judged & { leaf?: string }) | undefined {
    return this.#background.ready;
  }

  /** Shutdown or Pi's exit: the pass behind the agent is forgotten and nothing more is written. */
  close(): void {
    this.#background.drop();
  }

  /**
   * turn_end (completed): lands a finished background checkpoint (re-validated), or starts one after a
   * turn that called tools and returns at once (docs/DESIGN.md, mid-run checkpoints). One still running
   * is not waited for, not even at the run's last turn unless the run end waits whole.
   */
  async turnEnd(event: PiBoundary & { toolResults: readonly unknown[] }, ctx: ExtensionContext): Promise<Drafts> {
    if (this.closed) return;
    this.syncSettings();
    const last = event.toolResults.length === 0;
    const collect = collectIn(this.machine.send({ type: "turn-end", last }));
    if (!collect) return;
    // A run end that waits for its pass whole (settleBudgetMs at least timeoutMs) waits at the last turn
    // for the checkpoint too, so the run-end pass sees its record.
    const wait = collect.wait === "ended";
    const landing = () => this.#background.land(event, ctx, wait);
    const landed = await (wait ? this.hold(this.#background.stop, ctx, landing) : landing());
    const next = this.machine.send({ type: "turn-end-landed", landed: landed !== undefined, last });
    if (landed) return landed;
    if (collectIn(next) || judgeIn(next)) return this.#pass("mid-run", next, event, ctx);
    this.#startCheckpoint(ctx, () => event.context.contextEntries as ProjectedLike[], next);
    return;
  }

  /** Starts the checkpoint the machine said, or has the pending one judge `context` instead. */
  #startCheckpoint(ctx: ExtensionContext, context: () => readonly ProjectedLike[], effects: readonly Effect[]): void {
    this.#background.start(
      context,
      (job, signal) => this.#judge("mid-run", () => job.begin(), ctx, { job, signal }),
      effects,
    );
  }

  /**
   * One pass at a boundary: the run-end pass, waited for `settleBudgetMs` (then it goes on in the
   * background and lands at a later boundary), or a mid-run checkpoint with `midRunWait`, awaited.
   * Returns the draft list to hand back to Pi (ours appended to the other extensions'), or undefined to
   * leave it as it is. A failure warns and changes nothing.
   */
  async pass(phase: PassPhase, event: PiBoundary, ctx: ExtensionContext): Promise<Drafts> {
    if (this.closed) return;
    this.syncSettings();
    return this.#pass(phase, this.machine.send({ type: "pass", phase }), event, ctx);
  }

  /** The boundary's pass as the machine said (`effects`): land what is pending first, then judge. */
  async #pass(phase: PassPhase, effects: readonly Effect[], event: PiBoundary, ctx: ExtensionContext): Promise<Drafts> {
    if (!collectIn(effects) && !judgeIn(effects)) return;
    const config = this.#host.config();
    const budget = phase === "run-end" ? config.settleBudgetMs : Number.POSITIVE_INFINITY;
    const started = performance.now();
    const left = () => Math.max(0, budget - (performance.now() - started));
    // A checkpoint or rest still pending lands here if it ends within the budget, else at a later
    // boundary. A run end that lands it also runs its own pass on what the landed one did not judge, so a
    // run's outputs get their record at its own end; one that cannot (the slot still holds a pass) has its
    // pass follow that one behind the agent, so its run's outputs are still judged as the run's own.
    // One that ended with nothing to land leaves the slot free.
    let landed: LandedDrafts | undefined;
    if (collectIn(effects)) {
      const stop = new AbortController();
      landed = await this.hold(stop, ctx, () => this.#background.landWithin(event, ctx, left(), stop.signal));
      const after = this.machine.send({ type: "pass-landed", phase, landed: landed !== undefined });
      this.#follow(event, ctx, landed, after);
      if (!judgeIn(after)) return landed && { entries: landed.entries };
    }
    const before = landed?.entries ?? event.entries;
    const landing = landed && landingOf(landed.judged);
    // A prompt sent meanwhile stops the wait, not the classifier: the rest goes on and lands later.
    const handOver = new AbortController();
    const restStop = new AbortController();
    const context = () => event.context.contextEntries as ProjectedLike[];
    const detached = { now: false };
    const judging = this.#judge(phase, context, ctx, {
      signal: restStop.signal,
      handOver: handOver.signal,
      detached,
      ...(landing ? { landing } : {}),
    });
    const ready = await this.hold(handOver, ctx, () => within(judging, left()));
    if (!ready.done) {
      if (exitsAfterRun(ctx.mode) && !ctx.hasUI) this.#sayPrintHandOver(ctx, config);
      // The boundary stops waiting for its pass: from now on it is a background pass for the footer.
      const asking = this.state.kind === "asking";
      detached.now = true;
      this.#background.adoptPass(ctx, context(), judging, restStop);
      if (asking && ctx.hasUI) ctx.ui.setWorkingMessage();
      return landed && { entries: before };
    }
    const judged = ready.value;
    if (!judged) return landed && { entries: before };
    if (judged.rest) this.#background.adopt(ctx, context(), judged.rest, restStop);
    return { entries: [...before, ...judged.edits, recordDraft(judged.record)] };
  }

  /**
   * The run end's pass, queued behind the pending pass (at most one waits): it judges this boundary's
   * context once that one has ended, told what it and the passes landed here judged, and lands at the
   * first boundary after it has ended.
   */
  #follow(
    event: PiBoundary,
    ctx: ExtensionContext,
    landed: LandedDrafts | undefined,
    effects: readonly Effect[],
  ): void {
    if (!effects.some((e) => e.type === "queue")) return;
    const context = event.context.contextEntries as ProjectedLike[];
    const here = landed?.judged ?? [];
    this.#background.follow(
      context,
      (job, signal, first) =>
        this.#judge("run-end", () => job.begin(), ctx, {
          job,
          signal,
          landing: landingOf(first ? [...here, first] : here),
        }),
      effects,
    );
  }

  /**
   * Print mode with a budget the settings chose: a pass handed over lands only if another prompt follows
   * in the same process. Said once.
   */
  #sayPrintHandOver(ctx: ExtensionContext, config: GuardConfig): void {
    if (this.#saidPrintHandOver) return;
    this.#saidPrintHandOver = true;
    warn(
      ctx,
      `the run end waited settleBudgetMs (${config.settleBudgetMs} ms) and its pass goes on behind; it lands ` +
        "only if another prompt follows before Pi exits. Leave settleBudgetMs unset to have print mode wait " +
        `for the pass (up to timeoutMs, ${config.timeoutMs} ms)`,
    );
  }

  /**
   * Runs one pass on a boundary's context (read once the worker is ready): its edits and record, or
   * undefined when it skipped or failed (a failure warns once). In the background the footer says so
   * instead of Pi's working message.
   */
  async #judge(
    phase: PassPhase,
    contextNow: () => readonly ProjectedLike[],
    ctx: ExtensionContext,
    /**
     * The background checkpoint this pass is, if it is one, a stop of the caller's, its hand-over, and
     * whether the boundary has stopped waiting for it (then it is counted when it lands).
     */
    {
      job,
      signal,
      handOver,
      detached,
      landing,
    }: {
      job?: RunningJob;
      signal?: AbortSignal;
      handOver?: AbortSignal;
      detached?: { now: boolean };
      /** What a pass landing at this boundary judged and edits. */
      landing?: LandingPass;
    } = {},
  ): Promise<(Judged & { rest?: Promise<PassRest> }) | undefined> {
    const host = this.#host;
    const inBackground = job !== undefined;
    await host.warmUp.beforePass();
    if (this.closed) return;
    const context = contextNow();
    const trustedIds = phase === "mid-run" ? host.cachePins.trustedIds(ctx) : undefined;
    // Without a usable classifier a pass still removes old images, which need no judgment; nor while the
    // breaker holds a failing classifier off (PassPipeline decides).
    const found = host.lookup(ctx);
    const classify = host.classifier(ctx, found);
    // Stopped by the user (RPC abort, Esc): what was answered still lands, the rest is asked again.
    const userStop = new AbortController();
    const unwatch = watchPass(ctx, {
      onExit: () => host.exiting(),
      onAbort: () => userStop.abort(new Error("aborted by the user")),
    });
    let rest: Promise<PassRest> | undefined;
    try {
      const { result, opened } = await host.pipeline.pass({
        phase,
        context,
        ...(classify ? { classify } : {}),
        modelRef: found.ref,
        ...hostCacheView(context, ctx.model, host.pipeline.cacheDoubts),
        cwd: ctx.cwd,
        ...(handOver ? { handOver } : {}),
        ...(trustedIds ? { trustedIds } : {}),
        ...(landing ? { landing } : {}),
        signal: AbortSignal.any([
          host.stopped,
          userStop.signal,
          ...(signal ? [signal] : []),
          ...(ctx.signal ? [ctx.signal] : []),
        ]),
        onJudging: () => {
          const behind = inBackground || detached?.now === true;
          job?.asking();
          if (!behind) this.machine.send({ type: "ask", phase });
          host.draw(ctx);
          if (ctx.hasUI && !behind) {
            ctx.ui.setWorkingMessage(
              phase === "mid-run" ? "context-guard: checkpoint…" : "context-guard: judging the run's outputs…",
            );
          }
        },
      });
      if (result.status === "skipped" || this.closed) return;
      this.#notices.ran();
      this.#notices.opened(ctx, opened, result.classifier.lastError, host.pipeline.clock());
      // A background checkpoint's record is counted when it lands (re-validation may change it).
      if (!inBackground && !detached?.now) recordPass(host.telemetry, result.record);
      rest = result.rest;
      return { edits: result.edits, record: result.record, ...(rest ? { rest } : {}) };
    } catch (error) {
      this.#notices.failed(ctx, error, this.closed);
      return;
    } finally {
      // The rest of a handed-over pass still stops at the user's abort or Pi's exit, until it ends.
      if (rest) rest.then(unwatch, unwatch);
      else unwatch();
      // The footer is redrawn once Pi has applied the drafts: at the next turn_start or agent_settled.
      if (!inBackground && this.machine.state.asking !== undefined) {
        this.machine.send({ type: "answered" });
        if (ctx.hasUI) ctx.ui.setWorkingMessage();
      }
      const quieted = job !== undefined && this.#background.done(ctx, job.id);
      if (!quieted && !this.closed && host.pipeline.breakerState().kind === "open") host.draw(ctx);
    }
  }

  /**
   * input: a prompt sent while a boundary waits for the classifier (Pi queues it as a steer or follow-up)
   * hands the boundary over. Returns whether a waiting boundary was stopped for it.
   */
  input(streamingBehavior: "steer" | "followUp" | undefined): boolean {
    if (!streamingBehavior) return false;
    return this.#carry(this.machine.send({ type: "prompt" }));
  }

  /** Stops what holds the boundary when the machine says so; returns whether the footer should be redrawn. */
  #carry(effects: readonly Effect[]): boolean {
    if (effects.some((e) => e.type === "stop-hold")) this.#holding?.abort(new Error("a prompt is waiting"));
    return effects.some((e) => e.type === "draw");
  }

  /**
   * turn_start: a queued prompt has been taken up, and after a turn that called tools a checkpoint starts
   * behind the agent on the branch as the guard projects it (`context`), as turn_end would have started it,
   * unless one is pending, the last turn_end landed one, or the settings await checkpoints at turn_end.
   */
  turnStarted(ctx: ExtensionContext, context: () => readonly ProjectedLike[]): void {
    if (this.closed) return;
    this.syncSettings();
    this.#startCheckpoint(ctx, context, this.machine.send({ type: "turn-start" }));
  }

  /** Runs `work` while it holds the boundary: a prompt sent meanwhile stops `stop`. */
  async hold<T>(stop: AbortController | undefined, ctx: ExtensionContext, work: () => Promise<T>): Promise<T> {
    this.#holding = stop;
    this.#carry(this.machine.send({ type: "hold", stoppable: stop !== undefined }));
    try {
      return await work();
    } finally {
      this.#holding = undefined;
      if (this.#carry(this.machine.send({ type: "release" }))) this.#host.draw(ctx);
    }
  }
}
