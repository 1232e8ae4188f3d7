// The Pi extension: wires hooks, the recall tool, /guard and the footer to the pool, the classifier
// queue and the pure core. Nothing is started in the factory: Pi also runs it for commands that never
// open a session (e.g. `pi --list-models`).
import type { ExtensionAPI, ExtensionContext, SessionBoundaryDraft } from "@earendil-works/pi-coding-agent";
import type { AnthropicPayload } from "../core/cache/cache-pin.ts";
import { currentSavings, lifetime } from "../core/records/stats.ts";
import { DEFAULT_CONFIG, type GuardConfig } from "../core/shared/config.ts";
import { type ClassifierLookup, classifierFor, findClassifier } from "./pass/classifier.ts";
import { cacheFamily, GuardSession } from "./pass/guard-session.ts";
import type { PassOptions } from "./pass/run-end.ts";
import type { ProjectedLike } from "./pass/snapshot.ts";
import { background, callback, setCallbackReporter } from "./platform/callbacks.ts";
import { watchExitSignals, watchPass } from "./platform/interrupts.ts";
import { nextTurn } from "./platform/pace.ts";
import { createTaskRunner, type TaskRunner } from "./platform/pool.ts";
import { watchRetryAfter } from "./platform/retry-after.ts";
import { classifierSecretValues, redactKnown } from "./platform/secrets.ts";
import { loadSettings, saveSetting } from "./platform/settings.ts";
import { recordPass, Telemetry, telemetryStatsReport } from "./platform/telemetry.ts";
import { createThreadFetch, type ThreadFetch } from "./platform/thread-fetch.ts";
import { warn } from "./platform/warn.ts";
import { registerRouting } from "./routing/router.ts";
import { CachePins } from "./session/cache-pins.ts";
import { executeRecall, RECALL_PARAMETERS } from "./session/recall-tool.ts";
import { statusReport } from "./session/report.ts";
import { type GuardState, lookupProblem, statusText } from "./session/status.ts";

const STATUS_KEY = "context-guard";

interface Session {
  config: GuardConfig;
  settingsPath: string;
  /** The pass pipeline's state and its one copy of the wiring (shared with the replay and the bench). */
  guard: GuardSession;
  recallRunner?: TaskRunner;
  /** Carries the classifier's HTTP requests on a thread of their own, off Pi's event loop. */
  http: ThreadFetch;
  busy: boolean;
  closed: boolean;
  /** Aborted at session_shutdown: a pass in flight stops at once instead of at its deadline. */
  stop: AbortController;
  /** The footer text last sent to the UI. */
  shownStatus?: string;
  /** Anthropic cache entries this process saw written (in memory only). */
  cachePins: CachePins;
  /**
   * Background work that a pass must not interleave with: the snapshot built paced after session_start,
   * and the session sent to the pass worker once the first run starts. A pass waits for it. Never rejects.
   */
  warming: Promise<void>;
  /** Whether the pass worker has been sent the session (or a pass has run). */
  workerWarm: boolean;
  /** Whether the snapshot has been built once (until then the footer shows no savings). */
  snapshotBuilt: boolean;
  /** The classifier's fetch, watched for a server's retry-after. */
  fetch: typeof globalThis.fetch;
  /** Removes the process signal listeners. */
  unwatchSignals: () => void;
  /** The last failure notice shown: the same one is not repeated at every turn. */
  lastFailure?: string;
}

const NO_SAVINGS = { chars: 0, items: 0 };

function projectedEntries(ctx: ExtensionContext): ProjectedLike[] {
  return ctx.sessionManager.buildSessionProjection().entries as unknown as ProjectedLike[];
}

/** The process is going away: a pass in flight stops at once and the session writes nothing more. */
function exiting(s: Session): void {
  s.closed = true;
  s.stop.abort(new Error("Pi is exiting"));
}

export default function contextGuard(pi: ExtensionAPI): void {
  let session: Session | undefined;

  const lookup = (ctx: ExtensionContext): ClassifierLookup =>
    findClassifier(ctx.modelRegistry, session?.config.model ?? DEFAULT_CONFIG.model);

  const state = (ctx: ExtensionContext): GuardState => {
    if (!session?.config.enabled) return { kind: "off" };
    const found = lookup(ctx);
    if (!found.ok) return { kind: "unavailable", lookup: found };
    if (session.busy) return { kind: "busy" };
    const breaker = session.guard.breakerState();
    if (breaker.kind === "open") return { kind: "paused", until: breaker.until, error: breaker.error };
    return {
      kind: "ready",
      // Before the warm-up has built the snapshot (paced), a redraw would build it in one block.
      savings: session.snapshotBuilt
        ? currentSavings(session.guard.snapshots.entries(projectedEntries(ctx)))
        : NO_SAVINGS,
      lifetime: lifetime(ctx.sessionManager.getBranch()),
    };
  };

  const draw = callback("status-redraw", (ctx: ExtensionContext) => {
    if (!ctx.hasUI || !session) return;
    const s = state(ctx);
    const text = statusText(s);
    const theme = ctx.ui.theme;
    const styled =
      s.kind === "ready" && s.savings.items > 0
        ? text.replace(
            /^(🛡 −\S+)(.*)$/u,
            (_m, head: string, rest: string) => theme.fg("success", head) + theme.fg("dim", rest),
          )
        : s.kind === "ready" || s.kind === "busy"
          ? theme.fg("dim", text)
          : theme.fg("warning", text);
    // Redraws are frequent (every turn); only a change reaches the UI.
    if (styled === session.shownStatus) return;
    session.shownStatus = styled;
    ctx.ui.setStatus(STATUS_KEY, styled);
  });

  const notifyWarnings = (ctx: ExtensionContext, warnings: string[]) => {
    for (const w of warnings) warn(ctx, w);
  };

  pi.on("session_start", async (_event, ctx) => {
    const loaded = await loadSettings();
    const passRunner = await createTaskRunner({ minThreads: 1, maxThreads: 1 });
    const recallRunner = await createTaskRunner({ minThreads: 0, maxThreads: 1, idleTimeoutMs: 10_000 });
    const guard = new GuardSession({ config: loaded.config, runner: passRunner });
    const http = createThreadFetch();
    const stop = new AbortController();
    session = {
      get config() {
        return guard.config;
      },
      set config(config: GuardConfig) {
        guard.config = config;
      },
      settingsPath: loaded.path,
      guard,
      recallRunner,
      http,
      fetch: watchRetryAfter(http.fetch, guard.breaker),
      cachePins: new CachePins(),
      busy: false,
      closed: false,
      stop,
      // The process is going away: a pass in flight stops at once and writes nothing.
      unwatchSignals: watchExitSignals(() => {
        if (session?.stop === stop) exiting(session);
      }),
      warming: Promise.resolve(),
      snapshotBuilt: false,
      workerWarm: false,
    };
    setCallbackReporter((message) => warn(ctx, message));
    notifyWarnings(ctx, loaded.warnings);
    // The TUI's footer names a classifier problem; print, JSON and RPC clients get it once as a notice.
    if (loaded.config.enabled && ctx.mode !== "tui") {
      const found = lookup(ctx);
      if (!found.ok) warn(ctx, lookupProblem(found));
    }
    draw(ctx);
    const s = session;
    s.warming = background("snapshot-warm", () => buildSnapshot(s, ctx));
  });

  /**
   * A resumed session can be large. Its snapshot is built paced right after session_start (the footer
   * needs it), instead of in one block by the first redraw.
   */
  const buildSnapshot = async (s: Session, ctx: ExtensionContext): Promise<void> => {
    let built = false;
    try {
      await nextTurn();
      if (s.closed) return;
      await s.guard.snapshots.entriesPaced(projectedEntries(ctx));
      built = true;
    } catch {
      // The next redraw builds it.
    } finally {
      s.snapshotBuilt = true;
    }
    if (built && !s.closed) draw(ctx);
  };

  /**
   * When the session's first run starts, the session goes to the pass worker in paced slices while the
   * main model works, instead of inside the first pass. Not at session_start: a session that is only
   * opened to be read never needs the worker's copy, and Pi is busy drawing it then.
   */
  const warmWorkerFor = async (s: Session, ctx: ExtensionContext): Promise<void> => {
    if (s.workerWarm || s.closed || !s.config.enabled) return;
    s.workerWarm = true;
    try {
      await s.guard.warm(projectedEntries(ctx), s.stop.signal);
    } catch {
      // Nothing to report: the first pass sends whatever did not arrive.
    }
  };

  pi.on("agent_start", (_event, ctx) => {
    const s = session;
    if (!s || s.workerWarm) return;
    // The HTTP thread boots while the main model works, so the first pass does not wait for it.
    const found = s.config.enabled ? lookup(ctx) : undefined;
    if (found?.ok && !found.local) {
      s.http.start();
      // Learnt before anything is written, so every record and notice can be redacted with them.
      classifierSecretValues(ctx.modelRegistry, found.model).catch(() => undefined);
    }
    s.warming = s.warming.then(() => background("worker-warm", () => warmWorkerFor(s, ctx)));
  });

  pi.on("session_shutdown", async () => {
    const s = session;
    session = undefined;
    if (!s) return;
    s.closed = true;
    s.stop.abort();
    s.unwatchSignals();
    await Promise.allSettled([s.guard.runner.destroy(), s.recallRunner?.destroy(), s.http.close()]);
  });

  /**
   * One pass at a boundary. Returns the draft list to hand back to Pi (ours appended to the other
   * extensions'), or undefined to leave it as it is. A failure warns and changes nothing.
   */
  const guardPass = async (
    event: { entries: SessionBoundaryDraft[]; context: { contextEntries: unknown[] } },
    ctx: ExtensionContext,
    options: { phase: PassOptions["phase"]; trustedIds?: readonly string[] },
  ): Promise<{ entries: SessionBoundaryDraft[] } | undefined> => {
    const s = session;
    if (!s || s.closed) return;
    await s.warming;
    if (s.closed) return;
    s.workerWarm = true;
    // Without a usable classifier a pass still removes old images, which need no judgment; nor while the
    // breaker holds a failing classifier off (GuardSession decides).
    const found = lookup(ctx);
    // Stopped by the user (RPC abort, Esc): what was answered still lands, the rest is asked again.
    const userStop = new AbortController();
    const unwatch = watchPass(ctx, {
      onExit: () => exiting(s),
      onAbort: () => userStop.abort(new Error("aborted by the user")),
    });
    try {
      const { result, opened } = await s.guard.pass({
        phase: options.phase,
        context: event.context.contextEntries as ProjectedLike[],
        ...(found.ok ? { classify: classifierFor(ctx.modelRegistry, found, s.fetch) } : {}),
        modelRef: found.ref,
        family: cacheFamily(ctx.model),
        ...(options.trustedIds ? { trustedIds: options.trustedIds } : {}),
        signal: AbortSignal.any([s.stop.signal, userStop.signal, ...(ctx.signal ? [ctx.signal] : [])]),
        onJudging: () => {
          s.busy = true;
          draw(ctx);
          if (ctx.hasUI) {
            ctx.ui.setWorkingMessage(
              options.phase === "mid-run" ? "context-guard: checkpoint…" : "context-guard: judging the run's outputs…",
            );
          }
        },
      });
      if (result.status === "skipped" || s.closed) return;
      s.lastFailure = undefined;
      if (opened) {
        const wait = Math.max(1, Math.round((opened.until - Date.now()) / 1000));
        const why = result.classifier.lastError;
        warn(
          ctx,
          `the classifier did not answer ${opened.failures} passes in a row` +
            `${why ? ` (${why.slice(0, 160)})` : ""}; everything is kept, and it is asked again in ${wait} s`,
        );
      }
      recordPass(telemetry, result.record);
      return { entries: [...event.entries, ...result.edits, result.recordDraft] };
    } catch (error) {
      const message = `the pass failed, nothing was changed (${(error as Error).message})`;
      // A fault that persists (a worker that cannot start) would say the same at every turn.
      if (!s.closed && message !== s.lastFailure) warn(ctx, message);
      s.lastFailure = message;
      return;
    } finally {
      unwatch();
      // The footer is redrawn once Pi has applied the drafts: at the next turn_start or agent_settled.
      if (s.busy) {
        s.busy = false;
        if (ctx.hasUI) ctx.ui.setWorkingMessage();
      }
      if (!s.closed && s.guard.breakerState().kind === "open") draw(ctx);
    }
  };

  pi.on("agent_before_settle", async (event, ctx) => {
    if (event.outcome !== "completed" || !session?.config.enabled) return;
    // The cache family lets the plan skip asking about earlier runs' outputs whose edit could not pay.
    return guardPass(event, ctx, { phase: "run-end" });
  });

  // Mid-run checkpoints: at the end of a turn that called tools (the final turn is left to run end).
  pi.on("turn_end", async (event, ctx) => {
    const c = session?.config;
    if (event.outcome !== "completed" || !c?.enabled || !c.midRun || event.toolResults.length === 0) return;
    return guardPass(event, ctx, { phase: "mid-run", trustedIds: session?.cachePins.trustedIds(ctx) });
  });

  // Anthropic breakpoints: the question pin on every request, a read point and write anchor after edits.
  pi.on("before_provider_request", (event, ctx) => {
    const s = session;
    if (!s?.config.enabled || !s.config.pinAnthropicCache || ctx.model?.api !== "anthropic-messages") return;
    const payload = event.payload as AnthropicPayload | undefined;
    if (!payload || !Array.isArray(payload.messages)) return;
    s.cachePins.onRequest(payload, ctx);
    return payload;
  });

  pi.on("message_end", (event, ctx) => {
    const s = session;
    const message = event.message as {
      role?: string;
      usage?: { input?: number; cacheRead?: number; cacheWrite?: number };
    };
    if (!s?.config.pinAnthropicCache || message.role !== "assistant" || ctx.model?.api !== "anthropic-messages") return;
    s.cachePins.onAssistantEnd(message.usage, ctx);
  });

  pi.on("agent_settled", (_event, ctx) => draw(ctx));
  pi.on("turn_start", (_event, ctx) => {
    if (session && !session.busy) draw(ctx);
  });
  pi.on("session_tree", (_event, ctx) => draw(ctx));
  pi.on("session_compact", (_event, ctx) => draw(ctx));

  // Skill routing and tool surfacing (before_agent_start), on the same settings and classifier.
  const telemetry = new Telemetry({ getConfig: () => session?.config });
  registerRouting(pi, {
    getConfig: () => session?.config ?? DEFAULT_CONFIG,
    classifier: (ctx) => {
      const found = session ? lookup(ctx) : undefined;
      return found?.ok ? classifierFor(ctx.modelRegistry, found, session?.fetch) : undefined;
    },
    telemetry,
  });

  pi.registerTool({
    name: "recall",
    label: "Recall",
    description:
      "Return the full original of a tool output that context-guard shortened or removed. Give the entryId from the [context-guard] note; optionally a regex pattern (matching lines only, with line numbers) or offset/limit for a line window. Output is capped at 2,000 lines / 50 KB.",
    parameters: RECALL_PARAMETERS,
    async execute(_toolCallId, params, signal, _onUpdate, ctx) {
      return executeRecall(
        params,
        ctx,
        {
          runner: () => session?.recallRunner,
          timeoutMs: () => session?.config.recallTimeoutMs ?? DEFAULT_CONFIG.recallTimeoutMs,
        },
        signal,
      );
    },
  });

  pi.registerCommand("guard", {
    description: "context-guard: status, stats, on, off, reload",
    getArgumentCompletions: (prefix) =>
      ["status", "stats", "on", "off", "reload"]
        .filter((c) => c.startsWith(prefix.trim()))
        .map((c) => ({ value: c, label: c })),
    handler: async (args, ctx) => {
      const command = args.trim().toLowerCase() || "status";
      if (!session) {
        ctx.ui.notify("context-guard: no active session", "warning");
        return;
      }
      if (command === "on" || command === "off") {
        const enabled = command === "on";
        session.config = { ...session.config, enabled };
        try {
          const saved = await saveSetting("enabled", enabled, session.settingsPath);
          const where = saved.file === session.settingsPath ? "" : ` → ${saved.file}`;
          ctx.ui.notify(`context-guard is ${command} (saved to ${session.settingsPath}${where})`, "info");
        } catch (error) {
          // The message names the file and says why; the file is as it was.
          ctx.ui.notify(
            `context-guard is ${command} for this session only, not saved: ${redactKnown((error as Error).message)}`,
            "error",
          );
        }
        draw(ctx);
        return;
      }
      if (command === "reload") {
        const loaded = await loadSettings(session.settingsPath);
        session.config = loaded.config;
        // A reload usually follows a fix (a key, a model): a paused classifier is asked again at once.
        session.guard.breaker.reset();
        notifyWarnings(ctx, loaded.warnings);
        ctx.ui.notify(
          `context-guard: settings reloaded from ${loaded.path}${loaded.warnings.length ? "" : " (no warnings)"}`,
          "info",
        );
        draw(ctx);
        return;
      }
      if (command === "stats") {
        ctx.ui.notify(await telemetryStatsReport(telemetry, session.config), "info");
        return;
      }
      if (command !== "status") {
        ctx.ui.notify(
          `context-guard: unknown argument "${command}"; use /guard, /guard stats, /guard on, /guard off or /guard reload`,
          "warning",
        );
        return;
      }
      ctx.ui.notify(
        statusReport({
          config: session.config,
          found: lookup(ctx),
          savings: currentSavings(session.guard.snapshots.entries(projectedEntries(ctx))),
          branch: ctx.sessionManager.getBranch(),
          paused: session.guard.breakerState(),
        }),
        "info",
      );
    },
  });
}
