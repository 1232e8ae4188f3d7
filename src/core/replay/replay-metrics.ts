// What a replay measures, and the pure arithmetic behind it: the size of the context each request
// carries (guard on and off), edits by kind, classifier use, settle latency and main-thread stall, and
// the needed-later proxy. The replay driver (src/main/replay/driver.ts) fills these shapes; the terminal
// summary and the HTML report only read them.

import type { RoutingReplay } from "../routing/routing-report.ts";
import { CHARS_PER_TOKEN, imageChars } from "../shared/size.ts";
import { IMAGE_HEAD_CHARS, type PassPhase } from "../shared/types.ts";
import type { SessionMoney } from "./money.ts";
import { type ProxyRate, proxyRate, type RemovedKind, type Suspect } from "./proxy.ts";
import type { RecallHarm } from "./recall-harm.ts";
import type { RemovalRates } from "./removal-rates.ts";

/** One request to the main model: an assistant message, and the context it was sent with. */
export interface RequestPoint {
  /** 1-based request number in the session. */
  n: number;
  /** Line of the assistant message in the session file. */
  line: number;
  /** Context characters before it without the guard, and with the guard's edits so far. */
  off: number;
  on: number;
}

export interface PassResultView {
  kind: string;
  outcome: string;
  reason: string;
  label: string;
  entryId: string;
  /** Line of the entry in the session file, when known. */
  line?: number;
  beforeChars: number;
  afterChars: number;
  trace: string;
}

export interface PassMetrics {
  /** 1-based pass number. */
  n: number;
  /** A run end (agent_before_settle) or a mid-run checkpoint (turn_end). */
  phase: PassPhase;
  /** Line of the run's final assistant message (run end) or of the turn's last tool result (checkpoint). */
  line: number;
  /** Line of the run's prompt, when found. */
  promptLine?: number;
  prompt: string;
  /** Requests (assistant messages) before this run end. */
  afterRequest: number;
  status: "done" | "skipped" | "failed";
  /** Why it was skipped or failed. */
  reason?: string;
  results: PassResultView[];
  /** Changed items by kind (large, small, exchange, image). */
  edits: Record<string, number>;
  /** context_edit drafts applied. */
  drafts: number;
  /** Drafts Pi rejected (the whole boundary's drafts are then dropped, as Pi does). */
  invalidDrafts: number;
  savedChars: number;
  classifierRequests: number;
  cacheHits: number;
  /** Latency of each answered classifier request, ms. */
  latencies: number[];
  inputTokens: number;
  costUsd: number;
  /** Characters of the requests' state and questions (what a hosted classifier reads). */
  requestChars: number;
  timedOut: boolean;
  /** Wall time from the boundary to the drafts: snapshot, plan, classifier, finish, validation. */
  settleMs: number;
  /** Longest main-thread block during the pass (event-loop delay), ms. */
  stallMs: number;
  /** Items removed by this pass and how many of them the proxy finds likely needed. */
  removed: number;
  suspected: number;
  /** A run end handed over that had not ended by the next prompt: its drafts landed at the next boundary. */
  landedLater?: boolean;
}

export interface SuspectView extends Suspect {
  /** Line of the removed entry in the session file. */
  line?: number;
  /** Line of the later message that is the evidence. */
  atLine?: number;
  /** Start of the removed text and of the later message (for the report). */
  excerpt: string;
  laterExcerpt: string;
  label: string;
}

export interface ReadProblem {
  line: number;
  message: string;
}

export interface SessionTotals {
  requests: number;
  /** Σ context characters over all requests (the billed context), guard off and on. */
  billedOff: number;
  billedOn: number;
  /** Context of the last request, off and on. */
  finalOff: number;
  finalOn: number;
  /** 1 − on/off of the billed context. */
  savedShare: number;
  passes: number;
  /** Run ends, and mid-run checkpoints that judged something. */
  runEnds: number;
  checkpoints: number;
  passesWithEdits: number;
  edits: Record<string, number>;
  drafts: number;
  invalidDrafts: number;
  classifierRequests: number;
  cacheHits: number;
  inputTokens: number;
  costUsd: number;
  latencyP50: number;
  latencyMax: number;
  settleP50: number;
  settleMax: number;
  stallMax: number;
  /** The needed-later proxy per removed item: its tiers and the likely-needed rate. */
  proxy: ProxyRate;
  removedByKind: Record<string, number>;
  /** Likely-needed items by kind. */
  suspectedByKind: Record<string, number>;
}

export interface SessionMetrics {
  file: string;
  name: string;
  /** Session format version as found in the file. */
  version: number;
  /** What generated the file (its header's `generator`): absent for a recorded session. */
  generated?: string;
  lines: number;
  /** Entries on the replayed branch. */
  entries: number;
  problems: ReadProblem[];
  requests: RequestPoint[];
  passes: PassMetrics[];
  suspects: SuspectView[];
  totals: SessionTotals;
  ms: number;
  /** Main-model dollars off → on and the classifier's cost (see money.ts). */
  dollars?: SessionDollars;
  money?: SessionMoney;
  /** The likely-needed removals by items, characters and the dollars their recalls would cost. */
  harm?: RecallHarm;
  /** Skill routing and tool surfacing over a catalog (--skills, --tools). */
  routing?: RoutingReplay;
}

export interface SessionDollars {
  off: number;
  on: number;
  classifier: number;
  /** off − on − classifier: negative when the guard costs more than it saves. */
  net: number;
  /** What the session recorded, when it did. */
  recorded?: number;
  /** False when a model of the session has no price (dollars then cover only the priced requests). */
  priced: boolean;
  /** Skill routing and tool surfacing (--skills), priced as pruning is: its arms and its own classifier. */
  routing?: { off: number; on: number; classifier: number; net: number };
}

export function dollarsOf(money: SessionMoney): SessionDollars {
  return {
    off: money.off.dollars,
    on: money.on.dollars,
    classifier: money.classifier.dollars,
    net: money.net,
    ...(money.recorded ? { recorded: money.recorded.dollars } : {}),
    priced: money.priced,
  };
}

export interface ReplayReport {
  model: string;
  /** One line on what the model is (e.g. that local/lexical is weaker than Jev). */
  modelNote: string;
  generatedAt: string;
  /**
   * Latency of one wave of classifier calls the replay took for a run-end pass handed over (when its
   * drafts reach the next run: core/replay/handover-timing.ts).
   */
  waveMs: number;
  /** What-if only (bench/handover-money.ts): the next prompt waited this long for such a pass. */
  promptWaitMs?: number;
  sessions: SessionMetrics[];
  /** Files that could not be replayed at all. */
  failures: Array<{ file: string; error: string }>;
  /** The measured share of removed items that were needed later: the held-out half of a census read by hand (removal-rates.ts). */
  removalRates?: RemovalRates & { sessions: number; date: string };
}

export function tokensOf(chars: number): number {
  return Math.round(chars / CHARS_PER_TOKEN);
}

/** The q-quantile (0–1) of the values, nearest rank; 0 for none. */
export function percentile(values: readonly number[], q: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank] as number;
}

interface BlockLike {
  type?: unknown;
  text?: unknown;
  thinking?: unknown;
  thinkingSignature?: unknown;
  data?: unknown;
  mimeType?: unknown;
  name?: unknown;
  arguments?: unknown;
}

function blockChars(block: BlockLike): number {
  switch (block.type) {
    case "text":
      return typeof block.text === "string" ? block.text.length : 0;
    case "thinking": {
      const text = typeof block.thinking === "string" ? block.thinking.length : 0;
      const sig = typeof block.thinkingSignature === "string" ? block.thinkingSignature.length : 0;
      // Signatures are opaque base64: about half as many tokens per character as text.
      return text + Math.round(sig / 2);
    }
    case "image": {
      const data = typeof block.data === "string" ? block.data : "";
      return imageChars({ mimeType: String(block.mimeType ?? ""), head: data.slice(0, IMAGE_HEAD_CHARS) });
    }
    case "toolCall": {
      let args = "";
      try {
        args = JSON.stringify(block.arguments ?? {}) ?? "";
      } catch {
        // swallow-ok: Arguments that JSON cannot hold count as none.
        args = "";
      }
      return String(block.name ?? "").length + args.length;
    }
    default:
      return 0;
  }
}

function contentChars(content: unknown): number {
  if (typeof content === "string") return content.length;
  if (!Array.isArray(content)) return 0;
  let n = 0;
  for (const block of content) if (block && typeof block === "object") n += blockChars(block as BlockLike);
  return n;
}

const sizes = new WeakMap<object, number>();

/**
 * Context characters of one model-visible message (Pi's AgentMessage): text, thinking, tool calls as
 * name plus JSON arguments, images by the size model, summaries, shell executions and system prompt
 * sections. Cached per message object.
 */
export function messageChars(message: unknown): number {
  if (!message || typeof message !== "object") return 0;
  const hit = sizes.get(message);
  if (hit !== undefined) return hit;
  const m = message as Record<string, unknown>;
  let n = 0;
  switch (m.role) {
    case "compactionSummary":
    case "branchSummary":
      n = typeof m.summary === "string" ? m.summary.length : 0;
      break;
    case "bashExecution":
      n = String(m.command ?? "").length + String(m.output ?? "").length;
      break;
    case "system": {
      const sections = m.sections && typeof m.sections === "object" ? Object.values(m.sections) : [];
      for (const s of sections) if (typeof s === "string") n += s.length;
      n += contentChars(m.content);
      try {
        n += Array.isArray(m.toolsAdded) ? JSON.stringify(m.toolsAdded).length : 0;
      } catch {
        // swallow-ok: Tools that JSON cannot hold add nothing to the count.
      }
      break;
    }
    default:
      n = contentChars(m.content);
  }
  sizes.set(message, n);
  return n;
}

export function sumMessages(messages: readonly unknown[]): number {
  let n = 0;
  for (const m of messages) n += messageChars(m);
  return n;
}

function add(into: Record<string, number>, key: string, n = 1): void {
  into[key] = (into[key] ?? 0) + n;
}

export interface RemovedCount {
  kind: RemovedKind;
}

/** Totals of one replayed session. */
export function sessionTotals(
  requests: readonly RequestPoint[],
  passes: readonly PassMetrics[],
  removed: readonly RemovedCount[],
  suspects: readonly Suspect[],
): SessionTotals {
  let billedOff = 0;
  let billedOn = 0;
  for (const r of requests) {
    billedOff += r.off;
    billedOn += r.on;
  }
  const last = requests[requests.length - 1];
  const edits: Record<string, number> = {};
  const latencies: number[] = [];
  const settles: number[] = [];
  let drafts = 0;
  let invalidDrafts = 0;
  let classifierRequests = 0;
  let cacheHits = 0;
  let inputTokens = 0;
  let costUsd = 0;
  let stallMax = 0;
  let passesWithEdits = 0;
  let runEnds = 0;
  for (const p of passes) {
    if (p.phase === "run-end") runEnds++;
    for (const [kind, n] of Object.entries(p.edits)) add(edits, kind, n);
    if (p.drafts > 0) passesWithEdits++;
    drafts += p.drafts;
    invalidDrafts += p.invalidDrafts;
    classifierRequests += p.classifierRequests;
    cacheHits += p.cacheHits;
    inputTokens += p.inputTokens;
    costUsd += p.costUsd;
    latencies.push(...p.latencies);
    if (p.status !== "skipped") settles.push(p.settleMs);
    stallMax = Math.max(stallMax, p.stallMs);
  }
  const removedByKind: Record<string, number> = {};
  const suspectedByKind: Record<string, number> = {};
  for (const r of removed) add(removedByKind, r.kind);
  for (const s of suspects) if (s.tier === "likely-needed") add(suspectedByKind, s.kind);
  return {
    requests: requests.length,
    billedOff,
    billedOn,
    finalOff: last?.off ?? 0,
    finalOn: last?.on ?? 0,
    savedShare: billedOff > 0 ? 1 - billedOn / billedOff : 0,
    passes: passes.length,
    runEnds,
    checkpoints: passes.length - runEnds,
    passesWithEdits,
    edits,
    drafts,
    invalidDrafts,
    classifierRequests,
    cacheHits,
    inputTokens,
    costUsd,
    latencyP50: percentile(latencies, 0.5),
    latencyMax: latencies.length ? Math.max(...latencies) : 0,
    settleP50: percentile(settles, 0.5),
    settleMax: settles.length ? Math.max(...settles) : 0,
    stallMax,
    proxy: proxyRate(removed.length, suspects),
    removedByKind,
    suspectedByKind,
  };
}
