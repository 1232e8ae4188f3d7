// The router: skill routing and tool-namespace surfacing at each user turn. It holds the state and
// gathers each turn's facts; core/routing/turn-decision.ts decides (session-routing.ts feeds it from the hooks).
//
// - The routing state (latest prompt in its own field + a capped digest of the conversation) is built on
//   Pi's thread from an already capped history; every not-yet-loaded skill is scored with its full
//   SKILL.md body, and the namespaces in one batched request (routing-batch.ts).
// - The turn waits at most `routingTimeoutMs`. Whatever answers later is kept and used at the next
//   turn; until then the previous set stands (routing-deadline.ts).
// - The model sees a catalog without the skills it was not given, the loaded skills' bodies in one
//   section (byte-identical while the set is unchanged), and only the surfaced namespaces' tools.
// - Without a classifier, or after repeated failures, nothing is changed: Pi's default (fail-static).

import {
  type BatchResult,
  initialState,
  type RouterState,
  restoreState,
  routingMode,
  routingStatus,
  type TurnFacts,
  toSnapshot,
} from "../../core/routing/routing-state.ts";
import { coreToolSet, detectMiss, namespaceOf } from "../../core/routing/surfacing.ts";
import { decide, type Transition, toAsk } from "../../core/routing/turn-decision.ts";
import type { GuardConfig } from "../../core/shared/config.ts";
import type { Telemetry } from "../platform/telemetry.ts";
import { emptyBatch, scoreBatch } from "./routing-batch.ts";
import { LateBatches, type Settled } from "./routing-deadline.ts";
import type { Notice, RoutingSnapshot, SkillBody, TurnInput, TurnOutput } from "./routing-shapes.ts";
import { SkillBodies } from "./skill-bodies.ts";

export { FAIL_STATIC_AFTER } from "../../core/routing/turn-decision.ts";

export interface RouterDeps {
  getConfig(): GuardConfig;
  telemetry: Telemetry;
}

export class Router {
  #state: RouterState = initialState();
  /** Classifier use of every batch this session, applied or not (for `/guard`). */
  readonly usage = { requests: 0, inputTokens: 0, costUsd: 0 };
  /** `/skill:name` typed while a run went on: pinned at the next turn. */
  readonly pendingPins = new Set<string>();
  /** Namespaces to surface at the next turn because the model called one of their hidden tools. */
  readonly forced = new Set<string>();
  /** Bodies of the loaded skills as they were when loaded, so the section stays byte-identical. */
  #held = new Map<string, SkillBody>();
  #batches = new LateBatches();
  #bodies = new SkillBodies();
  #deps: RouterDeps;
  #notices: Notice[] = [];
  /** Stops requests still running in the background when the session ends. */
  #closing = new AbortController();

  constructor(deps: RouterDeps) {
    this.#deps = deps;
  }

  /** The state decide() moves; its maps and sets are read (and, in tests and the replay, seeded) through here. */
  get state(): RouterState {
    return this.#state;
  }
  get skillsRouted(): boolean {
    return this.#state.skillsRouted;
  }
  get toolsRouted(): boolean {
    return this.#state.toolsRouted;
  }
  get frozen(): boolean {
    return this.#state.frozen;
  }
  get loaded(): RouterState["loaded"] {
    return this.#state.loaded;
  }
  get pinned(): RouterState["pinned"] {
    return this.#state.pinned;
  }
  get surfaced(): RouterState["surfaced"] {
    return this.#state.surfaced;
  }
  get hidden(): RouterState["hidden"] {
    return this.#state.hidden;
  }
  get routable(): RouterState["routable"] {
    return this.#state.routable;
  }
  set routable(value: RouterState["routable"]) {
    this.#state = { ...this.#state, routable: value };
  }
  get mode(): "routed" | "static" {
    return routingMode(this.#state);
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
    return toSnapshot(this.#state);
  }

  /** Back to a persisted state (resume, /tree). Tools hidden in this process stay known, so they come back. */
  restore(snapshot: RoutingSnapshot | undefined): void {
    this.#state = restoreState(this.#state, snapshot);
    this.#held.clear();
    this.#batches.drop();
  }

  /** Records a `/skill:name` typed while a run was going on: it is pinned at the next turn. */
  pinLater(name: string): void {
    this.pendingPins.add(name);
  }

  /** One turn: gathers the facts (the classifier's answers, SKILL.md bodies), decides, applies. */
  async turn(input: TurnInput): Promise<TurnOutput> {
    const started = performance.now();
    const config = this.#deps.getConfig();
    const user = input.kind === "user" && config.enabled;
    const facts: TurnFacts = {
      kind: input.kind,
      config,
      prompt: input.prompt,
      skills: input.skills,
      tools: input.tools,
      active: input.active,
      userTurn: input.userTurn,
      classifier: input.classify !== undefined,
      ...(input.unavailable ? { unavailable: input.unavailable } : {}),
      pendingPins: user ? [...this.pendingPins] : [],
      missed: user ? [...this.forced] : [],
      ...(input.cacheWarm !== undefined ? { cacheWarm: input.cacheWarm } : {}),
      ...(input.entryId ? { entryId: input.entryId } : {}),
    };
    if (user) {
      this.pendingPins.clear();
      this.forced.clear();
    }
    const settled = await this.#ask(input, facts, config, started);
    const bodies = await this.#loadedBodies(input.skills);
    const result = decide(this.#state, {
      ...facts,
      batch: settled.applied,
      source: settled.source,
      deadlinePassed: settled.deadlinePassed,
      bodies,
      ms: Math.round(performance.now() - started),
    });
    this.#apply(result, bodies, settled.applied);
    return result.view;
  }

  /** Asks the classifier what toAsk() says, waiting at most `routingTimeoutMs`. */
  async #ask(input: TurnInput, facts: TurnFacts, config: GuardConfig, started: number): Promise<Settled> {
    const ask = toAsk(this.#state, facts);
    if (!ask) return { source: "none", deadlinePassed: false };
    const gen = this.#batches.next();
    const batch = scoreBatch(input, {
      gen,
      config,
      ...ask,
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
    return this.#batches.settle(batch, gen, Math.max(0, config.routingTimeoutMs - (performance.now() - started)));
  }

  /** Bodies of the loaded skills: held since their load, or read now for a restored skill. */
  async #loadedBodies(skills: TurnInput["skills"]): Promise<Map<string, SkillBody>> {
    const bodies = new Map(this.#held);
    const restored = skills.filter((s) => this.#state.loaded.has(s.name) && !this.#held.has(s.name));
    const read = await Promise.all(restored.map((s) => this.#bodies.read(s)));
    restored.forEach((s, i) => {
      const body = read[i];
      if (body) bodies.set(s.name, body);
    });
    return bodies;
  }

  #apply(result: Transition, bodies: ReadonlyMap<string, SkillBody>, batch: BatchResult | undefined): void {
    this.#state = result.state;
    this.#held = new Map();
    for (const name of result.state.loaded.keys()) {
      const body = bodies.get(name) ?? batch?.bodies.get(name);
      if (body) this.#held.set(name, body);
    }
    for (const e of result.events) {
      if (e.kind === "record") this.#deps.telemetry.record(e.record);
      else if (e.kind === "notice") this.#notices.push(e.notice);
      else this.#batches.drop();
    }
  }

  /** A tool result of the running turn: a call to a tool surfacing hid is a miss. */
  noteToolResult(message: unknown, config: GuardConfig, toolCallId?: string): string | undefined {
    const tool = detectMiss(message as Parameters<typeof detectMiss>[0], this.#state.hidden);
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

  /** The routing footer (routing-state.ts `routingStatus`). */
  statusText(config: GuardConfig): string | undefined {
    return routingStatus(this.#state, config);
  }
}
