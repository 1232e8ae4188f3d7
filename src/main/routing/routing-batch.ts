// One scoring round: every skill not yet loaded (with its full SKILL.md body), the loaded ones when a
// decay check is due, and the namespaces in one batched request, all through classifyAll.

import {
  batchHealth,
  boolScore,
  buildRoutingState,
  namespaceRequest,
  SKILL_QUESTION_ID,
  skillRequest,
} from "../../core/routing/routing.ts";
import type { BatchResult } from "../../core/routing/routing-state.ts";
import type { RoutingAsk } from "../../core/routing/turn-decision.ts";
import type { GuardConfig } from "../../core/shared/config.ts";
import type { ClassifierOutcome, ClassifierRequest } from "../../core/shared/types.ts";
import { type ClassifyFn, classifyAll } from "../pass/classify-queue.ts";
import type { SkillLike, TurnInput } from "./routing-shapes.ts";
import type { SkillBodies } from "./skill-bodies.ts";

export type { BatchResult };

/** A batch with no scores yet: the start of a scoring round, or one that failed as a whole. */
export function emptyBatch(gen: number, health: "empty" | "failed", extra: Partial<BatchResult> = {}): BatchResult {
  return {
    gen,
    health,
    skillHealth: health,
    nsHealth: health,
    skillScores: new Map(),
    decayScores: new Map(),
    nsScores: new Map(),
    nsDecayScores: new Map(),
    bodies: new Map(),
    requests: 0,
    inputTokens: 0,
    costUsd: 0,
    timedOut: false,
    promptChars: 0,
    digestChars: 0,
    ...extra,
  };
}

/** What toAsk() said to ask, and how. */
export interface BatchPlan extends RoutingAsk {
  gen: number;
  config: GuardConfig;
  bodies: SkillBodies;
  /** Stops the requests when the session ends. */
  signal: AbortSignal;
}

export async function scoreBatch(input: TurnInput, plan: BatchPlan): Promise<BatchResult> {
  const { config, gen, due } = plan;
  const classify = input.classify as ClassifyFn;
  // Built here, not in the pool: history() is already capped and this is quick, while the pool's first
  // task of a session waits for its thread to start, which on a busy machine took most of the routing
  // budget before any request was sent.
  const routing = buildRoutingState({ prompt: input.prompt ?? "", messages: input.history() });
  const result = emptyBatch(gen, "empty", { promptChars: routing.promptChars, digestChars: routing.digestChars });
  const requests: ClassifierRequest[] = [];
  const kinds: Array<{ kind: "skill" | "decay"; name: string } | { kind: "ns"; ids: Record<string, string> }> = [];
  if (plan.skillsOn) {
    const eligible = input.skills.filter((s) => !s.disableModelInvocation);
    const invoked = routing.invokedSkill;
    const asks: Array<{ skill: SkillLike; kind: "skill" | "decay" }> = [];
    for (const s of eligible) {
      if (plan.pinned.has(s.name) || s.name === invoked) continue;
      if (!plan.loaded.has(s.name)) asks.push({ skill: s, kind: "skill" });
      else if (due) asks.push({ skill: s, kind: "decay" });
    }
    const bodies = await Promise.all(asks.map((a) => plan.bodies.read(a.skill)));
    asks.forEach((a, i) => {
      const body = bodies[i];
      if (!body) return;
      result.bodies.set(a.skill.name, body);
      requests.push(
        skillRequest(routing.state, { name: a.skill.name, description: a.skill.description, body: body.body }),
      );
      kinds.push({ kind: a.kind, name: a.skill.name });
    });
  }
  const nsAsked = [...plan.namespaces, ...(due ? plan.surfacedNs : [])];
  if (nsAsked.length > 0) {
    const batch = namespaceRequest(routing.state, nsAsked);
    requests.push(batch.request);
    kinds.push({ kind: "ns", ids: batch.ids });
  }
  if (requests.length === 0) return result;
  const queued = await classifyAll(requests, classify, {
    concurrency: config.concurrency,
    timeoutMs: Math.max(config.routingTimeoutMs, config.timeoutMs),
    attempts: 1,
    signal: plan.signal,
  });
  const outcomes: ClassifierOutcome[] = queued.outcomes;
  result.health = batchHealth(outcomes);
  result.skillHealth = batchHealth(outcomes.filter((_, i) => kinds[i]?.kind !== "ns"));
  result.nsHealth = batchHealth(outcomes.filter((_, i) => kinds[i]?.kind === "ns"));
  result.error = outcomes.find((o) => o.status === "error")?.error;
  result.requests = queued.sent;
  result.timedOut = queued.timedOut;
  for (const o of outcomes) {
    result.inputTokens += o.inputTokens ?? 0;
    result.costUsd += o.costUsd ?? 0;
  }
  const surfacedNames = new Set(plan.surfacedNs.map((n) => n.name));
  kinds.forEach((k, i) => {
    const outcome = outcomes[i];
    if (k.kind === "ns") {
      for (const [id, name] of Object.entries(k.ids)) {
        const score = boolScore(outcome, id);
        (surfacedNames.has(name) ? result.nsDecayScores : result.nsScores).set(name, score);
      }
    } else {
      const score = boolScore(outcome, SKILL_QUESTION_ID);
      (k.kind === "skill" ? result.skillScores : result.decayScores).set(k.name, score);
    }
  });
  return result;
}
