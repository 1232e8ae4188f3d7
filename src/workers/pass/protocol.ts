// Every message between Pi's thread and the pass worker, and the reply to each. Pi's side sends them
// through PassWorker (main/pass/pass-worker.ts); the worker answers them in pass-handler.ts. A message
// travels as the input of the pool's "pass" task, so each one is a structured clone of plain data.
//
// A pass is a conversation in this order: `sync` (zero or more, for a large first pass), `plan`,
// `requests` (a window at a time, while the classifier queue runs), `outcomes` (zero or more, for a pass
// with many requests), `finish`, `finishPart` (zero or more, for a large result). Every message after
// `plan` names the pass by its id; the worker holds that pass's state in between. `sync` and `plan` name
// the client (one per session), whose copy of the session the worker keeps across passes until `release`.
import type { CacheModel } from "../../core/cache/break-even.ts";
import type { CheckpointCacheView } from "../../core/cache/checkpoint.ts";
import type { FinishConfig, FinishOutput } from "../../core/distill/finish.ts";
import type { PlanConfig, RunPlan } from "../../core/distill/plan.ts";
import type { ClassifierOutcome } from "../../core/shared/types.ts";
import type { WorkerFailure } from "./failures.ts";
import type { PackedValues } from "./packed-values.ts";
import type { SyncInput } from "./session-store.ts";

/** Is the worker thread up (warms it)? */
export interface PingMessage {
  kind: "ping";
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
  config: PlanConfig;
  /** Names the pass in every later message, so the worker finds its plan without receiving it again. */
  passId: string;
  /** A run-end pass (default) or a mid-run checkpoint, which also needs the cache view for break-even. */
  phase?: "run-end" | "mid-run";
  cache?: CheckpointCacheView;
  /** The session's working directory: the run's reads are checked against the disk there. */
  cwd?: string;
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
  config: FinishConfig;
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

/** The client's session ended: drop its store. */
export interface ReleaseMessage {
  kind: "release";
  client: string;
}

export type PassMessage =
  | PingMessage
  | ReleaseMessage
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
  sync: StoreReply | { storeId: string };
  plan: StoreReply | { storeId: string; plan: PlanSummary };
  requests: PackedValues;
  /** How many outcomes the worker now holds for the pass. */
  outcomes: number;
  /** The first part of the output, and how many more `finishPart` hands out. */
  finish: FinishOutput & { parts: number };
  finishPart: FinishOutput;
}

/** The reply to a message: its value, or a failure with a code (see failures.ts). */
export type PassReply<K extends PassKind> = PassReplies[K] | WorkerFailure;

/** Every kind, for the worker's check of what it received. */
export const PASS_KINDS: readonly PassKind[] = [
  "ping",
  "release",
  "sync",
  "plan",
  "requests",
  "outcomes",
  "finish",
  "finishPart",
];
