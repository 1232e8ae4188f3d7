// Pool task entry points. Each export is a plain function, so the same code runs in a worker
// (Piscina/Tinypool select it by name) or inline (library use, benchmarks).
import {
  type FinishInput,
  type FinishOutput,
  finishRunEnd,
  type PassPlan,
  type PlanConfig,
  planRunEnd,
} from "../core/pass.ts";
import type { SnapEntry } from "../core/types.ts";
import { type RecallTaskInput, type RecallTaskOutput, recallText } from "./recall-task.ts";

export interface PlanTaskInput {
  entries: SnapEntry[];
  config: PlanConfig;
}

export function plan(input: PlanTaskInput): PassPlan {
  return planRunEnd(input.entries, input.config);
}

export function finish(input: FinishInput): FinishOutput {
  return finishRunEnd(input);
}

export function recall(input: RecallTaskInput): RecallTaskOutput {
  return recallText(input);
}

export function ping(): string {
  return "pong";
}
