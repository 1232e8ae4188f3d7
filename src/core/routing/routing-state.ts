// The router's state: what the branch persists (the `RoutingSnapshot`) plus the few facts that only live as
// long as the session (why routing is static, the failure count). turn-decision.ts moves it from one turn to
// the next; the footer is read from it here. No Pi, no IO.
import type { GuardConfig } from "../shared/config.ts";
import type { BatchHealth, Held } from "./routing.ts";

export interface SkillInfo {
  name: string;
  description: string;
  filePath: string;
  baseDir: string;
  disableModelInvocation?: boolean;
}

export interface ToolDoc {
  name: string;
  exposure?: string;
  description?: string;
  parameters?: unknown;
}

export interface SkillBody {
  body: string;
  filePath: string;
  baseDir: string;
}

export type Notice = { class: string; message: string; level: "info" | "warning" };

/** The routing state as a custom entry on the branch, so resume and /tree restore what the transcript shows. */
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

export type RoutingConfig = Pick<
  GuardConfig,
  | "enabled"
  | "routeSkills"
  | "loadThreshold"
  | "topK"
  | "decayThreshold"
  | "decayIntervalTurns"
  | "toolNamespaces"
  | "coreTools"
>;

/** What one scoring round answered (main/routing/routing-batch.ts asks). */
export interface BatchResult {
  gen: number;
  health: BatchHealth;
  /** Health of the skill requests and of the namespace request alone. */
  skillHealth: BatchHealth;
  nsHealth: BatchHealth;
  error?: string;
  skillScores: Map<string, number | undefined>;
  decayScores: Map<string, number | undefined>;
  nsScores: Map<string, number | undefined>;
  nsDecayScores: Map<string, number | undefined>;
  bodies: Map<string, SkillBody>;
  requests: number;
  inputTokens: number;
  costUsd: number;
  timedOut: boolean;
  promptChars: number;
  digestChars: number;
}

/** What is known before the classifier is asked. */
export interface TurnStart {
  kind: "user" | "custom";
  config: RoutingConfig;
  /** The prompt as Pi will send it (user runs). */
  prompt?: string;
  /** Pi's skills for this run. */
  skills: readonly SkillInfo[];
  /** Every registered tool, and the active ones in Pi's order. */
  tools: readonly ToolDoc[];
  active: readonly string[];
  /** 1-based number of this user turn on the branch. */
  userTurn: number;
  /** A classifier can be asked; else `unavailable` says why. */
  classifier: boolean;
  unavailable?: { class: string; message: string };
  /** `/skill:name` typed while a run went on: pinned at this turn. */
  pendingPins?: readonly string[];
  /** Namespaces the model called a hidden tool of since the last turn: surfaced now. */
  missed?: readonly string[];
}

/** The turn's facts, with what asking the classifier gave. */
export interface TurnFacts extends TurnStart {
  /** The main model's prompt cache is warm: decay evictions wait (each one rewrites the cached prompt). */
  cacheWarm?: boolean;
  entryId?: string;
  /** The batch to apply: this turn's, or a late one of an earlier turn. */
  batch?: BatchResult;
  source?: "fresh" | "late" | "none";
  deadlinePassed?: boolean;
  /**
   * SKILL.md bodies of the loaded skills as they were when loaded (else the batch's): a loaded skill with
   * neither is dropped.
   */
  bodies?: ReadonlyMap<string, SkillBody>;
  /** Time the turn took so far (for the record). */
  ms?: number;
}

export interface TurnView {
  /** Replacement for Pi's skills list (objects of the facts' list); undefined leaves Pi's list. */
  catalog?: SkillInfo[];
  /** The loaded-skills section ("" removes it); undefined leaves the sections alone. */
  section?: string;
  /** The new active tool list, only when it differs from Pi's. */
  activeTools?: string[];
  /** The persisted state changed. */
  changed: boolean;
}

export interface RouterState {
  /** The catalog is reduced to what routing chose (else Pi's default: every skill advertised). */
  skillsRouted: boolean;
  /** Namespaces are surfaced by score (else every tool visible). */
  toolsRouted: boolean;
  loaded: Map<string, Held>;
  pinned: Set<string>;
  surfaced: Map<string, Held>;
  /** Tools surfacing hid (and may give back). */
  hidden: Set<string>;
  /** Why routing is static right now (off, no-key, failed, …); undefined before any result. Not persisted. */
  staticReason: string | undefined;
  /** A rate limit holds the current set. Not persisted. */
  frozen: boolean;
  /** Consecutive failed batches. Not persisted. */
  failures: number;
  /** What the last turn could route: model-invocable skills and namespaces with tools. Not persisted. */
  routable: { skills: number; namespaces: number } | undefined;
}

export function initialState(): RouterState {
  return {
    skillsRouted: false,
    toolsRouted: false,
    loaded: new Map(),
    pinned: new Set(),
    surfaced: new Map(),
    hidden: new Set(),
    staticReason: undefined,
    frozen: false,
    failures: 0,
    routable: undefined,
  };
}

/** A copy whose maps and sets can be changed without touching the original. */
export function cloneState(s: RouterState): RouterState {
  return {
    ...s,
    loaded: new Map([...s.loaded].map(([k, h]) => [k, { ...h }])),
    pinned: new Set(s.pinned),
    surfaced: new Map([...s.surfaced].map(([k, h]) => [k, { ...h }])),
    hidden: new Set(s.hidden),
    routable: s.routable ? { ...s.routable } : undefined,
  };
}

export function toSnapshot(s: RouterState): RoutingSnapshot {
  const held = (m: ReadonlyMap<string, Held>) =>
    [...m.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([name, h]) => ({ name, score: h.score, turn: h.turn }));
  return {
    v: 1,
    skillsRouted: s.skillsRouted,
    toolsRouted: s.toolsRouted,
    loaded: held(s.loaded),
    pinned: [...s.pinned].sort(),
    surfaced: held(s.surfaced),
    hidden: [...s.hidden].sort(),
  };
}

/**
 * Back to a persisted state (resume, /tree). The session-only facts stay, and so do the tools hidden in this
 * process, so they come back.
 */
export function restoreState(s: RouterState, snapshot: RoutingSnapshot | undefined): RouterState {
  const next: RouterState = {
    ...cloneState(s),
    skillsRouted: false,
    toolsRouted: false,
    loaded: new Map(),
    pinned: new Set(),
    surfaced: new Map(),
  };
  if (snapshot?.v !== 1) return next;
  next.skillsRouted = snapshot.skillsRouted === true;
  next.toolsRouted = snapshot.toolsRouted === true;
  for (const l of snapshot.loaded ?? []) next.loaded.set(l.name, { score: l.score, turn: l.turn });
  for (const p of snapshot.pinned ?? []) next.pinned.add(p);
  for (const x of snapshot.surfaced ?? []) next.surfaced.set(x.name, { score: x.score, turn: x.turn });
  for (const h of snapshot.hidden ?? []) next.hidden.add(h);
  return next;
}

export function routingMode(s: RouterState): "routed" | "static" {
  return s.skillsRouted || s.toolsRouted ? "routed" : "static";
}

/** Static reasons that mean no classifier can be asked at all. */
const NO_CLASSIFIER = new Set(["no-key", "not-found", "bad-model", "unavailable"]);

/**
 * The routing footer, or nothing when there is nothing to route (no skill installed, no namespace with
 * tools) or the guard is off. Before the session's first turn only a restored routed state counts.
 * README's "what you see" lists every text this returns.
 */
export function routingStatus(
  s: RouterState,
  config: { enabled: boolean; routeSkills: boolean; toolNamespaces: Readonly<Record<string, unknown>> },
): string | undefined {
  if (!config.enabled) return undefined;
  const nsCount = Object.keys(config.toolNamespaces).length;
  const skillsOn = config.routeSkills && (s.routable ? s.routable.skills > 0 : s.skillsRouted);
  const nsOn = nsCount > 0 && (s.routable ? s.routable.namespaces > 0 : s.toolsRouted);
  if (!skillsOn && !nsOn) return undefined;
  if (routingMode(s) === "static") {
    if (s.staticReason === "failed") return "🧭 static (classifier errors)";
    if (s.staticReason !== undefined && NO_CLASSIFIER.has(s.staticReason)) return "🧭 static (no classifier)";
    // No answer yet (or the guard was just turned back on): Pi's default catalog and tools.
    return skillsOn ? "🧭 all skills" : "🧭 all tools";
  }
  const parts: string[] = [];
  const skills = s.loaded.size + s.pinned.size;
  if (skillsOn) parts.push(`${skills} skill${skills === 1 ? "" : "s"}`);
  if (nsOn) parts.push(`${s.surfaced.size}/${nsCount} ns`);
  return `🧭 ${parts.join(" · ")}${s.frozen ? " (rate limited)" : ""}`;
}
