// Skill routing and tool-namespace surfacing at the user-turn boundary (before_agent_start), with the
// classifier queue and the settings of the rest of the extension.
//
// - The routing state (latest prompt in its own field + a capped digest of the conversation) is built on
//   Pi's thread from an already capped history; every not-yet-loaded skill is scored with its full
//   SKILL.md body, and the namespaces in one batched request, all through classifyAll.
// - The boundary waits at most `routingTimeoutMs`. Whatever answers later is kept and used at the next
//   boundary; until then the previous set stands.
// - The model sees a catalog without the skills it was not given, the loaded skills' bodies in one
//   section (byte-identical while the set is unchanged), and only the surfaced namespaces' tools.
// - Without a classifier, or after repeated failures, nothing is changed: Pi's default (fail-static).
import { readFile, stat } from "node:fs/promises";
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";
import type { ScoreLine } from "../../core/records/telemetry-stats.ts";
import {
  type BatchHealth,
  batchHealth,
  boolScore,
  buildRoutingState,
  catalogChars,
  DIGEST_CHARS,
  type DigestMessage,
  decayDue,
  decide,
  errorClass,
  type Held,
  LOADED_SKILLS_SECTION,
  MESSAGE_CHARS,
  type NamespaceDoc,
  namespaceRequest,
  parseSkillInvocation,
  renderLoadedSkills,
  SKILL_QUESTION_ID,
  skillRequest,
  stripFrontmatter,
} from "../../core/routing/routing.ts";
import {
  coreToolSet,
  detectMiss,
  groupTools,
  namespaceOf,
  planActiveTools,
  sameToolSet,
} from "../../core/routing/surfacing.ts";
import type { GuardConfig } from "../../core/shared/config.ts";
import type { ClassifierOutcome, ClassifierRequest } from "../../core/shared/types.ts";
import { findClassifier } from "../pass/classifier.ts";
import { type ClassifyFn, classifyAll } from "../pass/classify-queue.ts";
import { redactKnown } from "../platform/secrets.ts";
import type { Telemetry } from "../platform/telemetry.ts";

/** Custom entry holding the routing state, so resume and /tree restore what the transcript shows. */
export const ROUTING_ENTRY = "context-guard-routing";
const STATUS_KEY = "context-guard-routing";
/** Consecutive failed batches after which routing and surfacing fall back to Pi's default. */
export const FAIL_STATIC_AFTER = 2;

// ---------------------------------------------------------------------------------------------------
// Shapes

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

export interface RoutingDeps {
  getConfig(): GuardConfig;
  classifier(ctx: ExtensionContext): ClassifyFn | undefined;
  telemetry: Telemetry;
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

interface LoadedSkill extends Held {
  body?: string;
  filePath?: string;
  baseDir?: string;
}

interface SkillBody {
  body: string;
  filePath: string;
  baseDir: string;
}

interface BatchResult {
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

/** A batch with no scores yet: the start of a scoring round, or one that failed as a whole. */
function emptyBatch(gen: number, health: "empty" | "failed", extra: Partial<BatchResult> = {}): BatchResult {
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

// ---------------------------------------------------------------------------------------------------
// The router: state and boundary logic, independent of Pi's objects (tested directly)

export class Router {
  /** The catalog is reduced to what routing chose (else Pi's default: every skill advertised). */
  skillsRouted = false;
  /** Namespaces are surfaced by score (else every tool visible). */
  toolsRouted = false;
  /** Why routing is static right now (no-key, failed, …); undefined before any result. */
  staticReason: string | undefined;
  frozen = false;
  failures = 0;
  readonly loaded = new Map<string, LoadedSkill>();
  readonly pinned = new Set<string>();
  readonly pendingPins = new Set<string>();
  readonly surfaced = new Map<string, Held>();
  /** Namespaces to surface at the next boundary because the model called one of their hidden tools. */
  readonly forced = new Set<string>();
  /** Tools surfacing hid (and may give back). */
  readonly hidden = new Set<string>();
  #gen = 0;
  #appliedGen = 0;
  #late: BatchResult | undefined;
  #bodies = new Map<string, { mtimeMs: number; body: string }>();
  #deps: Pick<RoutingDeps, "getConfig" | "telemetry">;
  #notices: Notice[] = [];
  /** Stops requests still running in the background when the session ends. */
  #closing = new AbortController();

  constructor(deps: Pick<RoutingDeps, "getConfig" | "telemetry">) {
    this.#deps = deps;
  }

  get mode(): "routed" | "static" {
    return this.skillsRouted || this.toolsRouted ? "routed" : "static";
  }

  /** Aborts whatever is still being asked (late batches), so nothing outlives the session. */
  dispose(): void {
    this.#closing.abort(new Error("the session ended"));
  }

  /** Notices raised since the last call (the caller shows each error class once). */
  takeNotices(): Notice[] {
    return this.#notices.splice(0);
  }

  snapshot(): RoutingSnapshot {
    const held = (m: Map<string, Held>) =>
      [...m.entries()]
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([name, h]) => ({ name, score: h.score, turn: h.turn }));
    return {
      v: 1,
      skillsRouted: this.skillsRouted,
      toolsRouted: this.toolsRouted,
      loaded: held(this.loaded),
      pinned: [...this.pinned].sort(),
      surfaced: held(this.surfaced),
      hidden: [...this.hidden].sort(),
    };
  }

  /** Back to a persisted state (resume, /tree). Tools hidden in this process stay known, so they come back. */
  restore(snapshot: RoutingSnapshot | undefined): void {
    this.loaded.clear();
    this.pinned.clear();
    this.surfaced.clear();
    this.skillsRouted = false;
    this.toolsRouted = false;
    this.#late = undefined;
    if (snapshot?.v !== 1) return;
    this.skillsRouted = snapshot.skillsRouted === true;
    this.toolsRouted = snapshot.toolsRouted === true;
    for (const l of snapshot.loaded ?? []) this.loaded.set(l.name, { score: l.score, turn: l.turn });
    for (const p of snapshot.pinned ?? []) this.pinned.add(p);
    for (const s of snapshot.surfaced ?? []) this.surfaced.set(s.name, { score: s.score, turn: s.turn });
    for (const h of snapshot.hidden ?? []) this.hidden.add(h);
  }

  /** Records a `/skill:name` typed while a run was going on: it is pinned at the next boundary. */
  pinLater(name: string): void {
    this.pendingPins.add(name);
  }

  async #readBody(skill: SkillLike): Promise<SkillBody | undefined> {
    try {
      const info = await stat(skill.filePath);
      const cached = this.#bodies.get(skill.filePath);
      if (cached && cached.mtimeMs === info.mtimeMs) {
        return { body: cached.body, filePath: skill.filePath, baseDir: skill.baseDir };
      }
      const body = stripFrontmatter(await readFile(skill.filePath, "utf8"));
      this.#bodies.set(skill.filePath, { mtimeMs: info.mtimeMs, body });
      return { body, filePath: skill.filePath, baseDir: skill.baseDir };
    } catch {
      return undefined;
    }
  }

  async #score(
    input: BoundaryInput,
    config: GuardConfig,
    gen: number,
    skillsOn: boolean,
    namespaces: NamespaceDoc[],
    surfacedNs: NamespaceDoc[],
    due: boolean,
  ): Promise<BatchResult> {
    const classify = input.classify as ClassifyFn;
    // Built here, not in the pool: history() is already capped (about 36,000 characters) and this takes
    // well under a millisecond, while the pool's first task of a session waits for its thread to start,
    // which on a busy machine took most of the routing budget before any request was sent.
    const routing = buildRoutingState({ prompt: input.prompt ?? "", messages: input.history() });
    const result = emptyBatch(gen, "empty", { promptChars: routing.promptChars, digestChars: routing.digestChars });
    const requests: ClassifierRequest[] = [];
    const kinds: Array<{ kind: "skill" | "decay"; name: string } | { kind: "ns"; ids: Record<string, string> }> = [];
    if (skillsOn) {
      const eligible = input.skills.filter((s) => !s.disableModelInvocation);
      const invoked = routing.invokedSkill;
      const asks: Array<{ skill: SkillLike; kind: "skill" | "decay" }> = [];
      for (const s of eligible) {
        if (this.pinned.has(s.name) || s.name === invoked || this.pendingPins.has(s.name)) continue;
        if (!this.loaded.has(s.name)) asks.push({ skill: s, kind: "skill" });
        else if (due) asks.push({ skill: s, kind: "decay" });
      }
      const bodies = await Promise.all(asks.map((a) => this.#readBody(a.skill)));
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
    const nsAsked = [...namespaces, ...(due ? surfacedNs : [])];
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
      signal: this.#closing.signal,
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
    const surfacedNames = new Set(surfacedNs.map((n) => n.name));
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

  /** One boundary: decide (user turns) and say what the model should see. */
  async boundary(input: BoundaryInput): Promise<BoundaryOutput> {
    const started = performance.now();
    const config = this.#deps.getConfig();
    const before = JSON.stringify(this.snapshot());
    const core = coreToolSet(config.coreTools);
    const groups = groupTools(input.tools, config.toolNamespaces, core);
    const skillsOn = config.enabled && config.routeSkills && input.skills.some((s) => !s.disableModelInvocation);
    const nsOn = config.enabled && [...groups.values()].some((g) => g.length > 0);
    const turn = input.userTurn;
    let source: "fresh" | "late" | "none" = "none";
    let deadlinePassed = false;
    let applied: BatchResult | undefined;
    let decision: ReturnType<typeof decide> | undefined;
    let nsDecision: ReturnType<typeof decide> | undefined;
    let forced: string[] = [];

    if (!config.enabled) {
      this.#toStatic("off");
    } else if (input.kind === "user") {
      // Pins first: they need no classifier.
      const invoked = input.prompt ? parseSkillInvocation(input.prompt).skill : undefined;
      for (const name of [...this.pendingPins, ...(invoked ? [invoked] : [])]) {
        if (!input.skills.some((s) => s.name === name) || this.pinned.has(name)) continue;
        this.pinned.add(name);
        this.loaded.delete(name);
        this.#deps.telemetry.record({ type: "pin", skill: name });
      }
      this.pendingPins.clear();
      // Misses surface their namespace now, whatever the classifier does.
      forced = [...this.forced].filter((ns) => (groups.get(ns)?.length ?? 0) > 0);
      for (const ns of forced) this.surfaced.set(ns, { score: null, turn });
      this.forced.clear();

      if (!skillsOn && !nsOn) {
        // Nothing to route.
      } else if (!input.classify) {
        const why = input.unavailable ?? { class: "unavailable", message: "no classifier" };
        this.#notice(why.class, why.message, "warning");
        if (this.staticReason !== why.class) this.#degraded(why.class, "static");
        this.#toStatic(why.class);
      } else {
        const gen = ++this.#gen;
        const due = decayDue(turn, config.decayIntervalTurns);
        const namespaces: NamespaceDoc[] = [];
        const surfacedNs: NamespaceDoc[] = [];
        if (nsOn) {
          for (const [name, tools] of groups) {
            if (tools.length === 0) continue;
            const doc: NamespaceDoc = { name, tools, description: config.toolNamespaces[name]?.description };
            (this.surfaced.has(name) ? surfacedNs : namespaces).push(doc);
          }
        }
        const batch = this.#score(input, config, gen, skillsOn, namespaces, surfacedNs, due).catch(
          (error: unknown): BatchResult =>
            emptyBatch(gen, "failed", { error: error instanceof Error ? error.message : String(error) }),
        );
        const left = Math.max(0, config.routingTimeoutMs - (performance.now() - started));
        let timer: NodeJS.Timeout | undefined;
        const timeout = new Promise<undefined>((resolve) => {
          timer = setTimeout(() => resolve(undefined), left);
        });
        const fresh = await Promise.race([batch, timeout]);
        if (timer) clearTimeout(timer);
        if (fresh) {
          applied = fresh;
          source = "fresh";
          this.#late = undefined;
        } else {
          // Past the deadline: the previous set stands. Use an earlier batch that finished late, if any,
          // and keep this one for the next boundary.
          deadlinePassed = true;
          if (this.#late && this.#late.gen < gen) {
            applied = this.#late;
            source = "late";
          }
          this.#late = undefined;
          void batch.then((late) => {
            if (late.gen > this.#appliedGen && (!this.#late || this.#late.gen < late.gen)) this.#late = late;
          });
        }
        if (applied) {
          this.#appliedGen = Math.max(this.#appliedGen, applied.gen);
          const r = this.#apply(applied, input, config, turn, skillsOn, nsOn);
          decision = r.skills;
          nsDecision = r.namespaces;
        }
      }
    }

    // What the model sees.
    const out: BoundaryOutput = { changed: false };
    if (this.skillsRouted && skillsOn) {
      const present = new Map(input.skills.map((s) => [s.name, s]));
      for (const name of [...this.loaded.keys()]) if (!present.has(name)) this.loaded.delete(name);
      for (const name of [...this.pinned]) if (!present.has(name)) this.pinned.delete(name);
      const docs = [];
      for (const [name, held] of this.loaded) {
        const skill = present.get(name) as SkillLike;
        if (held.body === undefined) {
          const body = await this.#readBody(skill);
          if (!body) {
            this.loaded.delete(name);
            continue;
          }
          Object.assign(held, body);
        }
        docs.push({ name, filePath: skill.filePath, baseDir: skill.baseDir, body: held.body as string });
      }
      out.catalog = input.skills.filter((s) => this.pinned.has(s.name));
      out.section = renderLoadedSkills(docs);
    }
    const plan = planActiveTools({
      active: input.active,
      groups,
      surfaced: this.toolsRouted && nsOn ? new Set(this.surfaced.keys()) : "all",
      hidden: this.hidden,
      core,
    });
    this.hidden.clear();
    for (const h of plan.hidden) this.hidden.add(h);
    if (plan.changed && !sameToolSet(plan.active, input.active)) out.activeTools = plan.active;
    out.changed = JSON.stringify(this.snapshot()) !== before;

    if (input.kind === "user" && config.enabled) {
      const ms = Math.round(performance.now() - started);
      this.#telemetry(input, out, {
        ms,
        deadlinePassed,
        source,
        applied,
        decision,
        nsDecision,
        forced,
        skillsOn,
        nsOn,
        groups,
        turn,
      });
    }
    return out;
  }

  #apply(
    r: BatchResult,
    input: BoundaryInput,
    config: GuardConfig,
    turn: number,
    skillsOn: boolean,
    nsOn: boolean,
  ): { skills?: ReturnType<typeof decide>; namespaces?: ReturnType<typeof decide> } {
    if (r.health === "rate-limited") {
      this.frozen = true;
      this.#notice(
        "rate-limited",
        "context-guard: the classifier is rate limited; the current skills and tools stay as they are",
        "warning",
      );
      this.#degraded("rate-limited", "freeze", errorClass(r.error));
      return {};
    }
    if (r.health === "failed") {
      this.failures++;
      if (this.failures >= FAIL_STATIC_AFTER) {
        const detail = errorClass(r.error);
        this.#notice(
          "failed",
          `context-guard: the classifier failed ${this.failures} times in a row (${detail}); skills and tools are back to Pi's default until it answers again`,
          "warning",
        );
        if (this.mode === "routed" || this.staticReason !== "failed") this.#degraded("failed", "static", detail);
        this.#toStatic("failed");
      }
      return {};
    }
    if (r.health === "empty") return {};
    this.failures = 0;
    this.frozen = false;
    this.staticReason = undefined;
    const out: { skills?: ReturnType<typeof decide>; namespaces?: ReturnType<typeof decide> } = {};
    // A part whose own requests all failed keeps its previous state, as if it had timed out.
    if (skillsOn && r.skillHealth === "ok") {
      this.skillsRouted = true;
      const present = new Set(input.skills.filter((s) => !s.disableModelInvocation).map((s) => s.name));
      const scores = new Map([...r.skillScores].filter(([n]) => present.has(n)));
      const d = decide({
        scores,
        decayScores: r.decayScores,
        loaded: this.loaded,
        pinned: this.pinned,
        config: { loadThreshold: config.loadThreshold, topK: config.topK, decayThreshold: config.decayThreshold },
      });
      for (const e of d.evict) this.loaded.delete(e.name);
      for (const l of d.load) this.loaded.set(l.name, { score: l.score, turn, ...r.bodies.get(l.name) });
      out.skills = d;
    }
    if (nsOn && r.nsHealth === "ok") {
      this.toolsRouted = true;
      const d = decide({
        scores: r.nsScores,
        decayScores: r.nsDecayScores,
        loaded: this.surfaced,
        pinned: new Set(),
        config: {
          loadThreshold: config.loadThreshold,
          topK: Number.POSITIVE_INFINITY,
          decayThreshold: config.decayThreshold,
        },
      });
      for (const e of d.evict) this.surfaced.delete(e.name);
      for (const l of d.load) this.surfaced.set(l.name, { score: l.score, turn });
      out.namespaces = d;
    }
    return out;
  }

  #toStatic(reason: string): void {
    this.skillsRouted = false;
    this.toolsRouted = false;
    this.staticReason = reason;
    this.loaded.clear();
    this.surfaced.clear();
    this.#late = undefined;
  }

  #notice(cls: string, message: string, level: Notice["level"]): void {
    this.#notices.push({ class: cls, message, level });
  }

  #degraded(cls: string, action: "static" | "freeze" | "none", detail?: string): void {
    this.#deps.telemetry.record({ type: "degraded", class: cls, action, ...(detail ? { detail } : {}) });
  }

  #telemetry(
    input: BoundaryInput,
    out: BoundaryOutput,
    t: {
      ms: number;
      deadlinePassed: boolean;
      source: "fresh" | "late" | "none";
      applied?: BatchResult;
      decision?: ReturnType<typeof decide>;
      nsDecision?: ReturnType<typeof decide>;
      forced: string[];
      skillsOn: boolean;
      nsOn: boolean;
      groups: Map<string, string[]>;
      turn: number;
    },
  ): void {
    const toRecord = (m: Map<string, number | undefined> | undefined): Record<string, number | null> => {
      const o: Record<string, number | null> = {};
      for (const [k, v] of m ?? []) o[k] = v === undefined ? null : Math.round(v * 1000) / 1000;
      return o;
    };
    const round = (l: ScoreLine[]) => l.map((x) => ({ name: x.name, score: Math.round(x.score * 1000) / 1000 }));
    const a = t.applied;
    const entry = input.entryId ? { entryId: input.entryId } : {};
    if (t.skillsOn) {
      const shown = new Set((out.catalog ?? input.skills).map((s) => s.name));
      let catalogHidden = 0;
      if (out.catalog) {
        for (const s of input.skills)
          if (!s.disableModelInvocation && !shown.has(s.name)) catalogHidden += catalogChars(s);
      }
      this.#deps.telemetry.record({
        type: "route",
        turn: t.turn,
        mode: this.skillsRouted ? "routed" : "static",
        source: t.source,
        scores: toRecord(a?.skillScores),
        decay: toRecord(a?.decayScores),
        loaded: round(t.decision?.load ?? []),
        evicted: round(t.decision?.evict ?? []),
        crowded: t.decision?.crowded ?? [],
        pinned: [...this.pinned].sort(),
        active: [...this.loaded.keys()].sort(),
        catalogCharsHidden: catalogHidden,
        bodyChars: out.section?.length ?? 0,
        promptChars: a?.promptChars ?? 0,
        digestChars: a?.digestChars ?? 0,
        requests: a?.requests ?? 0,
        inputTokens: a?.inputTokens ?? 0,
        costUsd: Math.round((a?.costUsd ?? 0) * 1e9) / 1e9,
        ms: t.ms,
        timedOut: t.deadlinePassed || (t.source === "fresh" && a?.timedOut === true),
        changed: out.changed,
        ...entry,
      });
    }
    if (t.nsOn) {
      const active = out.activeTools ?? input.active;
      const activeSet = new Set(active);
      let schemaHidden = 0;
      for (const tool of input.tools) {
        if (!this.hidden.has(tool.name) || activeSet.has(tool.name)) continue;
        schemaHidden += (tool.description?.length ?? 0) + (JSON.stringify(tool.parameters ?? {})?.length ?? 0);
      }
      const hiddenNs = [...t.groups.entries()]
        .filter(([, tools]) => tools.length > 0 && tools.some((n) => this.hidden.has(n)))
        .map(([name]) => name);
      this.#deps.telemetry.record({
        type: "surface",
        turn: t.turn,
        mode: this.toolsRouted ? "routed" : "static",
        source: t.source,
        scores: { ...toRecord(a?.nsScores), ...toRecord(a?.nsDecayScores) },
        surfaced: [...this.surfaced.keys()].sort(),
        forced: t.forced,
        hiddenNamespaces: hiddenNs.sort(),
        toolsActive: active.length,
        toolsHidden: this.hidden.size,
        schemaCharsHidden: schemaHidden,
        changed: out.activeTools !== undefined,
        ...entry,
      });
    }
  }

  /** A tool result of the running turn: a call to a tool surfacing hid is a miss. */
  noteToolResult(message: unknown, config: GuardConfig, toolCallId?: string): string | undefined {
    const tool = detectMiss(message as Parameters<typeof detectMiss>[0], this.hidden);
    if (!tool) return undefined;
    const ns = namespaceOf(tool, config.toolNamespaces, coreToolSet(config.coreTools));
    if (ns) this.forced.add(ns);
    this.#deps.telemetry.record({
      type: "miss",
      tool,
      ...(ns ? { namespace: ns } : {}),
      ...(toolCallId ? { toolCallId } : {}),
    });
    return ns;
  }

  statusText(config: GuardConfig): string | undefined {
    if (!config.enabled) return undefined;
    const nsCount = Object.keys(config.toolNamespaces).length;
    if (!config.routeSkills && nsCount === 0) return undefined;
    if (this.mode === "static") {
      if (!this.staticReason) return "🧭 all skills";
      if (this.staticReason === "failed") return "🧭 static (classifier errors)";
      if (this.staticReason === "no-key" || this.staticReason === "not-found" || this.staticReason === "bad-model") {
        return "🧭 static (no classifier)";
      }
      return "🧭 static";
    }
    const parts: string[] = [];
    if (config.routeSkills)
      parts.push(`${this.loaded.size + this.pinned.size} skill${this.loaded.size + this.pinned.size === 1 ? "" : "s"}`);
    if (nsCount > 0) parts.push(`${this.surfaced.size}/${nsCount} ns`);
    return `🧭 ${parts.join(" · ")}${this.frozen ? " (rate limited)" : ""}`;
  }
}

// ---------------------------------------------------------------------------------------------------
// Pi glue

type Branch = ReturnType<ExtensionContext["sessionManager"]["getBranch"]>;

function textBlocks(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  const out: string[] = [];
  for (const b of content) {
    if (b && typeof b === "object" && (b as { type?: string }).type === "text") {
      const t = (b as { text?: unknown }).text;
      if (typeof t === "string") out.push(t);
    }
  }
  return out.join("\n");
}

/** Cheap pre-cut while walking the branch: buildRoutingState formats; this bounds what it is given. */
function bounded(text: string): string {
  const max = MESSAGE_CHARS * 2;
  return text.length <= max ? text : `${text.slice(0, MESSAGE_CHARS)}\n…\n${text.slice(-MESSAGE_CHARS)}`;
}

/** User and assistant text of the branch, newest first, up to about the digest cap; tool I/O excluded. */
export function historyFromBranch(branch: Branch): DigestMessage[] {
  const out: DigestMessage[] = [];
  let total = 0;
  for (let i = branch.length - 1; i >= 0 && total < DIGEST_CHARS * 1.5; i--) {
    const e = branch[i] as { type: string; message?: { role?: string; content?: unknown }; summary?: unknown };
    let item: DigestMessage | undefined;
    if (e.type === "message" && e.message) {
      const role = e.message.role;
      if (role === "user" || role === "assistant") {
        let text = textBlocks(e.message.content).trim();
        if (role === "user") {
          // A /skill:name expansion counts as what the user asked, not as the skill's body.
          const inv = parseSkillInvocation(text);
          if (inv.skill) text = `[invoked skill ${inv.skill}] ${inv.request}`.trim();
        }
        if (text) item = { role, text: bounded(text) };
      }
    } else if ((e.type === "compaction" || e.type === "branch_summary") && typeof e.summary === "string") {
      item = { role: "summary", text: bounded(e.summary) };
    }
    if (item) {
      out.push(item);
      total += item.text.length;
    }
    if (e.type === "compaction") break;
  }
  return out;
}

function userTurns(branch: Branch): number {
  let n = 0;
  for (const e of branch) {
    if (e.type === "message" && (e as { message?: { role?: string } }).message?.role === "user") n++;
  }
  return n;
}

function lastSnapshot(branch: Branch): RoutingSnapshot | undefined {
  for (let i = branch.length - 1; i >= 0; i--) {
    const e = branch[i] as { type: string; customType?: string; data?: unknown };
    if (e.type === "custom" && e.customType === ROUTING_ENTRY && e.data && typeof e.data === "object") {
      return e.data as RoutingSnapshot;
    }
  }
  return undefined;
}

function unavailable(ctx: ExtensionContext, config: GuardConfig): { class: string; message: string } {
  const found = findClassifier(ctx.modelRegistry, config.model);
  if (found.ok) return { class: "failed", message: "context-guard: the classifier is not usable" };
  const what =
    found.problem === "no-key"
      ? `no ${found.provider} key`
      : found.problem === "not-found"
        ? `the classifier ${config.model} is not in Pi's catalog`
        : `"${config.model}" is not a provider/id`;
  return {
    class: found.problem,
    message: `context-guard: ${what}; skill routing and tool surfacing are off (all skills advertised, all tools visible)`,
  };
}

/**
 * Registers skill routing and tool surfacing: before_agent_start (the boundary), input (queued
 * /skill:name), message_end (misses), session_start / session_tree (restore), session_shutdown (flush).
 */
export function registerRouting(pi: ExtensionAPI, deps: RoutingDeps): { router(): Router | undefined } {
  let router: Router | undefined;
  let noticed = new Set<string>();

  const show = (ctx: ExtensionContext) => {
    const r = router;
    if (!r) return;
    for (const n of r.takeNotices()) {
      if (noticed.has(n.class)) continue;
      noticed.add(n.class);
      // A notice never quotes a classifier error whole, but it is cut with the known credentials anyway.
      ctx.ui.notify(redactKnown(n.message), n.level);
    }
    if (ctx.hasUI) ctx.ui.setStatus(STATUS_KEY, r.statusText(deps.getConfig()));
  };

  const restore = (ctx: ExtensionContext) => {
    router?.restore(lastSnapshot(ctx.sessionManager.getBranch()));
  };

  pi.on("session_start", (_event, ctx) => {
    router = new Router(deps);
    noticed = new Set();
    deps.telemetry.session = ctx.sessionManager.getSessionId();
    restore(ctx);
    show(ctx);
  });

  pi.on("session_tree", (_event, ctx) => {
    restore(ctx);
    show(ctx);
  });

  pi.on("session_shutdown", async () => {
    router?.dispose();
    router = undefined;
    await deps.telemetry.flush();
  });

  pi.on("input", (event) => {
    if (!router || !event.text.startsWith("/skill:")) return;
    const space = event.text.indexOf(" ");
    const name = (space < 0 ? event.text.slice(7) : event.text.slice(7, space)).trim();
    if (name) router.pinLater(name);
  });

  pi.on("before_agent_start", async (event, ctx) => {
    const r = router;
    if (!r) return;
    const config = deps.getConfig();
    const options = event.systemPromptOptions;
    let classify: ClassifyFn | undefined;
    let why: { class: string; message: string } | undefined;
    if (event.messageType === "user" && config.enabled) {
      classify = deps.classifier(ctx);
      if (!classify) why = unavailable(ctx, config);
    }
    const branch = ctx.sessionManager.getBranch();
    const out = await r.boundary({
      kind: event.messageType === "user" ? "user" : "custom",
      prompt: event.messageType === "user" ? event.prompt : undefined,
      skills: options.skills,
      tools: pi.getAllTools(),
      active: pi.getActiveTools(),
      history: () => historyFromBranch(branch),
      userTurn: userTurns(branch) + (event.messageType === "user" ? 1 : 0),
      ...(classify ? { classify } : {}),
      ...(why ? { unavailable: why } : {}),
      entryId: ctx.sessionManager.getLeafId() ?? undefined,
    });
    if (out.catalog) options.skills = options.skills.filter((s) => out.catalog?.includes(s));
    if (out.section !== undefined) {
      if (out.section) options.sections[LOADED_SKILLS_SECTION] = out.section;
      else delete options.sections[LOADED_SKILLS_SECTION];
    }
    if (out.activeTools) pi.setActiveTools(out.activeTools);
    if (out.changed) pi.appendEntry(ROUTING_ENTRY, r.snapshot());
    show(ctx);
  });

  pi.on("message_end", (event, ctx) => {
    const r = router;
    const message = event.message as { role?: string; toolCallId?: string };
    if (!r || message.role !== "toolResult") return;
    const ns = r.noteToolResult(message, deps.getConfig(), message.toolCallId);
    if (ns) show(ctx);
  });

  return { router: () => router };
}
