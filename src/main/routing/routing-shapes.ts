// The shapes skill routing and tool surfacing exchange with Pi's hooks and persist on the branch.
import type { DigestMessage, Held } from "../../core/routing/routing.ts";
import type { ClassifyFn } from "../pass/classify-queue.ts";

/** Custom entry holding the routing state, so resume and /tree restore what the transcript shows. */
export const ROUTING_ENTRY = "context-guard-routing";

export interface SkillLike {
  name: string;
  description: string;
  filePath: string;
  baseDir: string;
  disableModelInvocation?: boolean;
}

export interface ToolLike {
  name: string;
  exposure?: string;
  description?: string;
  parameters?: unknown;
}

export interface BoundaryInput {
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

export interface BoundaryOutput {
  /** Replacement for Pi's skills list (the reduced catalog); undefined leaves Pi's list. */
  catalog?: SkillLike[];
  /** The loaded-skills section ("" removes it); undefined leaves the sections alone. */
  section?: string;
  /** The new active tool list, only when it differs from Pi's. */
  activeTools?: string[];
  /** The persisted state changed. */
  changed: boolean;
}

export interface SkillBody {
  body: string;
  filePath: string;
  baseDir: string;
}

export interface LoadedSkill extends Held, Partial<SkillBody> {}

export interface RoutingSnapshot {
  v: 1;
  /** Whether the catalog is reduced and whether namespaces are surfaced by score (else Pi's default). */
  skillsRouted: boolean;
  toolsRouted: boolean;
  loaded: Array<{ name: string; score: number | null; turn: number }>;
  pinned: string[];
  surfaced: Array<{ name: string; score: number | null; turn: number }>;
  hidden: string[];
}

export type Notice = { class: string; message: string; level: "info" | "warning" };
