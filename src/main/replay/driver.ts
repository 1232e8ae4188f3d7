// Replays one session through the real pipeline, boundary by boundary: at every turn that called tools (a
// mid-run checkpoint, Pi's turn_end) and at every run end (Pi's agent_before_settle) the extension's own
// PassPipeline.pass runs on the projection of the branch so far (kept entry by entry, as Pi builds it) (the
// snapshot, the plan and finish in the worker pool, the classifier queue under the deadline and the
// breaker, the validation), on the session's own clock (its entries' timestamps). The drafts are committed
// with Pi's own appendContextEdit/appendCustomEntry before the next entry of the file is added.
// Later requests therefore carry the edited context, which is what the billed-context curve compares.
import { monitorEventLoopDelay } from "node:perf_hooks";
import type { SessionEntry } from "@earendil-works/pi-coding-agent";
import { landedItems } from "../../core/boundary/landed-items.ts";
import type { AssistantRecord } from "../../core/cache/cache-behaviour.ts";
import { CacheViewTally } from "../../core/cache/cache-view-tally.ts";
import { DEFAULT_WAVE_MS, landsBeforeNextRequest, wavesOf } from "../../core/replay/handover-timing.ts";
import type { RemovedPiece } from "../../core/replay/proxy.ts";
import {
  dollarsOf,
  type PassMetrics,
  type PassResultView,
  type RequestPoint,
  type SessionMetrics,
  sessionTotals,
  sumMessages,
} from "../../core/replay/replay-metrics.ts";
import type { GuardConfig } from "../../core/shared/config.ts";
import { oneLine } from "../../core/shared/text.ts";
import { type ContextEditDraft, type GuardRecord, RECORD_TYPE } from "../../core/shared/types.ts";
import type { ClassifyFn } from "../pass/classify-queue.ts";
import { assistantMessages, PassPipeline } from "../pass/pass-pipeline.ts";
import type { PassResult } from "../pass/run-pass.ts";
import type { ProjectedLike } from "../pass/snapshot.ts";
import type { TaskRunner } from "../platform/pool.ts";
import { BranchProjection } from "./branch-projection.ts";
import { ContextSize } from "./context-size.ts";
import { hostModel, MoneyLog } from "./money-log.ts";
import { neededLater, oracleFor, removedPieces } from "./needed-later.ts";
import type { PriceBook } from "./prices.ts";
import { rawText } from "./proxy-input.ts";
import type { SessionFile } from "./reader.ts";
import { boundaryAt, ended, type MessageLike, messageOf, type Phase, toolCallsOf } from "./run-boundaries.ts";
import { VisibleTracker } from "./visible-memo.ts";

export interface ReplayOptions {
  runner: TaskRunner;
  /** The classifier; without one a pass only removes old images, as in the extension. */
  classify?: ClassifyFn;
  modelRef: string;
  config: GuardConfig;
  /** Answers served from the on-disk cache so far (read before and after each pass). */
  cacheHits?: () => number;
  /** Called after every entry of the branch. */
  onProgress?: (done: number, total: number) => void;
  /** Prices for the money view (Pi's registry); without them dollars are not priced. */
  prices?: PriceBook;
  /** Called once at the end with the guarded branch: the entries with the guard's, as Pi would keep them. */
  onGuarded?: (entries: readonly SessionEntry[]) => void;
  /** false: no pass runs (the session as recorded, for measuring what the guard adds). Default: true. */
  guard?: boolean;
  /** Called with the entries Pi appended for a pass (its context_edit entries, then the record). */
  onApplied?: (entries: SessionEntry[], pass: PassMetrics) => void;
  /**
   * Latency of one wave of classifier calls, for when a handed-over run-end pass ends on the session's
   * clock. Default: DEFAULT_WAVE_MS.
   */
  waveMs?: number;
  /**
   * A what-if for bench/handover-money.ts: the next prompt waits this long for a handed-over pass that
   * has sent all its calls. The extension does not wait (default 0).
   */
  promptWaitMs?: number;
  /**
   * A what-if for bench/handover-money.ts: a mid-run boundary that lands a handed-over pass also runs a
   * checkpoint (as a run end does). The extension does not (default false).
   */
  landingCheckpoint?: boolean;
  /**
   * The ceiling: instead of `classify`, a judge that knows the rest of the session (core/replay/oracle.ts)
   * answers every pruning request.
   */
  oracle?: boolean;
}

export async function replaySession(file: SessionFile, options: ReplayOptions): Promise<SessionMetrics> {
  const started = performance.now();
  const { branch, lineOf } = file;
  const header = file.header;
  const cwd = header.cwd || process.cwd();
  /** The session's time: the timestamp of the entry being replayed (the breaker's pauses follow it). */
  let now = Date.parse(header.timestamp ?? "") || 0;
  const guard = new PassPipeline({ config: options.config, runner: options.runner, clock: () => now });
  const on: SessionEntry[] = [];
  const off: SessionEntry[] = [];
  // The guarded branch's projection, kept entry by entry, and its size in characters.
  const projection = new BranchProjection();
  let onChars = 0;
  projection.listen(
    (before, after) => {
      onChars += sumMessages(after.messages) - (before ? sumMessages(before) : 0);
    },
    () => {
      onChars = 0;
      for (const p of projection.entries) onChars += sumMessages(p.messages);
    },
  );
  const offSize = new ContextSize();
  const money = new MoneyLog(branch, now, options.prices);
  const byId = new Map<string, SessionEntry>();
  const indexById = new Map<string, number>();
  const callById = new Map<string, { name: string; args: Record<string, unknown> }>();
  const requests: RequestPoint[] = [];
  const passes: PassMetrics[] = [];
  const pieces: RemovedPiece[] = [];
  const lineOfId = new Map<string, number>();
  let relinkTo: string | undefined;
  /**
   * A run-end pass that asked the classifier is handed over by default (settleBudgetMs below timeoutMs).
   * Its drafts reach every request once it has ended (the context hook) and land at the next boundary.
   * When the next prompt came before the pass would have ended (its waves at `waveMs` each, after the
   * settle budget: core/replay/handover-timing.ts), that prompt's first request and any before the
   * boundary carry what it replaces: it is taken as landing at the next boundary. Otherwise its drafts
   * apply from the next request on.
   */
  let held: { edits: ContextEditDraft[]; record: GuardRecord; metrics: PassMetrics; index: number } | undefined;
  const waveMs = options.waveMs ?? DEFAULT_WAVE_MS;
  const handsOver = (record: GuardRecord, index: number) => {
    const { settleBudgetMs, timeoutMs, concurrency } = options.config;
    if (record.requests === 0 || settleBudgetMs >= timeoutMs) return false;
    const waves = wavesOf(record.requests, concurrency);
    const timing = { settleBudgetMs, timeoutMs, waves, waveMs, promptWaitMs: options.promptWaitMs ?? 0 };
    for (let j = index + 1; j < branch.length; j++) {
      const entry = branch[j] as SessionEntry;
      if (messageOf(entry)?.role !== "user") continue;
      return !landsBeforeNextRequest((Date.parse(entry.timestamp) || now) - now, timing);
    }
    return false;
  };
  let lastAssistant: MessageLike | undefined;
  let promptIndex = -1;
  let previousVisible: MessageLike | undefined;

  /** The main model's cache view (hostCacheView's), counted as the context changes. */
  const cacheTally = new CacheViewTally();
  // The context's assistant messages in order, for the tally: appended as entries join, and found again
  // when an edit touched one (an omitted exchange) or a compaction rebuilt the projection.
  let assistants: AssistantRecord[] = [];
  let assistantsStale = false;
  const isAssistant = (m: unknown) => (m as { role?: unknown } | null)?.role === "assistant";
  projection.listen(
    (before, after) => {
      if (assistantsStale) return;
      if (before === undefined) {
        for (const m of after.messages) if (isAssistant(m)) assistants.push(m as AssistantRecord);
      } else if (before.some(isAssistant) || after.messages.some(isAssistant)) assistantsStale = true;
    },
    () => {
      assistantsStale = true;
    },
  );
  /** What the model still sees, followed from the first pass that removes something. */
  let visible: VisibleTracker | undefined;
  const calls: number[] = [];
  const requestSizes: number[] = [];
  /** Where the pass being run sits in the branch: the oracle judges against what comes after it. */
  let passAt = 0;
  const oracle = options.oracle ? oracleFor(branch, () => passAt) : undefined;
  const judge: ClassifyFn | undefined = oracle?.classify ?? options.classify;
  const classify: ClassifyFn | undefined = judge
    ? async (request, opts) => {
        requestSizes.push(JSON.stringify(request.state).length + JSON.stringify(request.questions).length);
        const out = await judge(request, opts);
        if (out.status === "stop") calls.push(out.ms ?? 0);
        return out;
      }
    : undefined;

  for (let i = 0; i < branch.length; i++) {
    const original = branch[i] as SessionEntry;
    now = Date.parse(original.timestamp) || now;
    const line = lineOf.get(original);
    if (line !== undefined) lineOfId.set(original.id, line);
    byId.set(original.id, original);
    indexById.set(original.id, i);
    const message = messageOf(original);
    if (message?.role === "assistant") {
      requests.push({ n: requests.length + 1, line: line ?? 0, off: offSize.current(off), on: onChars });
      money.request(requests.length, message, now, off, on, projection.entries);
      for (const call of toolCallsOf(message)) callById.set(call.id, call);
    }
    if (message?.role === "user") {
      // A user message is steering when the agent was still working: it does not start a run.
      const steering =
        previousVisible !== undefined &&
        (previousVisible.role === "toolResult" ||
          (previousVisible.role === "assistant" && toolCallsOf(previousVisible).length > 0 && !ended(previousVisible)));
      if (!steering) promptIndex = i;
    }
    if (message && message.role !== "custom") previousVisible = message;

    // The entry joins both lists; after guard entries it hangs below the last of them.
    const entry = relinkTo === undefined ? original : ({ ...original, parentId: relinkTo } as SessionEntry);
    if (relinkTo !== undefined) lineOf.set(entry, line ?? 0);
    relinkTo = undefined;
    on.push(entry);
    off.push(original);
    projection.add(entry, () => on);
    offSize.add(original);
    money.on.add(entry);
    money.off.add(original);

    const phase = boundaryAt(branch, i, message?.role === "assistant" ? message : lastAssistant);
    if (message?.role === "assistant") lastAssistant = message;
    // A run-end pass handed over lands here. A run end (as in the extension: session/boundary.ts) also
    // runs its own pass on what the landed one did not judge; a mid-run boundary starts none.
    const landing = phase ? held : undefined;
    if (landing) held = undefined;
    const own = phase === "run-end" || (landing ? options.landingCheckpoint === true : options.config.midRun);
    if (phase && options.guard !== false && own) {
      const pass = await runBoundary(phase, i, line ?? 0, landing);
      if (pass) passes.push(pass);
    } else if (landing) commit(landing.edits, landing.record, landing.metrics, landing.index);
    options.onProgress?.(i + 1, branch.length);
  }
  if (held) held.metrics.reason = "handed over at the run end; the file ends before a boundary lands it";

  async function runBoundary(
    phase: Phase,
    index: number,
    line: number,
    landing?: NonNullable<typeof held>,
  ): Promise<PassMetrics | undefined> {
    // A copy: the projection grows with the next entries, and the pass keeps its context. A pass landing
    // here is not in it (Pi applies a boundary's drafts after the hook), so its items are excluded.
    const context = projection.entries.slice() as unknown as ProjectedLike[];
    const landed = landing ? landedItems(landing) : undefined;
    passAt = index;
    /** The landed pass's drafts go first in the boundary's list. */
    const landFirst = () => {
      if (landing) commit(landing.edits, landing.record, landing.metrics, landing.index);
    };
    const prompt = promptIndex >= 0 ? branch[promptIndex] : undefined;
    const metrics: PassMetrics = {
      n: passes.length + 1,
      phase,
      line,
      promptLine: prompt ? lineOf.get(prompt) : undefined,
      prompt: prompt ? oneLine(rawText(prompt), 120) : "",
      afterRequest: requests.length,
      status: "skipped",
      results: [],
      edits: {},
      drafts: 0,
      invalidDrafts: 0,
      savedChars: 0,
      classifierRequests: 0,
      cacheHits: 0,
      latencies: [],
      inputTokens: 0,
      costUsd: 0,
      requestChars: 0,
      timedOut: false,
      settleMs: 0,
      stallMs: 0,
      removed: 0,
      suspected: 0,
    };
    calls.length = 0;
    requestSizes.length = 0;
    const hitsBefore = options.cacheHits?.() ?? 0;
    const stall = monitorEventLoopDelay({ resolution: 1 });
    stall.enable();
    const began = performance.now();
    let result: PassResult;
    try {
      ({ result } = await guard.pass({
        phase,
        context,
        ...(classify ? { classify } : {}),
        modelRef: options.modelRef,
        ...(landed ? { landing: landed } : {}),
        // The extension's own path: Pi's model for the last request (its registry entry) and the branch so far.
        ...cacheViewOf(context),
      }));
    } catch (error) {
      metrics.status = "failed";
      metrics.reason = `the pass failed, nothing was changed (${(error as Error).message})`;
      landFirst();
      return metrics;
    } finally {
      metrics.settleMs = performance.now() - began;
      stall.disable();
      metrics.stallMs = stall.count > 0 ? stall.max / 1e6 : 0;
      metrics.latencies = [...calls];
      metrics.requestChars = requestSizes.reduce((a, b) => a + b, 0);
      metrics.cacheHits = (options.cacheHits?.() ?? 0) - hitsBefore;
    }
    landFirst();
    if (result.status === "skipped") {
      // Checkpoints that found nothing to do are many; only run ends are listed when skipped.
      metrics.reason = result.reason;
      return phase === "run-end" ? metrics : undefined;
    }
    const { edits, record } = result;
    metrics.status = "done";
    describePass(metrics, record);
    if (phase === "run-end" && handsOver(record, index)) {
      held = { edits, record, metrics, index };
      metrics.landedLater = true;
    } else commit(edits, record, metrics, index);
    return metrics;
  }

  /** What hostCacheView gives the pass: Pi's model for the last request (its registry entry) and the branch. */
  function cacheViewOf(context: readonly ProjectedLike[]) {
    const model = hostModel(lastAssistant, options.prices);
    if (assistantsStale) {
      assistants = assistantMessages(context);
      assistantsStale = false;
    }
    const view = cacheTally.view(assistants, model, model.cost);
    return {
      family: view.family,
      pins: view.pins,
      ...(view.prices ? { prices: view.prices } : {}),
      ...(oracle ? { requestsAhead: oracle.requestsAhead(passAt) } : {}),
    };
  }

  /** Fills a pass's figures from its record. */
  function describePass(metrics: PassMetrics, record: GuardRecord): void {
    metrics.classifierRequests = record.requests;
    metrics.inputTokens = record.inputTokens;
    metrics.costUsd = record.costUsd;
    metrics.timedOut = record.timedOut;
    metrics.results = record.results.map(
      (r): PassResultView => ({
        kind: r.kind ?? "large",
        outcome: r.outcome,
        reason: r.reason,
        label: r.label,
        entryId: r.entryId,
        line: lineOfId.get(r.entryId),
        beforeChars: r.beforeChars,
        afterChars: r.afterChars,
        trace: Array.isArray(r.jev) ? r.jev.join(" | ") : "",
      }),
    );
  }

  /** Commits a pass's drafts as Pi would at a boundary, below the branch so far. */
  function commit(edits: ContextEditDraft[], record: GuardRecord, metrics: PassMetrics, index: number): void {
    let added: SessionEntry[];
    try {
      // Pi commits the drafts in order; one it rejects discards the whole boundary's list.
      added = projection.entriesFor(edits, RECORD_TYPE, record);
    } catch (error) {
      metrics.status = "failed";
      metrics.invalidDrafts = edits.length;
      metrics.reason = `Pi rejected a draft, so none were applied (${(error as Error).message})`;
      return;
    }
    for (const entry of added) {
      on.push(entry);
      projection.add(entry, () => on);
      money.on.add(entry);
    }
    relinkTo = added[added.length - 1]?.id;
    metrics.drafts = edits.length;
    metrics.savedChars = record.savedChars;
    for (const r of record.results) {
      if (r.outcome === "kept") continue;
      const kind = r.kind ?? "large";
      metrics.edits[kind] = (metrics.edits[kind] ?? 0) + 1;
    }
    visible ??= new VisibleTracker(cwd, projection);
    const removed = removedPieces(record, edits, index, metrics.n, { byId, indexById, callById, visible });
    metrics.removed = removed.length;
    pieces.push(...removed);
    options.onApplied?.(added, metrics);
  }

  // swallow-ok: The replay of this file is over: its copy on the pass worker goes (the runner replays more files).
  // Best effort: a worker that fails here has lost the copy anyway.
  await guard.worker.release().catch(() => {});

  const name = file.path.split("/").pop() ?? file.path;
  // The header's own word that a tool generated the file; untrusted text, so no control characters.
  const raw = (file.header as { generator?: unknown }).generator;
  const generator = typeof raw === "string" ? raw.replace(/[\u0000-\u001f\u007f-\u009f]/g, "").slice(0, 200) : "";
  const priced = money.price(passes);
  const main = [...priced.models].filter((m) => m.prices).sort((a, b) => b.requests - a.requests)[0];
  // The needed-later proxy reads what the session did next: the recorded messages after each pass.
  const { suspects, views, harm } = neededLater({ branch, pieces, passes, requests, lineOf, lineOfId, main });
  options.onGuarded?.(on);
  return {
    file: file.path,
    name,
    version: file.version,
    ...(generator ? { generated: generator } : {}),
    lines: file.lines,
    entries: branch.length,
    problems: file.problems,
    requests,
    passes,
    suspects: views,
    totals: sessionTotals(requests, passes, pieces, suspects),
    ms: performance.now() - started,
    dollars: dollarsOf(priced),
    money: priced,
    harm,
  };
}
