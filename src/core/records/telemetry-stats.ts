// Decision telemetry: the event shapes every part of the extension writes (one JSON line each) and the
// aggregation `/guard stats` shows. Events carry names, scores, sizes, latencies, token counts and entry
// ids; never message or tool-output text, never credentials.
import { count, formatCount } from "../shared/text.ts";

export interface TelemetryBase {
  v: 1;
  /** ISO time. */
  ts: string;
  /** Pi session id, when known. */
  session?: string;
}

export interface ScoreLine {
  name: string;
  score: number;
}

export interface RouteEvent extends TelemetryBase {
  type: "route";
  turn: number;
  /** routed: the catalog is reduced; static: Pi's default (no result yet, or fail-static). */
  mode: "routed" | "static";
  /** fresh: this boundary's answers; late: answers of an earlier boundary that missed its deadline; none. */
  source: "fresh" | "late" | "none";
  /** Scores by skill name (null: asked, no usable answer). */
  scores: Record<string, number | null>;
  decay: Record<string, number | null>;
  loaded: ScoreLine[];
  evicted: ScoreLine[];
  crowded: string[];
  pinned: string[];
  /** Skills whose bodies the model sees after this boundary. */
  active: string[];
  /** Catalog characters Pi would have sent that the model does not get. */
  catalogCharsHidden: number;
  /** Characters of skill bodies injected. */
  bodyChars: number;
  promptChars: number;
  digestChars: number;
  requests: number;
  inputTokens: number;
  costUsd: number;
  ms: number;
  timedOut: boolean;
  changed: boolean;
  /** The entry the new user turn follows. */
  entryId?: string;
}

export interface SurfaceEvent extends TelemetryBase {
  type: "surface";
  turn: number;
  mode: "routed" | "static";
  source: "fresh" | "late" | "none";
  scores: Record<string, number | null>;
  surfaced: string[];
  /** Namespaces surfaced because of a miss. */
  forced: string[];
  hiddenNamespaces: string[];
  toolsActive: number;
  toolsHidden: number;
  /** JSON-schema characters of the hidden tools (what they would cost per request). */
  schemaCharsHidden: number;
  changed: boolean;
  entryId?: string;
}

export interface MissEvent extends TelemetryBase {
  type: "miss";
  tool: string;
  namespace?: string;
  toolCallId?: string;
}

export interface PinEvent extends TelemetryBase {
  type: "pin";
  skill: string;
}

export interface DistillEvent extends TelemetryBase {
  type: "distill";
  phase: string;
  model?: string;
  savedChars: number;
  requests: number;
  inputTokens: number;
  costUsd: number;
  ms: number;
  timedOut: boolean;
  results: Array<{
    entryId: string;
    kind?: string;
    tool?: string;
    outcome: string;
    reason: string;
    beforeChars: number;
    afterChars: number;
  }>;
}

export interface DegradedEvent extends TelemetryBase {
  type: "degraded";
  /** no-key, not-found, bad-model, rate-limited, failed, telemetry. */
  class: string;
  /** static: Pi's default behaviour; freeze: the current set stays. */
  action: "static" | "freeze" | "none";
  /** A text-free error description such as `http 500`. */
  detail?: string;
}

/** An error the guard caught and went on past (main/platform/swallowed.ts). */
export interface CaughtEvent extends TelemetryBase {
  type: "caught";
  /** The site, e.g. `warm-up.snapshot`. */
  where: string;
  /** The error's class or code (`TypeError`, `ENOENT`), never its text. */
  error: string;
}

export type TelemetryEvent =
  | RouteEvent
  | SurfaceEvent
  | MissEvent
  | PinEvent
  | DistillEvent
  | DegradedEvent
  | CaughtEvent;

/** Distributive Omit, so each event keeps its own fields. */
export type EventInput<E> = E extends TelemetryBase ? Omit<E, "v" | "ts"> & { ts?: string } : never;
export type TelemetryInput = EventInput<TelemetryEvent>;

// ---------------------------------------------------------------------------------------------------
// Aggregation

export interface SkillStats {
  loads: number;
  evictions: number;
  pins: number;
  scored: number;
  scoreSum: number;
  maxScore: number;
  loadScoreSum: number;
}

export interface NamespaceStats {
  surfaced: number;
  hidden: number;
  misses: number;
  scored: number;
  scoreSum: number;
}

export interface TelemetryStats {
  lines: number;
  badLines: number;
  sessions: number;
  boundaries: number;
  routed: number;
  timedOut: number;
  lateUsed: number;
  routeMsSum: number;
  routeMsMax: number;
  skills: Map<string, SkillStats>;
  namespaces: Map<string, NamespaceStats>;
  misses: Map<string, number>;
  catalogCharsHidden: number;
  bodyChars: number;
  schemaCharsHidden: number;
  distillPasses: number;
  distillSavedChars: number;
  requests: number;
  inputTokens: number;
  costUsd: number;
  degraded: Map<string, number>;
  caught: Map<string, number>;
}

function emptyStats(): TelemetryStats {
  return {
    lines: 0,
    badLines: 0,
    sessions: 0,
    boundaries: 0,
    routed: 0,
    timedOut: 0,
    lateUsed: 0,
    routeMsSum: 0,
    routeMsMax: 0,
    skills: new Map(),
    namespaces: new Map(),
    misses: new Map(),
    catalogCharsHidden: 0,
    bodyChars: 0,
    schemaCharsHidden: 0,
    distillPasses: 0,
    distillSavedChars: 0,
    requests: 0,
    inputTokens: 0,
    costUsd: 0,
    degraded: new Map(),
    caught: new Map(),
  };
}

const num = (v: unknown): number => (typeof v === "number" && Number.isFinite(v) ? v : 0);
const isObj = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

function skill(stats: TelemetryStats, name: string): SkillStats {
  let s = stats.skills.get(name);
  if (!s) {
    s = { loads: 0, evictions: 0, pins: 0, scored: 0, scoreSum: 0, maxScore: 0, loadScoreSum: 0 };
    stats.skills.set(name, s);
  }
  return s;
}

function namespace(stats: TelemetryStats, name: string): NamespaceStats {
  let s = stats.namespaces.get(name);
  if (!s) {
    s = { surfaced: 0, hidden: 0, misses: 0, scored: 0, scoreSum: 0 };
    stats.namespaces.set(name, s);
  }
  return s;
}

function lines(value: unknown): ScoreLine[] {
  if (!Array.isArray(value)) return [];
  return value.filter((l): l is ScoreLine => isObj(l) && typeof l.name === "string" && typeof l.score === "number");
}

function names(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((n): n is string => typeof n === "string") : [];
}

function scores(value: unknown): Array<[string, number]> {
  if (!isObj(value)) return [];
  const out: Array<[string, number]> = [];
  for (const [k, v] of Object.entries(value)) if (typeof v === "number" && Number.isFinite(v)) out.push([k, v]);
  return out;
}

export interface TelemetryAggregator {
  add(line: string): void;
  result(): TelemetryStats;
}

/** Aggregates telemetry line by line (a large file never has to be in memory at once). */
export function telemetryAggregator(): TelemetryAggregator {
  const stats = emptyStats();
  const sessions = new Set<string>();
  const add = (raw: string): void => {
    const text = raw.trim();
    if (!text) return;
    stats.lines++;
    let e: unknown;
    try {
      e = JSON.parse(text);
    } catch {
      // swallow-ok: counted as a bad line, which /guard stats reports.
      stats.badLines++;
      return;
    }
    if (!isObj(e) || typeof e.type !== "string") {
      stats.badLines++;
      return;
    }
    if (typeof e.session === "string") sessions.add(e.session);
    switch (e.type) {
      case "route": {
        stats.boundaries++;
        if (e.mode === "routed") stats.routed++;
        if (e.timedOut === true) stats.timedOut++;
        if (e.source === "late") stats.lateUsed++;
        stats.routeMsSum += num(e.ms);
        stats.routeMsMax = Math.max(stats.routeMsMax, num(e.ms));
        for (const [name, score] of [...scores(e.scores), ...scores(e.decay)]) {
          const s = skill(stats, name);
          s.scored++;
          s.scoreSum += score;
          s.maxScore = Math.max(s.maxScore, score);
        }
        for (const l of lines(e.loaded)) {
          const s = skill(stats, l.name);
          s.loads++;
          s.loadScoreSum += l.score;
        }
        for (const l of lines(e.evicted)) skill(stats, l.name).evictions++;
        stats.catalogCharsHidden += num(e.catalogCharsHidden);
        stats.bodyChars += num(e.bodyChars);
        stats.requests += num(e.requests);
        stats.inputTokens += num(e.inputTokens);
        stats.costUsd += num(e.costUsd);
        break;
      }
      case "surface": {
        for (const [name, score] of scores(e.scores)) {
          const s = namespace(stats, name);
          s.scored++;
          s.scoreSum += score;
        }
        for (const n of names(e.surfaced)) namespace(stats, n).surfaced++;
        for (const n of names(e.hiddenNamespaces)) namespace(stats, n).hidden++;
        stats.schemaCharsHidden += num(e.schemaCharsHidden);
        break;
      }
      case "miss": {
        if (typeof e.tool === "string") stats.misses.set(e.tool, (stats.misses.get(e.tool) ?? 0) + 1);
        if (typeof e.namespace === "string") namespace(stats, e.namespace).misses++;
        break;
      }
      case "pin": {
        if (typeof e.skill === "string") skill(stats, e.skill).pins++;
        break;
      }
      case "distill": {
        stats.distillPasses++;
        stats.distillSavedChars += num(e.savedChars);
        stats.requests += num(e.requests);
        stats.inputTokens += num(e.inputTokens);
        stats.costUsd += num(e.costUsd);
        break;
      }
      case "degraded": {
        const key = `${typeof e.class === "string" ? e.class : "?"}${typeof e.detail === "string" ? ` (${e.detail})` : ""}`;
        stats.degraded.set(key, (stats.degraded.get(key) ?? 0) + 1);
        break;
      }
      case "caught": {
        const key = `${typeof e.where === "string" ? e.where : "?"} (${typeof e.error === "string" ? e.error : "?"})`;
        stats.caught.set(key, (stats.caught.get(key) ?? 0) + 1);
        break;
      }
      default:
        break;
    }
  };
  return {
    add,
    result() {
      stats.sessions = sessions.size;
      return stats;
    },
  };
}

/** Aggregates telemetry lines; unreadable lines are counted and skipped. */
export function aggregateTelemetry(input: Iterable<string>): TelemetryStats {
  const agg = telemetryAggregator();
  for (const line of input) agg.add(line);
  return agg.result();
}

const two = (x: number): string => x.toFixed(2).replace(/^0\./, ".");

/** `/guard stats` lines. */
export function formatTelemetryStats(stats: TelemetryStats, path: string): string[] {
  if (stats.lines === 0) return [`context-guard stats: no telemetry yet (${path})`];
  const out: string[] = [
    `context-guard stats from ${path}: ${count(stats.lines, "line")}${stats.badLines ? `, ${stats.badLines} unreadable` : ""}, ${count(stats.sessions, "session")}`,
  ];
  if (stats.boundaries > 0) {
    out.push(
      `routing: ${count(stats.boundaries, "user turn")}, ${stats.routed} routed, ${stats.timedOut} past the deadline, ${stats.lateUsed} used late answers; ${Math.round(stats.routeMsSum / stats.boundaries)} ms mean, ${Math.round(stats.routeMsMax)} ms max`,
    );
  }
  const skills = [...stats.skills.entries()].sort((a, b) => b[1].loads - a[1].loads || (a[0] < b[0] ? -1 : 1));
  if (skills.length > 0) {
    out.push("skills (loads / evictions / pins · mean score · max · mean at load):");
    for (const [name, s] of skills) {
      const mean = s.scored ? two(s.scoreSum / s.scored) : "–";
      const atLoad = s.loads ? two(s.loadScoreSum / s.loads) : "–";
      out.push(
        `  ${name}: ${s.loads} / ${s.evictions} / ${s.pins} · ${mean} · ${s.scored ? two(s.maxScore) : "–"} · ${atLoad}`,
      );
    }
  }
  const spaces = [...stats.namespaces.entries()].sort((a, b) => (a[0] < b[0] ? -1 : 1));
  if (spaces.length > 0) {
    out.push("tool namespaces (surfaced / hidden turns · misses · mean score):");
    for (const [name, s] of spaces) {
      out.push(`  ${name}: ${s.surfaced} / ${s.hidden} · ${s.misses} · ${s.scored ? two(s.scoreSum / s.scored) : "–"}`);
    }
  }
  if (stats.misses.size > 0) {
    out.push(
      `misses: ${[...stats.misses.entries()]
        .sort((a, b) => b[1] - a[1])
        .map(([t, n]) => `${t} ×${n}`)
        .join(", ")}`,
    );
  }
  const perTurn = (x: number) => (stats.boundaries > 0 ? formatCount(x / stats.boundaries) : "0");
  // Only what ran: a feature that is off (no skills routed, no namespaces) has nothing to say.
  const saved: string[] = [];
  if (stats.catalogCharsHidden > 0 || stats.bodyChars > 0) {
    saved.push(
      `skill catalog ${formatCount(stats.catalogCharsHidden)} chars left out (${perTurn(stats.catalogCharsHidden)}/turn) for ${formatCount(stats.bodyChars)} chars of loaded bodies`,
    );
  }
  if (stats.schemaCharsHidden > 0) {
    saved.push(
      `tool schemas ${formatCount(stats.schemaCharsHidden)} chars hidden (${perTurn(stats.schemaCharsHidden)}/turn)`,
    );
  }
  if (stats.distillPasses > 0) {
    saved.push(
      `distilled outputs ${formatCount(stats.distillSavedChars)} chars in ${count(stats.distillPasses, "pass", "passes")}`,
    );
  }
  if (saved.length > 0) out.push(`savings: ${saved.join("; ")}`);
  if (stats.requests > 0) {
    out.push(
      `classifier: ${count(stats.requests, "request")}, ${formatCount(stats.inputTokens)} input tokens, $${stats.costUsd.toFixed(4)}`,
    );
  }
  if (stats.degraded.size > 0) out.push(`degraded: ${tally(stats.degraded)}`);
  if (stats.caught.size > 0) out.push(`errors caught and gone past: ${tally(stats.caught)}`);
  return out;
}

/** `key ×n, …`, most frequent first. */
function tally(counts: ReadonlyMap<string, number>): string {
  return [...counts.entries()]
    .sort((a, b) => b[1] - a[1])
    .map(([k, n]) => `${k} ×${n}`)
    .join(", ");
}
