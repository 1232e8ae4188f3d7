// Every message between Pi's thread and the pass worker, and the reply to each. Pi's side sends them
// through PassWorker (main/pass/pass-worker.ts); the worker answers them in pass-handler.ts. A message
// travels as the input of the pool's "pass" task, so each one is a structured clone of plain data.
//
// A session sends `settings` before its first plan and again when they change; a plan names the version
// it runs with, and the pass keeps it to its finish.
//
// A pass is a conversation in this order: `sync` (zero or more, for a large first pass), `plan`,
// `requests` (a window at a time, while the classifier queue runs), `outcomes` (zero or more, for a pass
// with many requests), `finish`, `finishPart` (zero or more, for a large result). Every message after
// `plan` names the pass by its id; the worker holds that pass's state in between. `settings`, `sync` and
// `plan` name the client (one per session), whose settings and copy of the session the worker keeps
// across passes until `release`.
import type { LandingPass } from "../../core/boundary/landed-items.ts";
import type { CacheModel } from "../../core/cache/break-even.ts";
import type { CheckpointCacheView } from "../../core/cache/checkpoint.ts";
import type { FinishOutput } from "../../core/distill/finish.ts";
import type { PlanConfig, RunPlan } from "../../core/distill/plan.ts";
import type { ClassifierOutcome, PassPhase, SnapEntry } from "../../core/shared/types.ts";
import type { PackedValues } from "./packed-values.ts";

// What a sync carries: the entries the store lacks and the projection's order (session-store.ts keeps them).

/**
 * An entry as sent. `rawFromStore`: an edited entry sent without `rawText`, which is the text this store
 * holds for the id (the entry's unedited text, or the raw text of its previous edit). `textInPieces` /
 * `rawInPieces`: the text arrived before the entry, as pieces.
 */
export type SyncEntry = SnapEntry & { rawFromStore?: true; textInPieces?: true; rawInPieces?: true };

/** A slice of one large text, sent ahead of its entry so that no single message carries all of it. */
export interface TextPiece {
  id: string;
  field: "text" | "rawText";
  /** Where the part starts in the text. */
  offset: number;
  part: string;
}

/** The projection's order relative to the store's last one. */
export interface OrderDelta {
  /** Ids kept from the start of the store's current order. */
  keep: number;
  /** The ids after those. */
  tail: string[];
  /** Names the resulting order, for the next delta's `base`. */
  version: number;
}

export interface SyncInput {
  /** The store the caller believes it filled; another id means the caller's bookkeeping is stale. */
  storeId?: string;
  /** The order version the caller believes the store holds; another one also means stale bookkeeping. */
  base?: number;
  /** Entries the store may not have, or whose content changed (edited ones). */
  fresh: SyncEntry[];
  pieces?: TextPiece[];
  /** A plan's sync carries the order; a sync sent ahead of the plan does not. */
  order?: OrderDelta;
}

/** Is the worker thread up (warms it)? */
export interface PingMessage {
  kind: "ping";
}

/** The settings a pass plans and finishes with: the session's config. */
export type PassSettings = PlanConfig;

/** The session's settings, sent before its first plan and again when they change. */
export interface SettingsMessage {
  kind: "settings";
  client?: string;
  /** Names these settings in the plans that use them. */
  version: number;
  settings: PassSettings;
}

/** Entries the worker's store lacks, sent ahead of a plan (a large first pass sends them in slices). */
export interface SyncMessage {
  kind: "sync";
  /** Whose store (one per session); by default the thread's one unnamed store. */
  client?: string;
  sync: SyncInput;
}

/** The last entries and the projection's order, then the plan over the store's copy of the session. */
export interface PlanMessage {
  kind: "plan";
  client?: string;
  sync: SyncInput;
  /** The version of the client's settings to plan with (sent before in a `settings` message). */
  settings: number;
  /** Names the pass in every later message, so the worker finds its plan without receiving it again. */
  passId: string;
  /** A run-end pass (default) or a mid-run checkpoint, which also needs the cache view for break-even. */
  phase?: PassPhase;
  cache?: CheckpointCacheView;
  /** The session's working directory: the run's reads are checked against the disk there. */
  cwd?: string;
  /** A pass landing at the same boundary: what it judged is left alone, its edits' rewrite is paid. */
  landing?: LandingPass;
}

/** The planned classifier requests `from` (inclusive) `to` (exclusive), packed in one buffer. */
export interface RequestsMessage {
  kind: "requests";
  passId: string;
  from: number;
  to: number;
}

/** Classifier outcomes sent ahead of `finish`, a slice at a time, so that no message carries all of them. */
export interface OutcomesMessage {
  kind: "outcomes";
  passId: string;
  /** Index of the first outcome in the list. */
  from: number;
  list: ClassifierOutcome[];
}

/** Renders the pass's drafts and results from its plan and the outcomes. */
export interface FinishMessage {
  kind: "finish";
  passId: string;
  /** The outcomes by request; when absent, the ones sent ahead with `outcomes`. */
  outcomes?: ClassifierOutcome[];
  family?: CacheModel["family"];
  /**
   * A pass handed over before every answer came (core/distill/split.ts): `answered` finishes the items
   * none of whose requests is `pending` and keeps the pass for a second finish; `waiting` finishes only
   * the items that were waiting, with every answer, and releases it.
   */
  split?: { pending: number[]; part: "answered" | "waiting" };
}

/** The next part of a large finish output (in order; the last one releases the pass). */
export interface FinishPartMessage {
  kind: "finishPart";
  passId: string;
}

/** The client's session ended: drop its settings and store. */
export interface ReleaseMessage {
  kind: "release";
  client: string;
}

export type PassMessage =
  | PingMessage
  | ReleaseMessage
  | SettingsMessage
  | SyncMessage
  | PlanMessage
  | RequestsMessage
  | OutcomesMessage
  | FinishMessage
  | FinishPartMessage;

export type PassKind = PassMessage["kind"];
export type MessageOf<K extends PassKind> = Extract<PassMessage, { kind: K }>;

/** What Pi's thread needs of a plan: how many requests there are. The rest stays in the worker. */
export type PlanSummary =
  | { status: "skip"; reason: string }
  | { status: "run"; requestCount: number; kinds: RunPlan["kinds"]; images: number; staleReads?: number };

/**
 * `missing`: the store is another than the sender believed, or lacked an entry: it has started over
 * and the sender resends everything (not a failure: a replaced worker starts empty).
 */
export type StoreReply = { storeId: string; missing: string[] };

/** The reply to each message when it succeeds. */
export interface PassReplies {
  ping: "pong";
  /** Whether there was a store to drop. */
  release: boolean;
  settings: true;
  sync: StoreReply | { storeId: string };
  plan: StoreReply | { storeId: string; plan: PlanSummary };
  requests: PackedValues;
  /** How many outcomes the worker now holds for the pass. */
  outcomes: number;
  /** The first part of the output, and how many more `finishPart` hands out. */
  finish: FinishOutput & { parts: number };
  finishPart: FinishOutput;
}

/** Why a message failed (failures.ts makes and reads them). */
export type WorkerFailureCode =
  /** The worker holds no state for this pass: it was replaced (crash, restart), or the task reached another thread. */
  | "pass-lost"
  /** The worker received a message the protocol does not declare. */
  | "bad-message"
  /** A plan named settings the worker does not hold (a replaced worker): the sender sends them again. */
  | "settings-missing"
  /** A task took longer than the pass's worker time limit; the pool stopped its thread. */
  | "timeout"
  /** The task threw, or its thread died (exit, out of memory, a pool that failed to start). */
  | "worker-failed";

/** The codes a worker reports as data; the others arise on Pi's thread. */
export type ReportedCode = Extract<WorkerFailureCode, "pass-lost" | "bad-message" | "settings-missing">;

/** A failure the worker reports as its reply (an Error thrown in a worker loses its class on the way). */
export interface WorkerFailure {
  failure: ReportedCode;
  message: string;
}

/** The reply to a message: its value, or a failure with a code (see failures.ts). */
export type PassReply<K extends PassKind> = PassReplies[K] | WorkerFailure;

/** Every kind, for the worker's check of what it received. */
export const PASS_KINDS: readonly PassKind[] = [
  "ping",
  "release",
  "settings",
  "sync",
  "plan",
  "requests",
  "outcomes",
  "finish",
  "finishPart",
];
