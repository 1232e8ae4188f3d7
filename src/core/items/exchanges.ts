// Old exchanges: a prompt from an earlier run and everything it led to, up to the next prompt. One that
// has nothing to do with the current work is omitted as a whole (a stub on the prompt, every other
// editable entry dropped), so a tool call never loses its result or the other way round, and assistant
// content is never rewritten. Every scan here is one linear pass over the entries.

import { entryChars } from "../cache/break-even.ts";
import { formatProbability, isProbability } from "../distill/interpret.ts";
import { bool, hasHistory, workState } from "../distill/request.ts";
import { promptText } from "../distill/run.ts";
import type { GuardConfig } from "../shared/config.ts";
import { keyFactsNote } from "../shared/key-facts.ts";
import { redactedLine } from "../shared/redact.ts";
import { clip, formatCount } from "../shared/text.ts";
import {
  type ClassifierOutcome,
  type ClassifierRequest,
  type ContextEditDraft,
  type Exchange,
  GUARD_MARKER,
  type JsonObject,
  type JsonValue,
  type PassPhase,
  type Question,
  RECORD_TYPE,
  type RecordResult,
  type RunSpan,
  type SnapEntry,
} from "../shared/types.ts";
import { asksForTools, type ExchangeDraft, ExchangeSplit, foreignEdit } from "./exchange-split.ts";
import { LatestViews, viewedPath } from "./file-views.ts";
import { type GuardJudgments, readJudgments } from "./judged.ts";

export type { Exchange };

/** An exchange smaller than this is not worth a request. */
export const EXCHANGE_MIN_CHARS = 2000;

/** Limits of what the classifier sees per exchange. */
const ITEM_LIMITS = { user: 600, assistant: 800, toolCalls: 20 } as const;

/** Results that were not a real judgment for this run: the exchange is judged again at the next pass. */
const JUDGE_AGAIN = new Set(["deferred", "error", "timeout", "no-answer", "aborted"]);

export type ExchangeConfig = Pick<GuardConfig, "pruneExchanges" | "keepRecentExchanges"> &
  Partial<Pick<GuardConfig, "exchangeKeepsLatestViews">>;

/** Prompt ids that exchange results in guard records after the run's prompt settled for this run. */
export function exchangeMemo(entries: SnapEntry[], runStartIndex: number): Set<string> {
  const memo = new Set<string>();
  for (let i = Math.max(0, runStartIndex + 1); i < entries.length; i++) {
    const e = entries[i];
    if (e?.type !== "custom" || e.customType !== RECORD_TYPE) continue;
    // Records come back from session files: read them defensively.
    const data = e.data;
    const results = typeof data === "object" && data !== null ? (data as { results?: unknown }).results : undefined;
    if (!Array.isArray(results)) continue;
    for (const r of results) {
      if (typeof r !== "object" || r === null) continue;
      const { kind, entryId, reason } = r as { kind?: unknown; entryId?: unknown; reason?: unknown };
      if (kind !== "exchange" || typeof entryId !== "string") continue;
      if (typeof reason === "string" && JUDGE_AGAIN.has(reason)) continue;
      memo.add(entryId);
    }
  }
  return memo;
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

/** Most files a stub names as kept. */
const KEPT_NAMED = 4;

function keptList(paths: readonly string[]): string {
  const named = paths.slice(0, KEPT_NAMED).map((p) => clip(p, 80));
  return paths.length > KEPT_NAMED ? `${named.join(", ")} and ${paths.length - KEPT_NAMED} more` : named.join(", ");
}

/** Most characters of key facts on an omitted exchange's stub. */
const EXCHANGE_FACT_CHARS = 300;

/**
 * The one line left on an omitted exchange's prompt. `texts` (the exchange's messages and tool calls) give
 * the key facts it lists; none that the quoted prompt shows already.
 */
export function exchangeStub(
  ex: Pick<Exchange, "promptId" | "prompt" | "messages" | "chars" | "keptViews">,
  texts: readonly string[] = [],
): string {
  const tokens = formatCount(Math.round(ex.chars / 4));
  const recall = JSON.stringify({ entryId: ex.promptId });
  // The prompt leaves the context with its exchange: a credential pasted into it is not quoted back.
  const quoted = redactedLine(ex.prompt, 120);
  const facts = keyFactsNote(texts, { maxChars: EXCHANGE_FACT_CHARS, skip: (f) => quoted.includes(f) });
  const kept = ex.keptViews?.length ? ` Kept below: its latest view of ${keptList(ex.keptViews)}.` : "";
  return (
    `${GUARD_MARKER} Omitted an earlier exchange judged unrelated to the current work: ` +
    `"${quoted}" (${plural(ex.messages, "message")}, ~${tokens} tokens).${facts}${kept} ` +
    `Full exchange: recall(${recall}).`
  );
}

/**
 * The entries of an exchange that stay when it is omitted: each assistant message that read, edited or
 * wrote a file nothing has viewed since, with the results of all its calls (a call never loses its result).
 */
function latestViewEntries(d: ExchangeDraft, entries: readonly SnapEntry[], views: LatestViews): Map<string, string[]> {
  const kept = new Map<string, string[]>();
  const calls = new Set<string>();
  for (const i of d.at) {
    const e = entries[i] as SnapEntry;
    if (e.role === "assistant") {
      const paths = (e.toolCalls ?? []).flatMap((c) => {
        const path = viewedPath(c);
        return path !== undefined && views.isLatest(path, i) ? [path] : [];
      });
      if (paths.length === 0) continue;
      kept.set(e.id, paths);
      for (const c of e.toolCalls ?? []) calls.add(c.id);
    } else if (e.role === "toolResult" && e.toolCallId !== undefined && calls.has(e.toolCallId)) {
      kept.set(e.id, []);
    }
  }
  return kept;
}

function toExchange(d: ExchangeDraft, entries: readonly SnapEntry[], views: LatestViews | undefined): Exchange {
  const kept = views === undefined ? new Map<string, string[]>() : latestViewEntries(d, entries, views);
  let chars = d.chars;
  const entryIds: string[] = [];
  for (const [k, id] of d.entryIds.entries()) {
    if (kept.has(id)) chars -= entryChars(entries[d.at[k] as number] as SnapEntry);
    else entryIds.push(id);
  }
  const keptViews = [...new Set([...kept.values()].flat())];
  const base = {
    promptId: d.prompt.id,
    index: d.index,
    entryIds,
    prompt: promptText(d.prompt),
    lastAssistant: d.lastAssistant,
    toolLabels: d.toolLabels,
    chars,
    messages: entryIds.length + 1,
    ...(kept.size > 0 ? { keptIds: [...kept.keys()], keptViews } : {}),
  };
  return { ...base, stub: exchangeStub(base) };
}

/** The exchange of a draft, made again only when the draft changed (a plan reads it at every boundary). */
function madeOnce(split: ExchangeSplit, d: ExchangeDraft, entries: readonly SnapEntry[]): Exchange {
  let ex = split.made.get(d) as Exchange | undefined;
  if (!ex) {
    ex = toExchange(d, entries, undefined);
    split.made.set(d, ex);
  }
  return ex;
}

/**
 * Exchanges before the run's prompt that may be judged: not among the last `keepRecentExchanges`,
 * finished, not omitted yet, not settled earlier in this run (`memo`), fully recoverable by recall, big
 * enough, and with a stub shorter than what it replaces.
 */
export function collectExchanges(
  entries: SnapEntry[],
  runStartIndex: number,
  config: ExchangeConfig,
  memo: Set<string>,
  guard: GuardJudgments = readJudgments(entries),
  /** The session's split kept up to date by the caller (core/distill/plan-index.ts); else one is made. */
  kept?: ExchangeSplit,
): Exchange[] {
  if (!config.pruneExchanges || runStartIndex <= 0) return [];
  const end = Math.min(runStartIndex, entries.length);
  const split = kept ?? new ExchangeSplit();
  if (!kept) split.extend(entries, end);
  const all = split.drafts;
  const judged = all.slice(0, Math.max(0, all.length - config.keepRecentExchanges));
  const views = config.exchangeKeepsLatestViews === true ? new LatestViews(entries) : undefined;
  const out: Exchange[] = [];
  for (const d of judged) {
    const last = d.lastAssistantEntry;
    if (last === undefined || asksForTools(last)) continue;
    // An edited prompt shows our stub (omitted already) or someone else's edit: either way it stays.
    if (d.prompt.edited === true || memo.has(d.prompt.id) || foreignEdit(d, guard)) continue;
    if (split.isSplit(d) || d.chars < EXCHANGE_MIN_CHARS) continue;
    const ex = views ? toExchange(d, entries, views) : madeOnce(split, d, entries);
    if (ex.stub.length < ex.chars && ex.chars >= EXCHANGE_MIN_CHARS) out.push(ex);
  }
  return out;
}

function exchangeId(n: number): string {
  return `exchange_${n}`;
}

export interface ExchangeRequestLimits {
  /** Most characters of exchange text per request. */
  maxSegmentChars: number;
  /** Most exchanges per request. */
  maxItemsPerRequest: number;
}

export interface ExchangeRequest {
  request: ClassifierRequest;
  /** The prompt id behind exchange_1, exchange_2, … of this request. */
  promptIds: string[];
}

const SITUATION_RUN_END =
  "A coding agent has just answered user_question (final_answer). Listed under exchanges are older parts of the " +
  "same session: each is a user prompt, the agent's last reply to it and the tools it called. Exchanges that the " +
  "current work does not depend on will be replaced by a one-line note, so the agent no longer sees their details.";
const SITUATION_MID_RUN =
  "A coding agent is still working on user_question; agent_progress shows its latest notes. Listed under " +
  "exchanges are older parts of the same session: each is a user prompt, the agent's last reply to it and the " +
  "tools it called. Exchanges that the current work does not depend on will be replaced by a one-line note, so " +
  "the agent no longer sees their details.";
const SITUATION_HISTORY =
  " earlier_conversation shows the session just before user_question; the work there is probably still going on.";

function toolCallList(labels: string[]): string[] {
  const max = ITEM_LIMITS.toolCalls;
  if (labels.length <= max) return labels;
  return [...labels.slice(0, max - 1), `[… and ${labels.length - (max - 1)} more calls]`];
}

function item(ex: Exchange): { value: JsonObject; chars: number } {
  const user = clip(ex.prompt, ITEM_LIMITS.user);
  const assistant = clip(ex.lastAssistant, ITEM_LIMITS.assistant);
  const value: JsonObject = { user, assistant };
  let chars = user.length + assistant.length;
  if (ex.toolLabels.length > 0) {
    const calls = toolCallList(ex.toolLabels);
    value.tool_calls = calls;
    for (const c of calls) chars += c.length;
  }
  value.size = `${plural(ex.messages, "message")}, ${formatCount(ex.chars)} chars`;
  return { value, chars };
}

/** What the current work is, shared by every request of the pass. */
function currentWork(span: RunSpan, phase: PassPhase): JsonObject {
  const situation = phase === "run-end" ? SITUATION_RUN_END : SITUATION_MID_RUN;
  return workState(span, phase, { situation, historyNote: SITUATION_HISTORY, runEndNotes: false });
}

function exchangeQuestion(n: number, phase: PassPhase, withHistory: boolean): Question {
  const id = exchangeId(n);
  const work = phase === "run-end" ? "user_question and final_answer" : "user_question and agent_progress";
  const scope = withHistory ? `${work}, and the ongoing task in earlier_conversation` : work;
  return bool(
    `Does the current work (${scope}) still depend on ${id}? It does if the agent may need its details: ` +
      "it touches the same files or the same task, or holds decisions or facts that still apply.",
    `the agent may still need ${id}`,
    `${id} has nothing to do with the current work`,
  );
}

/**
 * Requests for the exchanges, in order, at most `maxItemsPerRequest` per request and about
 * `maxSegmentChars` of exchange text (an exchange that is larger alone still gets its own request).
 */
export function buildExchangeRequests(
  exchanges: Exchange[],
  span: RunSpan,
  phase: PassPhase,
  limits: ExchangeRequestLimits,
): ExchangeRequest[] {
  if (exchanges.length === 0) return [];
  const base = currentWork(span, phase);
  const withHistory = hasHistory(span.history);
  const maxItems = Math.max(1, limits.maxItemsPerRequest);
  const out: ExchangeRequest[] = [];
  let items: JsonObject = {};
  let questions: Record<string, Question> = {};
  let promptIds: string[] = [];
  let chars = 0;
  const flush = () => {
    if (promptIds.length === 0) return;
    out.push({ request: { state: { ...base, exchanges: items }, questions }, promptIds });
    items = {};
    questions = {};
    promptIds = [];
    chars = 0;
  };
  for (const ex of exchanges) {
    const next = item(ex);
    if (promptIds.length >= maxItems || (promptIds.length > 0 && chars + next.chars > limits.maxSegmentChars)) {
      flush();
    }
    const n = promptIds.length + 1;
    items[exchangeId(n)] = next.value as JsonValue;
    questions[exchangeId(n)] = exchangeQuestion(n, phase, withHistory);
    promptIds.push(ex.promptId);
    chars += next.chars;
  }
  flush();
  return out;
}

export interface ExchangeVerdict {
  promptId: string;
  /** False: omit. Undefined: no usable answer, so the exchange stays and is asked again next time. */
  relevant: boolean | undefined;
  /** P(still relevant), when answered. */
  p?: number;
  /** `p.07`, or why there is no answer. */
  trace: string;
}

/** One verdict per exchange of a request: omitted only when P(still relevant) is below the threshold. */
export function interpretExchanges(
  outcome: ClassifierOutcome,
  promptIds: string[],
  omitThreshold: number,
): ExchangeVerdict[] {
  return promptIds.map((promptId, i): ExchangeVerdict => {
    if (outcome.status === "timeout" || outcome.status === "aborted") {
      return { promptId, relevant: undefined, trace: outcome.status };
    }
    if (outcome.status !== "stop") return { promptId, relevant: undefined, trace: "error" };
    const answer = outcome.answers?.[exchangeId(i + 1)];
    const p = answer?.type === "bool" && "probability" in answer ? answer.probability : undefined;
    if (!isProbability(p)) return { promptId, relevant: undefined, trace: "no-answer" };
    return { promptId, relevant: !(p < omitThreshold), p, trace: `p${formatProbability(p)}` };
  });
}

/**
 * The exchange with the key facts of its messages and tool calls on its stub. Only an exchange being
 * omitted pays for the scan; until then its stub (and the break-even estimates made from it) is the
 * one without facts, a few hundred characters short at most.
 */
export function withKeyFacts(ex: Exchange, entries: readonly SnapEntry[]): Exchange {
  const ids = new Set([ex.promptId, ...ex.entryIds]);
  const texts: string[] = [];
  for (let i = Math.max(0, ex.index); i < entries.length && ids.size > 0; i++) {
    const e = entries[i] as SnapEntry;
    if (!ids.delete(e.id)) continue;
    texts.push(e.text);
    for (const call of e.toolCalls ?? []) texts.push(JSON.stringify(call.args));
  }
  const stub = exchangeStub(ex, texts);
  return stub.length < ex.chars ? { ...ex, stub } : ex;
}

/** The edits that omit a whole exchange: the stub on the prompt, every other editable entry dropped. */
export function exchangeDrafts(ex: Exchange): ContextEditDraft[] {
  const drafts: ContextEditDraft[] = [
    { type: "context_edit", targetId: ex.promptId, replacement: { content: [{ type: "text", text: ex.stub }] } },
  ];
  for (const id of ex.entryIds) drafts.push({ type: "context_edit", targetId: id, replacement: null });
  return drafts;
}

/**
 * The record entry for one judged exchange. `deferred`: it was judged unrelated but the break-even gate
 * held it back, so it stays and is judged again at a later run end.
 */
export function exchangeResult(ex: Exchange, verdict: ExchangeVerdict, deferred = false): RecordResult {
  const base = {
    kind: "exchange" as const,
    entryId: ex.promptId,
    label: redactedLine(ex.prompt, 60),
    jev: [verdict.trace],
  };
  if (verdict.relevant === false && !deferred) {
    return {
      ...base,
      outcome: "removed",
      reason: "unrelated",
      beforeChars: ex.chars,
      afterChars: ex.stub.length,
      omitted: [...ex.entryIds],
    };
  }
  const reason = verdict.relevant === true ? "relevant" : verdict.relevant === false ? "deferred" : verdict.trace;
  return { ...base, outcome: "kept", reason, beforeChars: ex.chars, afterChars: ex.chars };
}
