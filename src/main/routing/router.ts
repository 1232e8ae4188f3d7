// The router: skill routing and tool-namespace surfacing at the user-turn boundary, as state and
// decisions independent of Pi's objects (session-routing.ts feeds it from the hooks).
//
// - The routing state (latest prompt in its own field + a capped digest of the conversation) is built on
//   Pi's thread from an already capped history; every not-yet-loaded skill is scored with its full
//   SKILL.md body, and the namespaces in one batched request (routing-batch.ts).
// - The boundary waits at most `routingTimeoutMs`. Whatever answers later is kept and used at the next
//   boundary; until then the previous set stands (routing-deadline.ts).
// - The model sees a catalog without the skills it was not given, the loaded skills' bodies in one
//   section (byte-identical while the set is unchanged), and only the surfaced namespaces' tools.
// - Without a classifier, or after repeated failures, nothing is changed: Pi's default (fail-static).
import {
  decayDue,
  decide,
  errorClass,
  type Held,
  type NamespaceDoc,
  parseSkillInvocation,
  renderLoadedSkills,
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
import type { Telemetry } from "../platform/telemetry.ts";
import { type BatchResult, emptyBatch, scoreBatch } from "./routing-batch.ts";
import { LateBatches } from "./routing-deadline.ts";
import { recordBoundary } from "./routing-records.ts";
import type {
  BoundaryInput,
  BoundaryOutput,
  LoadedSkill,
  Notice,
  RoutingSnapshot,
  SkillLike,
} from "./routing-shapes.ts";
import { SkillBodies } from "./skill-bodies.ts";

/** Consecutive failed batches after which routing and surfacing fall back to Pi's default. */
export const FAIL_STATIC_AFTER = 2;

/** Static reasons that mean no classifier can be asked at all. */
const NO_CLASSIFIER = new Set(["no-key", "not-found", "bad-model", "unavailable"]);

export interface RouterDeps {
  getConfig(): GuardConfig;
  telemetry: Telemetry;
}

type Decision = ReturnType<typeof decide>;

export class Router {
  /** The catalog is reduced to what routing chose (else Pi's default: every skill advertised). */
  skillsRouted = false;
  /** Namespaces are surfaced by score (else every tool visible). */
  toolsRouted = false;
  /** Why routing is static right now (no-key, failed, …); undefined before any result. */
  staticReason: string | undefined;
  frozen = false;
  failures = 0;
  /** What the last boundary could route: model-invocable skills and namespaces with tools. */
  routable: { skills: number; namespaces: number } | undefined;
  /** Classifier use of every batch this session, applied or not (for `/guard`). */
  readonly usage = { requests: 0, inputTokens: 0, costUsd: 0 };
  readonly loaded = new Map<string, LoadedSkill>();
  readonly pinned = new Set<string>();
  readonly pendingPins = new Set<string>();
  readonly surfaced = new Map<string, Held>();
  /** Namespaces to surface at the next boundary because the model called one of their hidden tools. */
  readonly forced = new Set<string>();
  /** Tools surfacing hid (and may give back). */
  readonly hidden = new Set<string>();
  #batches = new LateBatches();
  #bodies = new SkillBodies();
  #deps: RouterDeps;
  #notices: Notice[] = [];
  /** Stops requests still running in the background when the session ends. */
  #closing = new AbortController();

  constructor(deps: RouterDeps) {
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
    this.#batches.drop();
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

  /** One boundary: decide (user turns) and say what the model should see. */
  async boundary(input: BoundaryInput): Promise<BoundaryOutput> {
    const started = performance.now();
    const config = this.#deps.getConfig();
    const before = JSON.stringify(this.snapshot());
    const core = coreToolSet(config.coreTools);
    const groups = groupTools(input.tools, config.toolNamespaces, core);
    const skillsOn = config.enabled && config.routeSkills && input.skills.some((s) => !s.disableModelInvocation);
    const nsOn = config.enabled && [...groups.values()].some((g) => g.length > 0);
    this.routable = {
      skills: input.skills.filter((s) => !s.disableModelInvocation).length,
      namespaces: [...groups.values()].filter((g) => g.length > 0).length,
    };
    const turn = input.userTurn;
    let source: "fresh" | "late" | "none" = "none";
    let deadlinePassed = false;
    let applied: BatchResult | undefined;
    let decision: Decision | undefined;
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
        const gen = this.#batches.next();
        const namespaces: NamespaceDoc[] = [];
        const surfacedNs: NamespaceDoc[] = [];
        if (nsOn) {
          for (const [name, tools] of groups) {
            if (tools.length === 0) continue;
            const doc: NamespaceDoc = { name, tools, description: config.toolNamespaces[name]?.description };
            (this.surfaced.has(name) ? surfacedNs : namespaces).push(doc);
          }
        }
        const batch = scoreBatch(input, {
          gen,
          config,
          skillsOn,
          namespaces,
          surfacedNs,
          due: decayDue(turn, config.decayIntervalTurns),
          pinned: this.pinned,
          pendingPins: this.pendingPins,
          loaded: this.loaded,
          bodies: this.#bodies,
          signal: this.#closing.signal,
        })
          .catch(
            (error: unknown): BatchResult =>
              emptyBatch(gen, "failed", { error: error instanceof Error ? error.message : String(error) }),
          )
          .then((r) => {
            this.usage.requests += r.requests;
            this.usage.inputTokens += r.inputTokens;
            this.usage.costUsd += r.costUsd;
            return r;
          });
        const settled = await this.#batches.settle(
          batch,
          gen,
          Math.max(0, config.routingTimeoutMs - (performance.now() - started)),
        );
        ({ applied, source, deadlinePassed } = settled);
        if (applied) decision = this.#apply(applied, input, config, turn, skillsOn, nsOn);
      }
    }

    const out = await this.#view(input, { skillsOn, nsOn, groups, core });
    out.changed = JSON.stringify(this.snapshot()) !== before;

    if (input.kind === "user" && config.enabled) {
      const ms = Math.round(performance.now() - started);
      const facts = { ms, deadlinePassed, source, applied, decision, forced, skillsOn, nsOn, groups, turn };
      recordBoundary(this.#deps.telemetry, this, input, out, facts);
    }
    return out;
  }

  /** What the model sees: the reduced catalog, the loaded skills' section and the active tools. */
  async #view(
    input: BoundaryInput,
    on: { skillsOn: boolean; nsOn: boolean; groups: Map<string, string[]>; core: Set<string> },
  ): Promise<BoundaryOutput> {
    const out: BoundaryOutput = { changed: false };
    if (this.skillsRouted && on.skillsOn) {
      const present = new Map(input.skills.map((s) => [s.name, s]));
      for (const name of [...this.loaded.keys()]) if (!present.has(name)) this.loaded.delete(name);
      for (const name of [...this.pinned]) if (!present.has(name)) this.pinned.delete(name);
      const docs = [];
      for (const [name, held] of this.loaded) {
        const skill = present.get(name) as SkillLike;
        if (held.body === undefined) {
          const body = await this.#bodies.read(skill);
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
      groups: on.groups,
      surfaced: this.toolsRouted && on.nsOn ? new Set(this.surfaced.keys()) : "all",
      hidden: this.hidden,
      core: on.core,
    });
    this.hidden.clear();
    for (const h of plan.hidden) this.hidden.add(h);
    if (plan.changed && !sameToolSet(plan.active, input.active)) out.activeTools = plan.active;
    return out;
  }

  /** Applies a batch: the fail-static rules for failures and rate limits, else the decisions. */
  #apply(
    r: BatchResult,
    input: BoundaryInput,
    config: GuardConfig,
    turn: number,
    skillsOn: boolean,
    nsOn: boolean,
  ): Decision | undefined {
    if (r.health === "rate-limited") {
      this.frozen = true;
      this.#notice(
        "rate-limited",
        "context-guard: the classifier is rate limited; the current skills and tools stay as they are",
        "warning",
      );
      this.#degraded("rate-limited", "freeze", errorClass(r.error));
      return undefined;
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
      return undefined;
    }
    if (r.health === "empty") return undefined;
    this.failures = 0;
    this.frozen = false;
    this.staticReason = undefined;
    let skills: Decision | undefined;
    // A part whose own requests all failed keeps its previous state, as if it had timed out.
    if (skillsOn && r.skillHealth === "ok") {
      this.skillsRouted = true;
      const present = new Set(input.skills.filter((s) => !s.disableModelInvocation).map((s) => s.name));
      const scores = new Map([...r.skillScores].filter(([n]) => present.has(n)));
      skills = decide({
        scores,
        decayScores: input.cacheWarm ? undefined : r.decayScores,
        loaded: this.loaded,
        pinned: this.pinned,
        config: { loadThreshold: config.loadThreshold, topK: config.topK, decayThreshold: config.decayThreshold },
      });
      for (const e of skills.evict) this.loaded.delete(e.name);
      for (const l of skills.load) this.loaded.set(l.name, { score: l.score, turn, ...r.bodies.get(l.name) });
    }
    if (nsOn && r.nsHealth === "ok") {
      this.toolsRouted = true;
      const d = decide({
        scores: r.nsScores,
        decayScores: input.cacheWarm ? undefined : r.nsDecayScores,
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
    }
    return skills;
  }

  #toStatic(reason: string): void {
    this.skillsRouted = false;
    this.toolsRouted = false;
    this.staticReason = reason;
    this.loaded.clear();
    this.surfaced.clear();
    this.#batches.drop();
  }

  #notice(cls: string, message: string, level: Notice["level"]): void {
    this.#notices.push({ class: cls, message, level });
  }

  #degraded(cls: string, action: "static" | "freeze" | "none", detail?: string): void {
    this.#deps.telemetry.record({ type: "degraded", class: cls, action, ...(detail ? { detail } : {}) });
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

  /**
   * The routing footer, or nothing when there is nothing to route (no skill installed, no namespace with
   * tools) or the guard is off. Before the session's first boundary only a restored routed state counts.
   * README's "what you see" lists every text this returns.
   */
  statusText(config: GuardConfig): string | undefined {
    if (!config.enabled) return undefined;
    const nsCount = Object.keys(config.toolNamespaces).length;
    const skillsOn = config.routeSkills && (this.routable ? this.routable.skills > 0 : this.skillsRouted);
    const nsOn = nsCount > 0 && (this.routable ? this.routable.namespaces > 0 : this.toolsRouted);
    if (!skillsOn && !nsOn) return undefined;
    if (this.mode === "static") {
      if (this.staticReason === "failed") return "🧭 static (classifier errors)";
      if (this.staticReason !== undefined && NO_CLASSIFIER.has(this.staticReason)) return "🧭 static (no classifier)";
      // No answer yet (or the guard was just turned back on): Pi's default catalog and tools.
      return skillsOn ? "🧭 all skills" : "🧭 all tools";
    }
    const parts: string[] = [];
    const skills = this.loaded.size + this.pinned.size;
    if (skillsOn) parts.push(`${skills} skill${skills === 1 ? "" : "s"}`);
    if (nsOn) parts.push(`${this.surfaced.size}/${nsCount} ns`);
    return `🧭 ${parts.join(" · ")}${this.frozen ? " (rate limited)" : ""}`;
  }
}
