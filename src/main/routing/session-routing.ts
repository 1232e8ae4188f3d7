// Routing for one Pi session, called by the session object at Pi's events: restore at session_start and
// session_tree, a queued `/skill:name` at input, the turn at before_agent_start, misses at
// message_end, and the end of late requests at session_shutdown.
import type { BeforeAgentStartEvent, ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";
import { LOADED_SKILLS_SECTION } from "../../core/routing/routing.ts";
import type { GuardConfig } from "../../core/shared/config.ts";
import { count, formatCount } from "../../core/shared/text.ts";
import type { ClassifyFn } from "../pass/classify-queue.ts";
import { redactKnown } from "../platform/secrets.ts";
import type { Telemetry } from "../platform/telemetry.ts";
import { Router } from "./router.ts";
import { cacheWarm, historyFromBranch, lastSnapshot, unavailable, userTurns } from "./routing-branch.ts";
import { ROUTING_ENTRY } from "./routing-shapes.ts";

const STATUS_KEY = "context-guard-routing";

/** The parts of Pi's API routing uses: the tool lists and the routing entry. */
export type RoutingPi = Pick<ExtensionAPI, "getAllTools" | "getActiveTools" | "setActiveTools" | "appendEntry">;

export interface SessionRoutingDeps {
  pi: RoutingPi;
  getConfig(): GuardConfig;
  /** The classify function for this context, or undefined when no classifier is usable. */
  classifier(ctx: ExtensionContext): ClassifyFn | undefined;
  telemetry: Telemetry;
}

export class SessionRouting {
  readonly router: Router;
  #deps: SessionRoutingDeps;
  /** Notice classes already shown in this session: each is shown once. */
  #noticed = new Set<string>();
  /** The footer text last sent to the UI. */
  #shown: string | undefined;

  constructor(deps: SessionRoutingDeps) {
    this.#deps = deps;
    this.router = new Router({ getConfig: deps.getConfig, telemetry: deps.telemetry });
  }

  /** session_start: the state the branch persisted. */
  start(ctx: ExtensionContext): void {
    this.#deps.telemetry.session = ctx.sessionManager.getSessionId();
    this.restore(ctx);
  }

  /** session_start and session_tree: back to the branch's last routing entry. */
  restore(ctx: ExtensionContext): void {
    this.router.restore(lastSnapshot(ctx.sessionManager.getBranch()));
    this.#show(ctx);
  }

  /** A `/skill:name` typed while a run goes on is pinned at the next turn. */
  input(text: string): void {
    if (!text.startsWith("/skill:")) return;
    const space = text.indexOf(" ");
    const name = (space < 0 ? text.slice(7) : text.slice(7, space)).trim();
    if (name) this.router.pinLater(name);
  }

  /** before_agent_start: decides and edits what the model sees (catalog, section, active tools). */
  async route(event: BeforeAgentStartEvent, ctx: ExtensionContext): Promise<void> {
    const { pi, getConfig } = this.#deps;
    const r = this.router;
    const config = getConfig();
    const options = event.systemPromptOptions;
    let classify: ClassifyFn | undefined;
    let why: { class: string; message: string } | undefined;
    if (event.messageType === "user" && config.enabled) {
      classify = this.#deps.classifier(ctx);
      if (!classify) why = unavailable(ctx, config);
    }
    const branch = ctx.sessionManager.getBranch();
    const out = await r.turn({
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
      cacheWarm: cacheWarm(branch, ctx.model, Date.now()),
    });
    if (out.catalog) options.skills = options.skills.filter((s) => out.catalog?.includes(s));
    if (out.section !== undefined) {
      if (out.section) options.sections[LOADED_SKILLS_SECTION] = out.section;
      else delete options.sections[LOADED_SKILLS_SECTION];
    }
    if (out.activeTools) pi.setActiveTools(out.activeTools);
    if (out.changed) pi.appendEntry(ROUTING_ENTRY, r.snapshot());
    this.#show(ctx);
  }

  /** message_end: a tool result that called a hidden tool surfaces its namespace next time. */
  messageEnd(message: { role?: string; toolCallId?: string }, ctx: ExtensionContext): void {
    if (message.role !== "toolResult") return;
    const ns = this.router.noteToolResult(message, this.#deps.getConfig(), message.toolCallId);
    if (ns) this.#show(ctx);
  }

  /**
   * `/guard`'s line on routing: its classifier requests this session and the skills it loaded. Nothing
   * when there is nothing to route.
   */
  reportLine(): string | undefined {
    const config = this.#deps.getConfig();
    const r = this.router;
    if (!config.routeSkills && Object.keys(config.toolNamespaces).length === 0) return undefined;
    if (r.routable && r.routable.skills === 0 && r.routable.namespaces === 0) return undefined;
    const names = [...[...r.loaded.keys()].sort(), ...[...r.pinned].sort().map((p) => `${p} (pinned)`)];
    const skills = names.length > 0 ? `skills loaded: ${names.join(", ")}` : "no skill loaded";
    const u = r.usage;
    return (
      `classifier for routing: ${count(u.requests, "request")} this session, ${formatCount(u.inputTokens)} input tokens, ` +
      `$${u.costUsd.toFixed(4)} · ${skills}`
    );
  }

  /** session_shutdown: requests still running in the background are aborted. */
  shutdown(): void {
    this.router.dispose();
  }

  /**
   * The routing footer again, with the guard's footer: after `/guard off`, `on` and `reload` it follows the
   * settings at once. Only a changed text reaches the UI.
   */
  redraw(ctx: ExtensionContext): void {
    if (!ctx.hasUI) return;
    const text = this.router.statusText(this.#deps.getConfig());
    if (text === this.#shown) return;
    this.#shown = text;
    ctx.ui.setStatus(STATUS_KEY, text);
  }

  #show(ctx: ExtensionContext): void {
    for (const n of this.router.takeNotices()) {
      if (this.#noticed.has(n.class)) continue;
      this.#noticed.add(n.class);
      // A notice never quotes a classifier error whole, but it is cut with the known credentials anyway.
      ctx.ui.notify(redactKnown(n.message), n.level);
    }
    this.redraw(ctx);
  }
}
