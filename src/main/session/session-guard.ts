// One object per Pi session: everything the extension holds for it (settings, the pass and recall pools,
// the HTTP bridge, the pass pipeline with its snapshot, mirror and breaker, the warm-up, cache pins,
// routing, telemetry, the footer and the boundary object) and what it does at each of Pi's events.
// src/main/index.ts only maps the events to it. What happens at turn_end and agent_before_settle is the
// boundary object's (boundary.ts); the pass pipeline itself is PassPipeline's (Pi-free, shared with the
// replay and the benchmarks). The classify function, the pools, the HTTP bridge and the clock can be handed in.
import type {
  BeforeAgentStartEvent,
  BeforeProviderRequestEvent,
  ExtensionContext,
  SessionBoundaryDraft,
} from "@earendil-works/pi-coding-agent";
import { dueBesideRestores } from "../../core/boundary/machine.ts";
import type { AnthropicPayload } from "../../core/cache/cache-pin.ts";
import type { GuardConfig } from "../../core/shared/config.ts";
import type { SnapEntry } from "../../core/shared/types.ts";
import { type ClassifierLookup, classifierFor, findClassifier } from "../pass/classifier.ts";
import type { ClassifyFn } from "../pass/classify-queue.ts";
import { PassPipeline } from "../pass/pass-pipeline.ts";
import { RELEASE_TIMEOUT_MS } from "../pass/pass-worker.ts";
import type { Judged } from "../pass/revalidate.ts";
import type { ProjectedLike } from "../pass/snapshot.ts";
import { setCallbackReporter } from "../platform/callbacks.ts";
import { watchExitSignals } from "../platform/interrupts.ts";
import type { TaskRunner } from "../platform/pool.ts";
import { watchRetryAfter } from "../platform/retry-after.ts";
import { classifierSecretValues } from "../platform/secrets.ts";
import type { LoadedSettings } from "../platform/settings.ts";
import { onSwallowed, traceSwallowed } from "../platform/swallowed.ts";
import { Telemetry } from "../platform/telemetry.ts";
import { warn } from "../platform/warn.ts";
import { SessionRouting } from "../routing/session-routing.ts";
import { Boundary, configForMode } from "./boundary.ts";
import { apartNotice, finishBoundary, repairedRequest, repairNotice } from "./boundary-shape.ts";
import { CachePins } from "./cache-pins.ts";
import { GuardSwitch } from "./guard-switch.ts";
import { LiveProjection } from "./live-projection.ts";
import { waitingView } from "./ready-drafts.ts";
import { executeRecall } from "./recall-tool.ts";
import { type Message, PendingRestores, type RestoreHost, restoringDrafts } from "./restore.ts";
import type { PiBoundary, SessionGuardParts } from "./session-parts.ts";
import { projectedEntries, SessionView } from "./session-view.ts";
import { type GuardState, lookupProblem, workersProblem } from "./status.ts";
import { boundaryDone, branchEvent, messageEvent } from "./turn-watch.ts";
import { WarmUp } from "./warm-up.ts";

export type { PiBoundary, SessionGuardParts } from "./session-parts.ts";

export class SessionGuard {
  /** The pass pipeline's state: config, pass runner, snapshot builder, worker mirror, breaker, clock. */
  readonly pipeline: PassPipeline;
  readonly settingsPath: string;
  readonly recallRunner: TaskRunner | undefined;
  readonly telemetry: Telemetry;
  readonly routing: SessionRouting;
  /** Anthropic cache entries this process saw written (in memory only). */
  readonly cachePins = new CachePins();
  /** `/guard restore` requests whose edit waits for the next boundary (read from the branch). */
  readonly restores = new PendingRestores();
  /** What happens at the boundaries, and the state the footer reads. */
  readonly boundary: Boundary;
  readonly #parts: SessionGuardParts;
  /** The classifier's fetch, watched for a server's retry-after. */
  readonly #fetch: typeof globalThis.fetch;
  /** Aborted at shutdown: a pass in flight stops at once instead of at its deadline. */
  readonly #stop = new AbortController();
  /** The snapshot built after start and the worker sent the session: a pass waits for them. */
  readonly #warmUp: WarmUp;
  /** The footer, `/guard` and the dollars they show (session-view.ts). */
  readonly #view: SessionView;
  #unwatch: () => void = () => undefined;
  /** The branch as Pi projects it, kept between boundaries: a checkpoint starts at turn_start from it. */
  readonly #live = new LiveProjection();
  /** Where the pending restores are read (the boundary machine is told whether one waits). */
  #sessionManager: ExtensionContext["sessionManager"] | undefined;
  /** The guard's on/off state as the branch records it. */
  readonly #switch: GuardSwitch;

  constructor(parts: SessionGuardParts) {
    this.#parts = parts;
    this.#switch = new GuardSwitch((type, data) => parts.pi.appendEntry(type, data));
    this.pipeline = new PassPipeline({
      config: parts.settings.config,
      runner: parts.passRunner,
      ...(parts.clock ? { clock: parts.clock } : {}),
    });
    this.settingsPath = parts.settings.path;
    this.recallRunner = parts.recallRunner;
    this.#fetch = watchRetryAfter(parts.http.fetch, this.pipeline.breaker);
    this.#warmUp = new WarmUp({
      pipeline: this.pipeline,
      closed: () => this.closed,
      enabled: () => this.config.enabled,
      signal: this.#stop.signal,
    });
    this.telemetry = new Telemetry({ getConfig: () => (this.closed ? undefined : this.config) });
    this.boundary = new Boundary({
      pipeline: this.pipeline,
      telemetry: this.telemetry,
      cachePins: this.cachePins,
      warmUp: this.#warmUp,
      stopped: this.#stop.signal,
      config: () => this.config,
      lookup: (ctx) => this.lookup(ctx),
      classifier: (ctx, found) => this.#classifier(ctx, found),
      draw: (ctx) => this.draw(ctx),
      exiting: () => this.#exiting(),
      changed: () => this.#syncTurnEnd(),
    });
    // The machine says when the next turn_end has work for the guard: only then is its handler registered.
    this.boundary.machine.onHook = (on) => parts.turnEndHook?.(on);
    this.routing = new SessionRouting({
      pi: parts.pi,
      getConfig: () => this.config,
      classifier: (ctx) => this.#classifier(ctx),
      telemetry: this.telemetry,
    });
    this.#view = new SessionView({
      config: () => this.config,
      closed: () => this.closed,
      pipeline: this.pipeline,
      boundary: this.boundary,
      routing: this.routing,
      restores: this.restores,
      lookup: (ctx) => this.lookup(ctx),
      projected: (ctx) => this.#live.update(ctx.sessionManager) as unknown as ProjectedLike[],
      snapshotBuilt: () => this.#warmUp.snapshotBuilt,
      readyHere: (sm) => this.#readyHere(sm),
    });
  }

  /** Shut down, or the process is exiting: nothing more is written. */
  get closed(): boolean {
    return this.boundary.closed;
  }

  get config(): GuardConfig {
    return this.pipeline.config;
  }

  set config(config: GuardConfig) {
    this.pipeline.config = config;
  }

  lookup(ctx: ExtensionContext): ClassifierLookup {
    return findClassifier(ctx.modelRegistry, this.config.model);
  }

  #classifier(ctx: ExtensionContext, found = this.lookup(ctx)): ClassifyFn | undefined {
    if (!found.ok) return undefined;
    return this.#parts.classify
      ? this.#parts.classify(ctx, found, this.#fetch)
      : classifierFor(ctx.modelRegistry, found, this.#fetch);
  }

  /** Settings as this session uses them in `mode` (boundary.ts configForMode). */
  useSettings(settings: Pick<LoadedSettings, "config" | "settleBudgetChosen">, mode: ExtensionContext["mode"]): void {
    this.config = configForMode(settings, mode);
  }

  /** session_start: notices, the footer, the snapshot built in the background, routing restored. */
  start(ctx: ExtensionContext): void {
    this.#sessionManager = ctx.sessionManager;
    this.useSettings(this.#parts.settings, ctx.mode);
    // The process is going away: a pass in flight stops at once and writes nothing.
    const unwatchExit = (this.#parts.watchExit ?? watchExitSignals)(() => this.#exiting());
    // An error caught and gone past anywhere on Pi's thread is a line of this session's telemetry too.
    const unwatchCaught = onSwallowed((c) => this.telemetry.record({ type: "caught", where: c.where, error: c.kind }));
    this.#unwatch = () => {
      unwatchExit();
      unwatchCaught();
    };
    setCallbackReporter((message) => warn(ctx, message));
    for (const w of this.#parts.settings.warnings) warn(ctx, w);
    // The TUI's footer names a classifier problem; print, JSON and RPC clients get it once as a notice.
    if (this.config.enabled && ctx.mode !== "tui") {
      const found = this.lookup(ctx);
      if (!found.ok) warn(ctx, lookupProblem(found));
      if (this.pipeline.runner.failure) warn(ctx, workersProblem(this.pipeline.runner.failure.message));
    }
    this.draw(ctx);
    this.#checkBranch(ctx);
    this.#warmUp.startSnapshot(
      () => projectedEntries(ctx),
      () => this.draw(ctx),
    );
    this.routing.start(ctx);
    this.#syncTurnEnd();
  }

  /**
   * A branch that already holds a tool result apart from its call (an older version, another extension),
   * and whether its last run may hold a recall call: either needs the next turn_end.
   */
  #checkBranch(ctx: ExtensionContext): void {
    const { event, apart } = branchEvent(() => projectedEntries(ctx));
    this.boundary.machine.send(event);
    if (apart.length > 0) warn(ctx, apartNotice(apart));
  }

  /** agent_start: the HTTP thread boots and the worker is warmed while the main model works. */
  runStarted(ctx: ExtensionContext): void {
    this.boundary.machine.send({ type: "run-start" });
    this.markSwitch(ctx);
    if (this.#warmUp.workerWarm) return;
    const found = this.config.enabled ? this.lookup(ctx) : undefined;
    if (found?.ok && !found.local) {
      this.#parts.http.start();
      // Learnt before anything is written, so every record and notice can be redacted with them.
      // swallow-ok: a provider without credentials has nothing to redact.
      classifierSecretValues(ctx.modelRegistry, found.model).catch(() => undefined);
    }
    this.#warmUp.startWorker(() => projectedEntries(ctx));
  }

  /** turn_end (completed): the boundary's checkpoint (Boundary.turnEnd), and the pending restores. */
  async turnEnd(
    event: PiBoundary & { toolResults: readonly unknown[] },
    ctx: ExtensionContext,
  ): Promise<{ entries: SessionBoundaryDraft[] } | undefined> {
    try {
      return this.#finish(event, ctx, await this.boundary.turnEnd(event, ctx));
    } finally {
      this.#syncTurnEnd();
    }
  }

  /** agent_before_settle (completed): the run-end pass, and the pending restores. */
  async settle(event: PiBoundary, ctx: ExtensionContext): Promise<{ entries: SessionBoundaryDraft[] } | undefined> {
    try {
      return this.#finish(event, ctx, await this.boundary.pass("run-end", event, ctx));
    } finally {
      this.#syncTurnEnd();
    }
  }

  /**
   * Every boundary's last step: the pending restores and the recall signal appended, then the whole list
   * checked once (boundary-shape.ts). A failure of the check hands back the list unchecked.
   */
  #finish(
    event: PiBoundary,
    ctx: ExtensionContext,
    result: { entries: SessionBoundaryDraft[] } | undefined,
  ): { entries: SessionBoundaryDraft[] } | undefined {
    if (this.closed) return result;
    const context = event.context.contextEntries as ProjectedLike[];
    this.boundary.machine.send(boundaryDone(context));
    const restoring = restoringDrafts(this.restores, this.pipeline.snapshots, event, ctx);
    const whole = this.#live.contextWhole(ctx.sessionManager, context);
    return finishBoundary(event, result, restoring, (repairs) => warn(ctx, repairNotice(repairs)), whole);
  }

  /**
   * context: until a restore's edit lands, every request carries the original, and until a handed-over
   * pass's drafts land, every request carries them (else it goes as it is).
   */
  restoreContext(messages: Message[], ctx: ExtensionContext): { messages: Message[] } | undefined {
    const sm = ctx.sessionManager;
    let out = waitingView(
      messages,
      sm,
      this.restores,
      () => this.#readyHere(sm),
      () => this.#live.update(sm),
    );
    // A tool result without its call fails the request at any strict provider: it stays out until a
    // boundary repairs the branch.
    const repaired = repairedRequest(messages, out, () => this.#live.requestWhole(sm, messages));
    if (repaired) this.boundary.machine.send({ type: "orphan" });
    out = repaired ?? out;
    this.#syncTurnEnd();
    return out ? { messages: out } : undefined;
  }

  /** The drafts of a pass that ended behind the agent, if they belong to this branch (not one left by /tree). */
  #readyHere(sm: ExtensionContext["sessionManager"]): Judged | undefined {
    const ready = this.closed || !this.config.enabled ? undefined : this.boundary.ready;
    if (!ready) return undefined;
    return ready.leaf === undefined || this.restores.onBranch(sm, ready.leaf) ? ready : undefined;
  }

  /** What `/guard restore` and `/guard pin` need: the snapshot, and the drafts waiting to land. */
  restoreHost(append: RestoreHost["appendEntry"]): RestoreHost {
    return {
      snapshot: (c) => this.snapshot(c),
      appendEntry: append,
      ready: (c) => this.#readyHere(c.sessionManager),
    };
  }

  /**
   * input: a prompt sent while a boundary waits for the classifier (Pi queues it as a steer or follow-up)
   * hands the boundary over: what was answered lands now, and the rest of a run-end pass goes on in the
   * background (docs/DESIGN.md, a prompt is never held).
   */
  input(event: { text: string; streamingBehavior?: "steer" | "followUp" }, ctx: ExtensionContext): void {
    this.routing.input(event.text);
    if (this.boundary.input(event.streamingBehavior)) this.draw(ctx);
  }

  /** turn_start: a queued prompt has been taken up; the footer is redrawn. */
  turnStarted(ctx: ExtensionContext): void {
    try {
      this.boundary.turnStarted(ctx, () => this.#live.sync(ctx.sessionManager) as unknown as ProjectedLike[]);
    } catch (error) {
      // No checkpoint this turn: the run end judges what it would have.
      traceSwallowed("session.checkpoint-start", error);
    }
    this.#syncTurnEnd();
    if (this.boundary.state.kind !== "asking") this.draw(ctx);
  }

  /**
   * Tells the machine the settings and whether a `/guard restore` waits, which it then weighs with the rest
   * to register or drop the turn_end handler. The restores are read only when nothing else makes the next
   * turn_end the guard's.
   */
  #syncTurnEnd(): void {
    const machine = this.boundary.machine;
    this.boundary.syncSettings();
    if (machine.state.closed || dueBesideRestores(machine.state)) return;
    const sm = this.#sessionManager;
    let pending = true;
    try {
      pending = sm === undefined || this.restores.pending(sm).length > 0;
    } catch (error) {
      // Counted as pending: the boundary reads the restores again.
      traceSwallowed("session.restores-read", error);
    }
    machine.send({ type: "restores", pending });
  }

  /**
   * Leaves a switch entry on the branch when the guard's setting differs from the branch's last switch:
   * what a run makes while the guard is off is never judged later (guard-switch.ts).
   */
  markSwitch(ctx: ExtensionContext): void {
    if (this.closed) return;
    try {
      this.#switch.mark(ctx, this.config.enabled);
    } catch (error) {
      const state = this.config.enabled ? "on" : "off";
      warn(ctx, `could not mark the guard ${state} on this branch: ${(error as Error).message}`);
    }
  }

  /** `/guard judge`: what was made while the guard was off is judged like anything else from now on. */
  judgeOffSpans(ctx: ExtensionContext): number {
    return this.#switch.judge(ctx);
  }

  /** before_agent_start: skill routing and tool surfacing, on the same settings and classifier. */
  route(event: BeforeAgentStartEvent, ctx: ExtensionContext): Promise<void> {
    return this.routing.route(event, ctx);
  }

  /** The `recall` tool, with this session's recall pool and time limit. */
  recall(params: unknown, ctx: ExtensionContext, signal?: AbortSignal): ReturnType<typeof executeRecall> {
    this.boundary.machine.send({ type: "recall" });
    this.#syncTurnEnd();
    return executeRecall(
      params,
      ctx,
      { runner: () => (this.closed ? undefined : this.recallRunner), timeoutMs: () => this.config.recallTimeoutMs },
      signal,
    );
  }

  /** before_provider_request: Anthropic breakpoints, the question pin and the read point after edits. */
  providerRequest(event: BeforeProviderRequestEvent, ctx: ExtensionContext): unknown {
    if (!this.config.enabled || !this.config.pinAnthropicCache || ctx.model?.api !== "anthropic-messages") return;
    const payload = event.payload as AnthropicPayload | undefined;
    if (!payload || !Array.isArray(payload.messages)) return;
    this.cachePins.onRequest(payload, ctx);
    return payload;
  }

  /** message_end: the cache entries a reply's usage shows, and routing's misses. */
  messageEnd(message: unknown, ctx: ExtensionContext): void {
    const m = message as {
      role?: string;
      toolCallId?: string;
      content?: unknown;
      usage?: { input?: number; cacheRead?: number; cacheWrite?: number };
    };
    this.boundary.machine.send(messageEvent(m));
    this.#syncTurnEnd();
    if (this.config.pinAnthropicCache && m.role === "assistant" && ctx.model?.api === "anthropic-messages") {
      this.cachePins.onAssistantEnd(m.usage, ctx);
    }
    this.routing.messageEnd(m, ctx);
  }

  /** session_tree: another branch, so another footer and routing state. */
  treeChanged(ctx: ExtensionContext): void {
    this.#switch.forget();
    this.draw(ctx);
    this.#checkBranch(ctx);
    this.routing.restore(ctx);
    this.#syncTurnEnd();
  }

  /** The footer's state. */
  status(ctx: ExtensionContext): GuardState {
    return this.#view.status(ctx);
  }

  /** What the model sees now, as snapshot entries (built incrementally). */
  snapshot(ctx: ExtensionContext): SnapEntry[] {
    return this.#view.snapshot(ctx);
  }

  /** Redraws the footer (only a changed text reaches the UI). */
  readonly draw = (ctx: ExtensionContext): void => this.#view.draw(ctx);

  /** The footer's dollars saved on this branch, once priced (`/guard stats`). */
  get savedSoFar(): SessionView["savedSoFar"] {
    return this.#view.savedSoFar;
  }

  /** What `/guard` (status) reports. */
  report(ctx: ExtensionContext): string {
    return this.#view.report(ctx);
  }

  /** The process is going away: a pass in flight stops at once and the session writes nothing more. */
  #exiting(): void {
    this.boundary.close();
    this.#stop.abort(new Error("Pi is exiting"));
  }

  /** session_shutdown: stops what is in flight, then the pools, the HTTP thread and the telemetry queue. */
  async shutdown(): Promise<void> {
    this.boundary.close();
    this.#stop.abort();
    this.routing.shutdown();
    this.#unwatch();
    // The session's settings and copy on the pass worker go first: with the inline backend they live on
    // Pi's thread, and a pool shared with other sessions outlives this one. A release that fails leaves
    // nothing to undo: the pool is shut down next, with its threads.
    // swallow-ok: a release that fails leaves nothing to undo.
    await this.pipeline.worker.release(RELEASE_TIMEOUT_MS).catch(() => undefined);
    await Promise.allSettled([this.pipeline.runner.destroy(), this.recallRunner?.destroy(), this.#parts.http.close()]);
    await this.telemetry.flush();
  }
}
