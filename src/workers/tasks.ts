// Pool task entry points. Each export is a plain function, so the same code runs in a worker
// (Piscina/Tinypool select it by name) or inline (library use, benchmarks).

import type { CacheModel } from "../core/cache/break-even.ts";
import type { CheckpointCacheView } from "../core/cache/checkpoint.ts";
import {
  type FinishConfig,
  type FinishOutput,
  finishPass,
  type PlanConfig,
  planCheckpoint,
  planRunEnd,
  type RunPlan,
} from "../core/distill/pass.ts";
import type { ClassifierOutcome, SnapEntry } from "../core/shared/types.ts";
import { type WorkerFailure, workerFailure } from "./pass/failures.ts";
import { type PackedValues, packValues } from "./pass/packed-values.ts";
import { type SyncInput, syncEntries } from "./pass/session-store.ts";
import { type RecallTaskInput, type RecallTaskOutput, recallText } from "./recall/recall-task.ts";

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
  /** Classifier outcomes sent ahead of `finish` (a pass with many requests sends them in slices). */
  outcomes: ClassifierOutcome[];
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
      : planRunEnd(synced.entries, input.config, input.cache);
  if (result.status === "run") {
    const byId = new Map(synced.entries.map((e) => [e.id, e.text]));
    const texts = result.candidates.map((c) => byId.get(c.entryId) ?? "");
    held.set(input.passId, { plan: result, entries: synced.entries, texts, outcomes: [] });
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
 * so no single message carries every request of a large pass. They travel packed (packed-values.ts).
 */
export function requests(input: RequestsTaskInput): PackedValues | WorkerFailure {
  const pass = held.get(input.passId);
  if (!pass) return workerFailure("pass-lost");
  return packValues(pass.plan.requests.slice(input.from, input.to));
}

/** Stores entries ahead of a plan (the first pass of a large session sends them in slices). */
export function sync(input: SyncInput): { storeId: string; missing?: string[] } {
  const out = syncEntries(input);
  return "missing" in out ? out : { storeId: out.storeId };
}

export interface OutcomesTaskInput {
  passId: string;
  /** Index of the first outcome in the list. */
  from: number;
  list: ClassifierOutcome[];
}

/** Outcomes of a held pass, a slice at a time, so that no single message carries all of them. */
export function outcomes(input: OutcomesTaskInput): number | WorkerFailure {
  const pass = held.get(input.passId);
  if (!pass) return workerFailure("pass-lost");
  input.list.forEach((o, i) => {
    pass.outcomes[input.from + i] = o;
  });
  return pass.outcomes.length;
}

export interface FinishTaskInput {
  passId: string;
  /** The classifier outcomes by request; when absent, the ones sent ahead with `outcomes`. */
  outcomes?: ClassifierOutcome[];
  config: FinishConfig;
  family?: CacheModel["family"];
}

/** Characters of drafts and results per message back to the main thread (about 1–2 ms to clone). */
export const FINISH_PART_CHARS = 500_000;

/** The first part of a pass's output, and how many more parts `finishPart` hands out. */
export type FinishTaskOutput = FinishOutput & { parts: number };

const heldParts = new Map<string, FinishOutput[]>();

/** Splits drafts and results into parts of about FINISH_PART_CHARS. */
function splitOutput(out: FinishOutput): FinishOutput[] {
  const parts: FinishOutput[] = [];
  let part: FinishOutput = { drafts: [], results: [] };
  let chars = 0;
  const add = (n: number) => {
    chars += n;
    if (chars < FINISH_PART_CHARS) return;
    parts.push(part);
    part = { drafts: [], results: [] };
    chars = 0;
  };
  for (const d of out.drafts) {
    part.drafts.push(d);
    add(200 + (d.replacement?.content.reduce((n, b) => n + b.text.length, 0) ?? 0));
  }
  for (const r of out.results) {
    part.results.push(r);
    add(200 + r.label.length + r.reason.length + r.jev.reduce((n, j) => n + j.length, 0));
  }
  if (part.drafts.length > 0 || part.results.length > 0 || parts.length === 0) parts.push(part);
  return parts;
}

export function finish(input: FinishTaskInput): FinishTaskOutput | WorkerFailure {
  const pass = held.get(input.passId);
  if (!pass) return workerFailure("pass-lost");
  held.delete(input.passId);
  const [first, ...rest] = splitOutput(
    finishPass({
      plan: pass.plan,
      entries: pass.entries,
      texts: pass.texts,
      outcomes: input.outcomes ?? pass.outcomes,
      config: input.config,
      family: input.family,
    }),
  );
  if (rest.length > 0) {
    heldParts.set(input.passId, rest);
    while (heldParts.size > MAX_HELD) heldParts.delete(heldParts.keys().next().value as string);
  }
  return { ...(first as FinishOutput), parts: rest.length };
}

/** The next part of a large pass output (in order; the last one releases the pass). */
export function finishPart(input: { passId: string }): FinishOutput | WorkerFailure {
  const rest = heldParts.get(input.passId);
  const part = rest?.shift();
  if (!rest || !part) return workerFailure("pass-lost");
  if (rest.length === 0) heldParts.delete(input.passId);
  return part;
}

export function recall(input: RecallTaskInput): RecallTaskOutput {
  return recallText(input);
}

export function ping(): string {
  return "pong";
}
