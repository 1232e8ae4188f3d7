// The only code on Pi's thread that talks to the pass worker: it sends the messages of
// workers/pass/protocol.ts, keeps the mirror of what the worker's store holds, sends the settings only
// when the worker does not hold them yet, and cuts large messages into bounded ones (syncs sent ahead in
// slices, request windows, outcome slices, finish parts) so no single clone blocks Pi's thread for long. A pass keeps state on the worker between its messages, so
// every message goes to one thread: the runner's own when it has one, else a one-thread pool of its own.
import type { LandingPass } from "../../core/boundary/landed-items.ts";
import type { CacheModel } from "../../core/cache/break-even.ts";
import type { CheckpointCacheView } from "../../core/cache/checkpoint.ts";
import type { FinishOutput } from "../../core/distill/finish.ts";
import type { ClassifierOutcome, ClassifierRequest, PassPhase, SnapEntry } from "../../core/shared/types.ts";
import { PassWorkerError, unwrapFailure } from "../../workers/pass/failures.ts";
import { type PackedValues, packedCount, unpackValue } from "../../workers/pass/packed-values.ts";
import type {
  MessageOf,
  PassKind,
  PassReplies,
  PassSettings,
  PlanSummary,
  SyncEntry,
  SyncInput,
  TextPiece,
} from "../../workers/pass/protocol.ts";
import { callback } from "../platform/callbacks.ts";
import { InFlight } from "../platform/in-flight.ts";
import { nextTurn } from "../platform/pace.ts";
import { type TaskRunner, TaskTimeoutError } from "../platform/pool.ts";
import type { RequestSource } from "./classify-queue.ts";
import { same, WorkerMirror } from "./worker-mirror.ts";

/** A stuck worker task (a pathological input, a bug) must not hold the hook forever. */
const WORKER_TASK_TIMEOUT_MS = 30_000;

/** Most time a session's shutdown waits for the worker to drop its copy (a pass may still hold the thread). */
export const RELEASE_TIMEOUT_MS = 1000;

/**
 * Size of one message to the worker when a large sync is sent ahead of the plan: about a millisecond of
 * cloning. Counted in characters, plus ENTRY_WEIGHT per entry for the fields every entry carries.
 */
export const SYNC_SLICE_CHARS = 500_000;
const ENTRY_WEIGHT = 1000;

/** Classifier outcomes per message to the worker (each carries the answers to up to 40 questions). */
const OUTCOME_SLICE = 100;

const headChars = (heads: SnapEntry["imageHeads"]) => heads?.reduce((n, h) => n + h.head.length, 0) ?? 0;
const sentChars = (e: SnapEntry) =>
  ENTRY_WEIGHT + e.text.length + (e.rawText?.length ?? 0) + headChars(e.imageHeads) + headChars(e.rawImageHeads);

export interface PassWorkerOptions {
  /** What the worker already holds (one per session); by default a new one, so every entry is sent. */
  mirror?: WorkerMirror;
  /** Most time one message may take before its thread is stopped. Default WORKER_TASK_TIMEOUT_MS. */
  timeoutMs?: number;
}

export interface PlanRequest {
  passId: string;
  /** The settings to plan and finish with; sent to the worker only when they are not the ones it holds. */
  config: PassSettings;
  phase: PassPhase;
  cache?: CheckpointCacheView;
  /** The session's working directory, for checking the run's reads against the disk (none in a replay). */
  cwd?: string;
  /** A pass landing at the same boundary (what the plan leaves alone, whose rewrite is paid). */
  landing?: LandingPass;
}

export class PassWorker {
  readonly mirror: WorkerMirror;
  readonly #runner: TaskRunner;
  readonly #timeoutMs: number;
  /** The settings the worker holds for this client as far as this side knows (a copy), and their version. */
  #settings: { sent: PassSettings; version: number } | undefined;
  #nextSettings = 1;

  constructor(runner: TaskRunner, options: PassWorkerOptions = {}) {
    this.#runner = runner.oneThread?.() ?? runner;
    this.mirror = options.mirror ?? new WorkerMirror();
    this.#timeoutMs = options.timeoutMs ?? WORKER_TASK_TIMEOUT_MS;
  }

  /**
   * Sends one message under the time limit (the pool terminates the thread on abort). Every failure
   * becomes a PassWorkerError with a code: the worker's own, or one from what this side saw.
   */
  async #send<K extends PassKind>(message: MessageOf<K>, ms = this.#timeoutMs): Promise<PassReplies[K]> {
    // The limit counts from when a thread takes the message, not from when it was queued; a runner that
    // does not time its tasks gets a timer of ours, from now.
    const own = this.#runner.timesTasks ? undefined : new AbortController();
    const timer = own
      ? setTimeout(
          callback("worker-timer", () => own.abort()),
          ms,
        )
      : undefined;
    let reply: unknown;
    try {
      reply = await this.#runner.run("pass", message, own ? { signal: own.signal } : { timeoutMs: ms });
    } catch (error) {
      if (error instanceof TaskTimeoutError || own?.signal.aborted) {
        throw new PassWorkerError("timeout", `a worker task took longer than ${ms} ms and was stopped`, {
          cause: error,
        });
      }
      throw new PassWorkerError("worker-failed", (error as Error)?.message ?? String(error), { cause: error });
    } finally {
      if (timer) clearTimeout(timer);
    }
    return unwrapFailure(reply as PassReplies[K]);
  }

  /** Starts the worker thread (a pass then never pays a cold start). */
  async ping(): Promise<void> {
    await this.#send({ kind: "ping" });
  }

  /**
   * The session ended: the worker drops its settings and copy, and a later pass sends everything again.
   * A release that outlives `timeoutMs` stops the thread, which drops them as well.
   */
  async release(timeoutMs = this.#timeoutMs): Promise<void> {
    this.#settings = undefined;
    this.mirror.reset();
    await this.#send({ kind: "release", client: this.mirror.client }, timeoutMs);
  }

  /** The version of `settings` the worker holds, sending them first when it does not hold these. */
  async #settingsVersion(settings: PassSettings): Promise<number> {
    const held = this.#settings;
    if (held && same(held.sent, settings)) return held.version;
    const version = this.#nextSettings++;
    this.#settings = undefined;
    await this.#send({ kind: "settings", client: this.mirror.client, version, settings });
    this.#settings = { sent: structuredClone(settings), version };
    return version;
  }

  /**
   * Sends the session ahead of any pass (when a session's first run starts), in the same paced slices
   * a first pass uses: the first pass of a resumed session then sends only what changed. Returns the
   * number of entries sent.
   */
  async warm(entries: readonly SnapEntry[], signal?: AbortSignal): Promise<number> {
    const sync = await this.mirror.preparePaced(entries);
    if (sync.fresh.length === 0) return 0;
    const sent = await this.#sendAhead(sync.fresh, "now", signal);
    return sent ? sync.fresh.length : 0;
  }

  /** Syncs the store (ahead in slices when large) and plans the pass there. */
  async plan(entries: readonly SnapEntry[], { config, ...request }: PlanRequest): Promise<PlanSummary> {
    const mirror = this.mirror;
    // A worker that lost the settings (it was replaced) asks for them once more; that is not an attempt.
    let settingsResent = false;
    for (let attempt = 0; attempt < 2; attempt++) {
      let sync = await mirror.preparePaced(entries);
      let chars = 0;
      for (const e of sync.fresh) chars += sentChars(e);
      if (chars >= SYNC_SLICE_CHARS) {
        // Too much for the plan's own message: send it ahead, then the plan's sync carries the rest.
        if (!(await this.#sendAhead(sync.fresh, "with-plan"))) continue;
        sync = await mirror.preparePaced(entries);
      }
      const settings = await this.#settingsVersion(config);
      let out: PassReplies["plan"];
      try {
        out = await this.#send({ kind: "plan", client: this.mirror.client, sync, settings, ...request });
      } catch (error) {
        if (!(error instanceof PassWorkerError) || error.code !== "settings-missing") throw error;
        // Lost again right after they were sent: the messages do not reach one thread.
        if (settingsResent) throw new PassWorkerError("pass-lost", error.message, { cause: error });
        settingsResent = true;
        this.#settings = undefined;
        attempt--;
        continue;
      }
      if ("plan" in out) {
        mirror.accept(out.storeId, sync);
        return out.plan;
      }
      mirror.reset(out.storeId);
    }
    throw new PassWorkerError("pass-lost", "the pass worker could not take the session snapshot");
  }

  /**
   * Sends what the store lacks in slices of about SYNC_SLICE_CHARS, yielding between them; a text larger
   * than a slice travels as pieces ahead of its entry. Returns false if the store turned out to be
   * another than the mirror thought (it has been reset; the caller starts over).
   */
  async #sendAhead(fresh: SyncEntry[], rest: "with-plan" | "now", signal?: AbortSignal): Promise<boolean> {
    const mirror = this.mirror;
    const send = async (part: SyncInput): Promise<boolean> => {
      // The worker answers within the same event-loop turn when it is quick: without a turn of our own
      // between messages, several slices would go out back to back in one block.
      await nextTurn();
      signal?.throwIfAborted();
      const out = await this.#send({ kind: "sync", client: this.mirror.client, sync: part });
      if ("missing" in out) {
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
   * The pass's requests, fetched a window at a time as the queue starts them. The next window is asked
   * for as soon as one is first used, so a freed slot does not wait for a worker round trip; a window is
   * let go once each of its requests has been taken (a retry fetches it again), so a long pass does not
   * keep every request body it sent alive on Pi's thread.
   */
  requests(passId: string, count: number, window: number): RequestSource {
    const windows = new InFlight<{ list: Promise<PackedValues>; taken: Set<number> }>();
    let furthest = -1;
    const fetch = (from: number) => {
      furthest = Math.max(furthest, from);
      let held = windows.get(from);
      if (!held) {
        const to = Math.min(count, from + window);
        const list = this.#send({ kind: "requests", passId, from, to });
        const made = { list, taken: new Set<number>() };
        windows.set(from, made);
        // swallow-ok: A failed fetch is tried again by the request's retry.
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
   * Hands the outcomes over (in slices when many) and brings the drafts and results back (in parts). The
   * worker finishes with the settings the pass was planned with.
   * `split`: one of the two finishes of a handed-over pass (FinishMessage).
   */
  async finish(
    passId: string,
    outcomes: ClassifierOutcome[],
    family?: CacheModel["family"],
    split?: MessageOf<"finish">["split"],
  ): Promise<FinishOutput> {
    const inline = outcomes.length <= OUTCOME_SLICE;
    for (let from = 0; !inline && from < outcomes.length; from += OUTCOME_SLICE) {
      await nextTurn();
      await this.#send({ kind: "outcomes", passId, from, list: outcomes.slice(from, from + OUTCOME_SLICE) });
    }
    const first = await this.#send({
      kind: "finish",
      passId,
      ...(inline ? { outcomes } : {}),
      ...(family ? { family } : {}),
      ...(split ? { split } : {}),
    });
    let drafts = first.drafts;
    let results = first.results;
    for (let part = 0; part < first.parts; part++) {
      const more = await this.#send({ kind: "finishPart", passId });
      drafts = drafts.concat(more.drafts);
      results = results.concat(more.results);
    }
    return { drafts, results };
  }
}
