// Pool task entry points. Each export is a plain function, so the same code runs in a worker
// (Piscina/Tinypool select it by name) or inline (library use, benchmarks).

import type { CacheModel } from "../core/break-even.ts";
import type { CheckpointCacheView } from "../core/checkpoint.ts";
import {
  type FinishConfig,
  type FinishOutput,
  finishPass,
  type PlanConfig,
  planCheckpoint,
  planRunEnd,
  type RunPlan,
} from "../core/pass.ts";
import { buildRoutingState, type RoutingState, type RoutingStateInput } from "../core/routing.ts";
import type { ClassifierOutcome, ClassifierRequest, SnapEntry } from "../core/types.ts";
import { type RecallTaskInput, type RecallTaskOutput, recallText } from "./recall-task.ts";
import { type SyncInput, syncEntries } from "./session-store.ts";

export interface PlanTaskInput {
  sync: SyncInput;
  config: PlanConfig;
  /** Names the pass so `finish` can find its plan and texts without receiving them again. */
  passId: string;
  /** A run-end pass (default) or a mid-run checkpoint, which also needs the cache view for break-even. */
  phase?: "run-end" | "mid-run";
  cache?: CheckpointCacheView;
}

/** What the main thread needs of a plan: the requests to send. The rest stays in the worker for `finish`. */
export type PlanSummary =
  | { status: "skip"; reason: string }
  | { status: "run"; requestCount: number; kinds: RunPlan["kinds"]; images: number };

export type PlanTaskOutput = { storeId: string; missing: string[] } | { storeId: string; plan: PlanSummary };

interface HeldPass {
  plan: RunPlan;
  entries: SnapEntry[];
  texts: string[];
}

// A pass is planned and finished within one hook; keep a few in case passes overlap.
const held = new Map<string, HeldPass>();
const MAX_HELD = 4;

export function plan(input: PlanTaskInput): PlanTaskOutput {
  const synced = syncEntries(input.sync);
  if ("missing" in synced) return synced;
  const result =
    input.phase === "mid-run"
      ? planCheckpoint(synced.entries, input.config, input.cache ?? { family: "other" })
      : planRunEnd(synced.entries, input.config);
  if (result.status === "run") {
    const byId = new Map(synced.entries.map((e) => [e.id, e.text]));
    const texts = result.candidates.map((c) => byId.get(c.entryId) ?? "");
    held.set(input.passId, { plan: result, entries: synced.entries, texts });
    while (held.size > MAX_HELD) held.delete(held.keys().next().value as string);
  }
  const summary: PlanSummary =
    result.status === "run"
      ? { status: "run", requestCount: result.requests.length, kinds: result.kinds, images: result.images.length }
      : result;
  return { storeId: synced.storeId, plan: summary };
}

export interface RequestsTaskInput {
  passId: string;
  from: number;
  to: number;
}

/**
 * A window of a held pass's classifier requests. The main thread fetches them as the queue starts them,
 * so no single message carries every request of a large pass.
 */
export function requests(input: RequestsTaskInput): ClassifierRequest[] {
  const pass = held.get(input.passId);
  if (!pass) throw new Error("the pass worker was replaced during the pass; nothing is changed");
  return pass.plan.requests.slice(input.from, input.to);
}

/** Stores entries ahead of a plan (the first pass of a large session sends them in slices). */
export function sync(input: SyncInput): { storeId: string; missing?: string[] } {
  const out = syncEntries(input);
  return "missing" in out ? out : { storeId: out.storeId };
}

export interface FinishTaskInput {
  passId: string;
  outcomes: ClassifierOutcome[];
  config: FinishConfig;
  family?: CacheModel["family"];
}

export function finish(input: FinishTaskInput): FinishOutput {
  const pass = held.get(input.passId);
  if (!pass) throw new Error("the pass worker was replaced during the pass; nothing is changed");
  held.delete(input.passId);
  return finishPass({
    plan: pass.plan,
    entries: pass.entries,
    texts: pass.texts,
    outcomes: input.outcomes,
    config: input.config,
    family: input.family,
  });
}

export function recall(input: RecallTaskInput): RecallTaskOutput {
  return recallText(input);
}

/** Skill routing's state: the latest prompt in its own field and a capped digest of the conversation. */
export function routingState(input: RoutingStateInput): RoutingState {
  return buildRoutingState(input);
}

export function ping(): string {
  return "pong";
}
