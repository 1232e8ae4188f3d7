// The shapes skill routing and tool surfacing exchange with Pi's hooks and persist on the branch.
import type { DigestMessage } from "../../core/routing/routing.ts";
import type { SkillInfo, ToolDoc, TurnView } from "../../core/routing/routing-state.ts";
import type { ClassifyFn } from "../pass/classify-queue.ts";

/** Custom entry holding the routing state, so resume and /tree restore what the transcript shows. */
export const ROUTING_ENTRY = "context-guard-routing";

export type { Notice, RoutingSnapshot, SkillBody } from "../../core/routing/routing-state.ts";
export type SkillLike = SkillInfo;
export type ToolLike = ToolDoc;

export interface TurnInput {
  kind: "user" | "custom";
  /** The prompt as Pi will send it (user runs). */
  prompt?: string;
  /** Pi's skills for this run (event.systemPromptOptions.skills). */
  skills: readonly SkillLike[];
  /** pi.getAllTools() and pi.getActiveTools(). */
  tools: readonly ToolLike[];
  active: readonly string[];
  /** Earlier conversation, newest first (tool I/O excluded). */
  history: () => DigestMessage[];
  /** 1-based number of this user turn on the branch. */
  userTurn: number;
  classify?: ClassifyFn;
  /**
   * The main model's prompt cache is still warm: evictions wait for a cold prompt, since each one rewrites
   * the whole cached prompt to save a few hundred tokens a request.
   */
  cacheWarm?: boolean;
  /** Why there is no classifier (error class and a notice text). */
  unavailable?: { class: string; message: string };
  entryId?: string;
}

/** What the model should see after the turn (core/routing/turn-decision.ts). */
export type TurnOutput = TurnView;
