// Skill routing and tool surfacing, replayed over one session: at every user prompt the extension's own
// Router decides (with the replay's classifier) which skills to load and which namespaces to surface from
// the catalog; each request then carries, guard off, the whole catalog and every tool, and guard on what
// routing chose (the reduced catalog, the loaded skills' section, the surfaced tools), priced as pruning's
// guard-off arm is (core/routing/routing-money.ts), on the same learned profiles and calibration. What the agent used (`/skill:name`, reads of a SKILL.md, tool calls) is
// checked against what routing had loaded or surfaced by then.
import { dirname, basename as pathBase } from "node:path";
import { formatSkillsForPrompt, type SessionEntry, type Skill } from "@earendil-works/pi-coding-agent";
import { cacheTtlMs } from "../../core/cache/cold-cache.ts";
import type { ModelView, SessionMoney } from "../../core/replay/money.ts";
import { messageChars } from "../../core/replay/replay-metrics.ts";
import { parseSkillInvocation } from "../../core/routing/routing.ts";
import { type PrefixParts, RoutingMoney } from "../../core/routing/routing-money.ts";
import type { RoutingMoneyView, RoutingReplay, SkillUse, ToolUse } from "../../core/routing/routing-report.ts";
import { coreToolSet, namespaceOf, unknownToolText } from "../../core/routing/surfacing.ts";
import type { GuardConfig } from "../../core/shared/config.ts";
import { CHARS_PER_TOKEN } from "../../core/shared/size.ts";
import type { ClassifyFn } from "../pass/classify-queue.ts";
import { readContent } from "../pass/snapshot.ts";
import { Telemetry } from "../platform/telemetry.ts";
import { Router } from "../routing/router.ts";
import { historyFromBranch } from "../routing/routing-branch.ts";
import type { SkillLike, ToolLike } from "../routing/routing-shapes.ts";
import { learnProfiles, OffPieces, recordedRequests } from "./money-log.ts";
import type { PriceBook } from "./prices.ts";
import { messageText } from "./proxy-input.ts";
import type { SessionFile } from "./reader.ts";
import type { RoutingCatalog } from "./routing-catalog.ts";

export interface RoutingReplayOptions {
  catalog: RoutingCatalog;
  classify: ClassifyFn;
  config: GuardConfig;
  /** The session's priced money view: the main model's cache family, pruning's saving and its fit. */
  money?: SessionMoney;
  /** The prices the pruning replay priced the session with (Pi's registry): routing learns the same profiles. */
  prices?: PriceBook;
  /** Jev's input price ($/M) to price the embedded scorer's requests as Jev would cost. */
  jevInput?: number;
  /** The policy before evictions waited for a cold cache: decay evicts at any prompt (for the comparison). */
  evictAnytime?: boolean;
}

interface MessageLike {
  role?: string;
  content?: unknown;
  stopReason?: string;
  toolName?: string;
  timestamp?: unknown;
  usage?: { input?: number; output?: number; cacheRead?: number; cacheWrite?: number };
}

const tokens = (chars: number) => Math.round(chars / CHARS_PER_TOKEN);
const messageOf = (e: SessionEntry | undefined): MessageLike | undefined =>
  e?.type === "message" ? (e.message as MessageLike) : undefined;
const callsOf = (m: MessageLike | undefined) => readContent(m?.content).toolCalls;
const ended = (m: MessageLike | undefined) => m?.stopReason === "error" || m?.stopReason === "aborted";

/** Pi's skills section for these skills, as it renders it in the system prompt. */
function catalogChars(skills: readonly SkillLike[]): number {
  const text = formatSkillsForPrompt(skills as Skill[], "read").trim();
  return text ? `<skills>\n${text}\n</skills>`.length : 0;
}

function toolChars(tool: ToolLike): number {
  return JSON.stringify({ name: tool.name, description: tool.description ?? "", input_schema: tool.parameters ?? {} })
    .length;
}

/** The model the session used most, with its family and prices. */
function mainModel(money: SessionMoney | undefined): ModelView | undefined {
  return [...(money?.models ?? [])].sort((a, b) => b.requests - a.requests)[0];
}

/** A SKILL.md path named in a tool call's arguments, matched to a catalog skill by its folder name. */
function skillRead(args: Record<string, unknown>, skills: readonly SkillLike[]): SkillLike | undefined {
  for (const v of Object.values(args)) {
    if (typeof v !== "string") continue;
    const m = /([^\s'"]*SKILL\.md)\b/.exec(v);
    if (!m) continue;
    const path = m[1] as string;
    const folder = pathBase(dirname(path));
    const found = skills.find((s) => s.filePath === path || pathBase(s.baseDir) === folder || s.name === folder);
    if (found) return found;
  }
  return undefined;
}

export async function replayRouting(file: SessionFile, options: RoutingReplayOptions): Promise<RoutingReplay> {
  const { catalog } = options;
  const config: GuardConfig = {
    ...options.config,
    enabled: true,
    // The replay waits for every answer: a late one would otherwise apply a prompt later than in the
    // extension on a fast connection, which is what the replay should show.
    routingTimeoutMs: 60_000,
    toolNamespaces: catalog.namespaces,
  };
  let requestChars = 0;
  const classify: ClassifyFn = (request, opts) => {
    requestChars += JSON.stringify(request.state).length + JSON.stringify(request.questions).length;
    return options.classify(request, opts);
  };
  const router = new Router({ getConfig: () => config, telemetry: new Telemetry({ getConfig: () => undefined }) });
  const model = mainModel(options.money);
  const family = model?.family ?? "none";
  // The profiles and heads the pruning replay learned from the same branch, and the honour its fit found.
  const startTime = Date.parse(file.header.timestamp ?? "") || 0;
  const { profiles, heads } = learnProfiles(recordedRequests(file.branch, startTime), options.prices);
  const honour = options.money ? new Map(options.money.models.map((m) => [m.model, m.calibration?.honour])) : undefined;
  const pricer = new RoutingMoney(heads, profiles, honour);
  const offPieces = new OffPieces(file.branch.some((e) => e.type === "context_edit"));
  let requestN = 0;
  const modelSkills = catalog.skills.filter((s) => !s.disableModelInvocation);
  const allTools = catalog.tools.map((t) => t.name);
  const toolByName = new Map(catalog.tools.map((t) => [t.name, t]));
  const core = coreToolSet(config.coreTools);
  const catalogAll = tokens(catalogChars(modelSkills));
  const toolsAll = tokens(catalog.tools.reduce((a, t) => a + toolChars(t), 0));

  // What the guard-on request carries now.
  let shownCatalog: SkillLike[] = modelSkills;
  let shownSection = "";
  let shownLoaded = new Set<string>();
  let active = [...allTools];
  let key = "";
  let previousKey: string | undefined;
  let lastRequestAt: number | undefined;

  const list: SessionEntry[] = [];
  const sets: RoutingReplay["sets"] = [];
  const uses: SkillUse[] = [];
  const tools = new Map<string, ToolUse>();
  const everLoaded = new Set<string>();
  const everSurfaced = new Set<string>();
  let turn = 0;
  let changes = 0;
  let previousVisible: MessageLike | undefined;

  /** The agent could find the skill: its body is loaded, or the catalog it sees lists it. */
  const visible = (name: string) => shownLoaded.has(name) || shownCatalog.some((s) => s.name === name);
  const partsNow = (): PrefixParts => ({
    catalogAll,
    catalogOn: tokens(catalogChars(shownCatalog)),
    bodies: tokens(shownSection ? `<loaded_skills>\n${shownSection}\n</loaded_skills>`.length : 0),
    toolsAll,
    toolsOn: tokens(active.reduce((a, n) => a + (toolByName.has(n) ? toolChars(toolByName.get(n) as ToolLike) : 0), 0)),
  });

  for (const entry of file.branch) {
    const message = messageOf(entry);
    const line = file.lineOf.get(entry) ?? 0;
    const at = Date.parse(entry.timestamp) || 0;
    if (message?.role === "user") {
      const steering =
        previousVisible !== undefined &&
        (previousVisible.role === "toolResult" ||
          (previousVisible.role === "assistant" && callsOf(previousVisible).length > 0 && !ended(previousVisible)));
      if (!steering) {
        turn++;
        const prompt = messageText(message);
        const invoked = parseSkillInvocation(prompt).skill;
        // As the extension judges it from the branch: the last request is younger than the cache's lifetime.
        const warm =
          family !== "none" &&
          lastRequestAt !== undefined &&
          at - lastRequestAt < cacheTtlMs(family === "openai" ? "other" : family);
        const out = await router.turn({
          kind: "user",
          prompt,
          skills: catalog.skills,
          tools: catalog.tools,
          active,
          history: () => historyFromBranch(list as never),
          userTurn: turn,
          classify,
          ...(options.evictAnytime ? {} : { cacheWarm: warm }),
        });
        const loadedNow = [...router.loaded.keys(), ...router.pinned].sort();
        const nextCatalog = out.catalog ?? (router.skillsRouted ? shownCatalog : modelSkills);
        const nextSection = out.section ?? shownSection;
        const nextActive = out.activeTools ?? active;
        const nextKey = JSON.stringify([nextCatalog.map((s) => s.name), nextSection, [...nextActive].sort()]);
        shownCatalog = nextCatalog;
        shownSection = nextSection;
        shownLoaded = new Set(router.skillsRouted ? loadedNow : []);
        active = nextActive;
        const changed = previousKey !== undefined && nextKey !== key;
        key = nextKey;
        if (changed) changes++;
        for (const n of shownLoaded) everLoaded.add(n);
        for (const ns of router.surfaced.keys()) everSurfaced.add(ns);
        sets.push({
          turn,
          line,
          loaded: [...router.loaded.keys()].sort(),
          pinned: [...router.pinned].sort(),
          surfaced: [...router.surfaced.keys()].sort(),
          changed,
          catalog: shownCatalog.map((s) => s.name),
          sectionChars: shownSection.length,
          tools: active.filter((n) => toolByName.has(n)),
        });
        if (invoked && catalog.skills.some((s) => s.name === invoked)) {
          uses.push({ skill: invoked, turn, line, how: "invoked", inTime: true });
        }
      }
    }
    if (message?.role === "assistant") {
      requestN++;
      const head = heads[requestN - 1];
      const off = offPieces.bare.next(list);
      const rec = offPieces.recorded?.next(list);
      if (head) {
        pricer.request({
          head,
          off: off.pieces,
          offFrom: off.from,
          ...(rec ? { rec: rec.pieces, recFrom: rec.from } : {}),
          outputChars: messageChars(message),
          parts: partsNow(),
          onChanged: previousKey !== undefined && key !== previousKey,
        });
      }
      previousKey = key;
      lastRequestAt = at;
      for (const call of callsOf(message)) {
        const read = skillRead(call.args, catalog.skills);
        if (read) uses.push({ skill: read.name, turn, line, how: "read", inTime: visible(read.name) });
        if (!toolByName.has(call.name) || core.has(call.name)) continue;
        const t = tools.get(call.name) ?? {
          tool: call.name,
          ...(namespaceOf(call.name, catalog.namespaces, core)
            ? { namespace: namespaceOf(call.name, catalog.namespaces, core) }
            : {}),
          calls: 0,
          hiddenCalls: 0,
        };
        t.calls++;
        if (!active.includes(call.name)) {
          t.hiddenCalls++;
          // Pi answers with its unknown-tool error; the extension surfaces the namespace at the next prompt.
          router.hidden.add(call.name);
          router.noteToolResult(
            {
              role: "toolResult",
              toolName: call.name,
              isError: true,
              content: [{ type: "text", text: unknownToolText(call.name) }],
            },
            config,
          );
        }
        tools.set(call.name, t);
      }
    }
    if (message && message.role !== "custom") previousVisible = message;
    list.push(entry);
    offPieces.add(entry);
  }
  router.dispose();

  const { priced, ...attribution } = pricer.finish();
  const classifier =
    router.usage.costUsd > 0 ? router.usage.costUsd : (tokens(requestChars) * (options.jevInput ?? 0)) / 1e6;
  const pruning = options.money ? options.money.off.dollars - options.money.on.dollars : undefined;
  const money: RoutingMoneyView = {
    ...attribution,
    classifier,
    ...(pruning !== undefined ? { pruning } : {}),
    netAfterClassifier: attribution.net - classifier,
    family,
    priced: priced && model?.prices !== undefined,
  };
  const used = new Set(uses.map((u) => u.skill));
  const calledNs = new Set([...tools.values()].map((t) => t.namespace).filter((n) => n !== undefined));
  return {
    catalog: {
      skills: catalog.skills.length,
      tools: catalog.tools.length,
      namespaces: Object.keys(catalog.namespaces).length,
      source: catalog.source,
      ...(catalog.rejected.length > 0 ? { rejected: catalog.rejected.length } : {}),
    },
    prompts: turn,
    sets,
    changes,
    uses,
    misses: uses.filter((u) => !u.inTime).length,
    loadedNeverUsed: [...everLoaded].filter((n) => !used.has(n)).sort(),
    tools: [...tools.values()].sort((a, b) => b.calls - a.calls),
    hiddenCalls: [...tools.values()].reduce((a, t) => a + t.hiddenCalls, 0),
    surfacedNeverCalled: [...everSurfaced].filter((n) => !calledNs.has(n)).sort(),
    classifierRequests: router.usage.requests,
    money,
  };
}
