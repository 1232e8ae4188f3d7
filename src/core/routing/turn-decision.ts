// One routing turn as a pure transition: from the state and the turn's facts (the prompt, Pi's skills
// and tools, whether the cache is warm, what the classifier answered) to the next state, what the model sees
// and what to report. main/routing/router.ts gathers the facts (asking the classifier, reading SKILL.md files)
// and applies the view; the replay and the routing eval go through the same function.
// No Pi, no IO.
import type { TelemetryInput } from "../records/telemetry-stats.ts";
import {
  type Decision,
  decayDue,
  errorClass,
  loadAndEvict,
  type NamespaceDoc,
  parseSkillInvocation,
  renderLoadedSkills,
} from "./routing.ts";
import { type TurnOutcome, turnRecords } from "./routing-records.ts";
import {
  type BatchResult,
  cloneState,
  type Notice,
  type RouterState,
  type SkillInfo,
  type TurnFacts,
  type TurnStart,
  type TurnView,
  toSnapshot,
} from "./routing-state.ts";
import { coreToolSet, groupTools, planActiveTools, sameToolSet } from "./surfacing.ts";

/** Consecutive failed batches after which routing and surfacing fall back to Pi's default. */
export const FAIL_STATIC_AFTER = 2;

export type RoutingEvent =
  | { kind: "record"; record: TelemetryInput }
  | { kind: "notice"; notice: Notice }
  /** Routing went (or stayed) static: answers still on their way must not apply. */
  | { kind: "static"; reason: string };

export interface Transition {
  state: RouterState;
  view: TurnView;
  events: RoutingEvent[];
}

/** What the classifier is asked at this turn. */
export interface RoutingAsk {
  skillsOn: boolean;
  /** Namespaces not surfaced yet, and the surfaced ones (asked again only when a decay check is due). */
  namespaces: NamespaceDoc[];
  surfacedNs: NamespaceDoc[];
  due: boolean;
  /** Skills that are not asked about (pinned), and the loaded ones (asked only when a decay check is due). */
  pinned: ReadonlySet<string>;
  loaded: ReadonlyMap<string, unknown>;
}

interface Scope {
  groups: Map<string, string[]>;
  core: Set<string>;
  skillsOn: boolean;
  nsOn: boolean;
}

function scopeOf(facts: TurnStart): Scope {
  const { config } = facts;
  const core = coreToolSet(config.coreTools);
  const groups = groupTools(facts.tools, config.toolNamespaces, core);
  const skillsOn = config.enabled && config.routeSkills && facts.skills.some((s) => !s.disableModelInvocation);
  const nsOn = config.enabled && [...groups.values()].some((g) => g.length > 0);
  return { groups, core, skillsOn, nsOn };
}

/** Pins (a `/skill:name` prompt or one typed during a run) and misses: they need no classifier. */
function pinAndForce(s: RouterState, facts: TurnStart, scope: Scope, events: RoutingEvent[]): string[] {
  const invoked = facts.prompt ? parseSkillInvocation(facts.prompt).skill : undefined;
  for (const name of [...(facts.pendingPins ?? []), ...(invoked ? [invoked] : [])]) {
    if (!facts.skills.some((x) => x.name === name) || s.pinned.has(name)) continue;
    s.pinned.add(name);
    s.loaded.delete(name);
    events.push({ kind: "record", record: { type: "pin", skill: name } });
  }
  const forced = [...new Set(facts.missed ?? [])].filter((ns) => (scope.groups.get(ns)?.length ?? 0) > 0);
  for (const ns of forced) s.surfaced.set(ns, { score: null, turn: facts.userTurn });
  return forced;
}

/** What to ask the classifier at this turn; undefined when nothing is asked. */
export function toAsk(state: RouterState, facts: TurnStart): RoutingAsk | undefined {
  if (!facts.config.enabled || facts.kind !== "user" || !facts.classifier) return undefined;
  const scope = scopeOf(facts);
  if (!scope.skillsOn && !scope.nsOn) return undefined;
  const s = cloneState(state);
  pinAndForce(s, facts, scope, []);
  const namespaces: NamespaceDoc[] = [];
  const surfacedNs: NamespaceDoc[] = [];
  if (scope.nsOn) {
    for (const [name, tools] of scope.groups) {
      if (tools.length === 0) continue;
      const doc: NamespaceDoc = { name, tools, description: facts.config.toolNamespaces[name]?.description };
      (s.surfaced.has(name) ? surfacedNs : namespaces).push(doc);
    }
  }
  return {
    skillsOn: scope.skillsOn,
    namespaces,
    surfacedNs,
    due: decayDue(facts.userTurn, facts.config.decayIntervalTurns),
    pinned: s.pinned,
    loaded: s.loaded,
  };
}

function toStatic(s: RouterState, reason: string, events: RoutingEvent[]): void {
  s.skillsRouted = false;
  s.toolsRouted = false;
  s.staticReason = reason;
  s.loaded.clear();
  s.surfaced.clear();
  events.push({ kind: "static", reason });
}

const notice = (cls: string, message: string): RoutingEvent => ({
  kind: "notice",
  notice: { class: cls, message, level: "warning" },
});
const degraded = (cls: string, action: "static" | "freeze", detail?: string): RoutingEvent => ({
  kind: "record",
  record: { type: "degraded", class: cls, action, ...(detail ? { detail } : {}) },
});

/** Applies a batch: the fail-static rules for failures and rate limits, else the load and evict policy. */
function applyBatch(
  s: RouterState,
  r: BatchResult,
  facts: TurnFacts,
  scope: Scope,
  events: RoutingEvent[],
): Decision | undefined {
  const { config, userTurn: turn } = facts;
  if (r.health === "rate-limited") {
    s.frozen = true;
    events.push(
      notice(
        "rate-limited",
        "context-guard: the classifier is rate limited; the current skills and tools stay as they are",
      ),
      degraded("rate-limited", "freeze", errorClass(r.error)),
    );
    return undefined;
  }
  if (r.health === "failed") {
    s.failures++;
    if (s.failures >= FAIL_STATIC_AFTER) {
      const detail = errorClass(r.error);
      events.push(
        notice(
          "failed",
          `context-guard: the classifier failed ${s.failures} times in a row (${detail}); skills and tools are back to Pi's default until it answers again`,
        ),
      );
      if (s.skillsRouted || s.toolsRouted || s.staticReason !== "failed")
        events.push(degraded("failed", "static", detail));
      toStatic(s, "failed", events);
    }
    return undefined;
  }
  if (r.health === "empty") return undefined;
  s.failures = 0;
  s.frozen = false;
  s.staticReason = undefined;
  let skills: Decision | undefined;
  // A part whose own requests all failed keeps its previous state, as if it had timed out.
  if (scope.skillsOn && r.skillHealth === "ok") {
    s.skillsRouted = true;
    const present = new Set(facts.skills.filter((x) => !x.disableModelInvocation).map((x) => x.name));
    skills = loadAndEvict({
      scores: new Map([...r.skillScores].filter(([n]) => present.has(n))),
      decayScores: facts.cacheWarm ? undefined : r.decayScores,
      loaded: s.loaded,
      pinned: s.pinned,
      config: { loadThreshold: config.loadThreshold, topK: config.topK, decayThreshold: config.decayThreshold },
    });
    for (const e of skills.evict) s.loaded.delete(e.name);
    for (const l of skills.load) s.loaded.set(l.name, { score: l.score, turn });
  }
  if (scope.nsOn && r.nsHealth === "ok") {
    s.toolsRouted = true;
    const d = loadAndEvict({
      scores: r.nsScores,
      decayScores: facts.cacheWarm ? undefined : r.nsDecayScores,
      loaded: s.surfaced,
      pinned: new Set(),
      config: {
        loadThreshold: config.loadThreshold,
        topK: Number.POSITIVE_INFINITY,
        decayThreshold: config.decayThreshold,
      },
    });
    for (const e of d.evict) s.surfaced.delete(e.name);
    for (const l of d.load) s.surfaced.set(l.name, { score: l.score, turn });
  }
  return skills;
}

/** What the model sees: the reduced catalog, the loaded skills' section and the active tools. */
function viewOf(s: RouterState, facts: TurnFacts, scope: Scope): Omit<TurnView, "changed"> {
  const out: Omit<TurnView, "changed"> = {};
  if (s.skillsRouted && scope.skillsOn) {
    const present = new Map(facts.skills.map((x) => [x.name, x]));
    for (const name of [...s.loaded.keys()]) if (!present.has(name)) s.loaded.delete(name);
    for (const name of [...s.pinned]) if (!present.has(name)) s.pinned.delete(name);
    const docs = [];
    for (const name of [...s.loaded.keys()]) {
      const skill = present.get(name) as SkillInfo;
      const body = facts.bodies?.get(name) ?? facts.batch?.bodies.get(name);
      if (!body) {
        // Unreadable SKILL.md: the skill cannot be shown, so it is not loaded.
        s.loaded.delete(name);
        continue;
      }
      docs.push({ name, filePath: skill.filePath, baseDir: skill.baseDir, body: body.body });
    }
    out.catalog = facts.skills.filter((x) => s.pinned.has(x.name));
    out.section = renderLoadedSkills(docs);
  }
  const plan = planActiveTools({
    active: facts.active,
    groups: scope.groups,
    surfaced: s.toolsRouted && scope.nsOn ? new Set(s.surfaced.keys()) : "all",
    hidden: s.hidden,
    core: scope.core,
  });
  s.hidden = plan.hidden;
  if (plan.changed && !sameToolSet(plan.active, facts.active)) out.activeTools = plan.active;
  return out;
}

/** One turn: the next state, what the model sees, and the records and notices to emit. */
export function decide(state: RouterState, facts: TurnFacts): Transition {
  const s = cloneState(state);
  const events: RoutingEvent[] = [];
  const scope = scopeOf(facts);
  s.routable = {
    skills: facts.skills.filter((x) => !x.disableModelInvocation).length,
    namespaces: [...scope.groups.values()].filter((g) => g.length > 0).length,
  };
  let forced: string[] = [];
  let decision: Decision | undefined;
  if (!facts.config.enabled) {
    toStatic(s, "off", events);
  } else if (facts.kind === "user") {
    forced = pinAndForce(s, facts, scope, events);
    if (!scope.skillsOn && !scope.nsOn) {
      // Nothing to route.
    } else if (!facts.classifier) {
      const why = facts.unavailable ?? { class: "unavailable", message: "no classifier" };
      events.push(notice(why.class, why.message));
      if (s.staticReason !== why.class) events.push(degraded(why.class, "static"));
      toStatic(s, why.class, events);
    } else if (facts.batch) {
      decision = applyBatch(s, facts.batch, facts, scope, events);
    }
  }
  const view: TurnView = {
    ...viewOf(s, facts, scope),
    changed: JSON.stringify(toSnapshot(s)) !== JSON.stringify(toSnapshot(state)),
  };
  if (facts.kind === "user" && facts.config.enabled) {
    const outcome: TurnOutcome = { applied: facts.batch, decision, forced, ...scope };
    for (const record of turnRecords(s, facts, view, outcome)) events.push({ kind: "record", record });
  }
  return { state: s, view, events };
}
