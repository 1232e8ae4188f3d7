// Pool task entry points. Each export is a plain function, so the same code runs in a worker
// (Piscina/Tinypool select it by name) or inline (library use, benchmarks).

import type { FinishInput } from "../core/pass.ts";
import { type FinishOutput, finishRunEnd, type PassPlan, type PlanConfig, planRunEnd } from "../core/pass.ts";
import type { ClassifierOutcome } from "../core/types.ts";
import { type RecallTaskInput, type RecallTaskOutput, recallText } from "./recall-task.ts";
import { type SyncInput, syncEntries } from "./session-store.ts";

export interface PlanTaskInput {
  sync: SyncInput;
  config: PlanConfig;
  /** Names the pass so `finish` can find its plan and texts without receiving them again. */
  passId: string;
}

export type PlanTaskOutput = { storeId: string; missing: string[] } | { storeId: string; plan: PassPlan };

interface HeldPass {
  plan: Extract<PassPlan, { status: "run" }>;
  texts: string[];
}

// A pass is planned and finished within one hook; keep a few in case passes overlap.
const held = new Map<string, HeldPass>();
const MAX_HELD = 4;

export function plan(input: PlanTaskInput): PlanTaskOutput {
  const synced = syncEntries(input.sync);
  if ("missing" in synced) return synced;
  const result = planRunEnd(synced.entries, input.config);
  if (result.status === "run") {
    const byId = new Map(synced.entries.map((e) => [e.id, e.text]));
    held.set(input.passId, { plan: result, texts: result.candidates.map((c) => byId.get(c.entryId) ?? "") });
    while (held.size > MAX_HELD) held.delete(held.keys().next().value as string);
  }
  return { storeId: synced.storeId, plan: result };
}

export interface FinishTaskInput {
  passId: string;
  outcomes: ClassifierOutcome[];
  config: FinishInput["config"];
}

export function finish(input: FinishTaskInput): FinishOutput {
  const pass = held.get(input.passId);
  if (!pass) throw new Error("the pass worker was replaced during the pass; nothing is changed");
  held.delete(input.passId);
  return finishRunEnd({
    candidates: pass.plan.candidates,
    texts: pass.texts,
    outcomes: input.outcomes,
    citedFiles: pass.plan.citedFiles,
    config: input.config,
  });
}

export function recall(input: RecallTaskInput): RecallTaskOutput {
  return recallText(input);
}

export function ping(): string {
  return "pong";
}
