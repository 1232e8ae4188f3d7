// The run that just finished: where it starts, what was asked and answered, what came before it, and
// which of its tool results may be distilled. Every scan here is a single linear pass over the entries.

import type { GuardConfig } from "../shared/config.ts";
import { redactedLine } from "../shared/redact.ts";
import { clip } from "../shared/text.ts";
import type { Candidate, History, HistoryExchange, RunSpan, SnapEntry, SnapToolCall } from "../shared/types.ts";

/** Line put before each message the user sent while the agent was working. */
export const STEERING_MARKER = "[The user added during the run]";
/** Stands in for a prompt without text, so an older question is never shown in its place. */
export const IMAGE_ONLY = "[the user sent only an image]";

const LIMITS = {
  summary: 2000,
  exchangeUser: 800,
  exchangeAssistant: 1200,
  firstRequest: 1000,
  label: 80,
} as const;

/** A user prompt the model sees (steering or not). */
export function isUserMessage(entry: SnapEntry | undefined): boolean {
  return entry?.visible === true && entry.role === "user" && entry.type === "message";
}

/** The prompt's text, or the placeholder when it carries only images. */
export function promptText(entry: SnapEntry): string {
  if (entry.text.trim() !== "") return entry.text;
  return entry.images > 0 ? IMAGE_ONLY : "";
}

/** The assistant's text when it has any, else undefined. */
function assistantText(entry: SnapEntry): string | undefined {
  if (!entry.visible || entry.role !== "assistant") return undefined;
  return entry.text.trim() === "" ? undefined : entry.text;
}

/**
 * A user message is steering when the agent was still mid-run as it arrived: the nearest earlier
 * visible message (custom notices aside) is a tool result or an assistant message asking for tools.
 * An assistant message that ended in error or abort asked for tools that never ran, so the run was over.
 */
export function isSteering(entries: SnapEntry[], index: number): boolean {
  for (let i = index - 1; i >= 0; i--) {
    const e = entries[i];
    if (!e?.visible || e.role === undefined || e.role === "custom") continue;
    if (e.role === "toolResult") return true;
    if (e.role !== "assistant") return false;
    const ended = e.stopReason === "error" || e.stopReason === "aborted";
    return (e.toolCalls?.length ?? 0) > 0 && !ended;
  }
  return false;
}

/**
 * Index of the prompt that started the last run before `end` (steering messages are skipped), or -1.
 * `end` defaults to the whole snapshot; an earlier end finds an earlier run.
 */
export function findRunStart(entries: SnapEntry[], end = entries.length): number {
  for (let i = Math.min(end, entries.length) - 1; i >= 0; i--) {
    if (isUserMessage(entries[i]) && !isSteering(entries, i)) return i;
  }
  return -1;
}

function str(value: unknown): string | undefined {
  return typeof value === "string" && value.trim() !== "" ? value : undefined;
}

function num(value: unknown): number | undefined {
  return typeof value === "number" && Number.isFinite(value) ? value : undefined;
}

/** ` (lines 40–59)` for a read with offset/limit; empty for a whole-file read. */
function readRange(args: Record<string, unknown>): string {
  const offset = num(args.offset);
  const limit = num(args.limit);
  if (offset === undefined && limit === undefined) return "";
  const first = offset ?? 1;
  return limit === undefined ? ` (lines ${first}–…)` : ` (lines ${first}–${first + limit - 1})`;
}

/**
 * Labels and argument sizes by the call's arguments. Every pass labels and sizes every call of the
 * session again (old exchanges, break-even), and a call's arguments never change once it is made; those
 * of a `write` can be a whole file.
 */
const labels = new WeakMap<object, Map<string, string>>();
const jsonLengths = new WeakMap<object, number>();

/** Short human label of a call, used in records, stubs and replacement headers. */
export function toolLabel(tool: string, args: Record<string, unknown>): string {
  // Arguments from a malformed session may be no object at all, which a WeakMap cannot key.
  if (typeof args !== "object" || args === null) return labelOf(tool, args ?? {});
  let byTool = labels.get(args);
  const known = byTool?.get(tool);
  if (known !== undefined) return known;
  const label = labelOf(tool, args);
  if (!byTool) {
    byTool = new Map();
    labels.set(args, byTool);
  }
  byTool.set(tool, label);
  return label;
}

/** Length of `safeJson(args)`. */
export function argsJsonLength(args: unknown): number {
  if (typeof args !== "object" || args === null) return safeJson(args).length;
  let length = jsonLengths.get(args);
  if (length === undefined) {
    length = safeJson(args).length;
    jsonLengths.set(args, length);
  }
  return length;
}

function labelOf(tool: string, args: Record<string, unknown>): string {
  const max = LIMITS.label;
  // A label is shown in stubs, records and the replay: a credential in a command never reaches them.
  const command = str(args.command);
  if (tool === "bash" && command) return `bash \`${redactedLine(command, max)}\``;
  const path = str(args.path) ?? str(args.file_path);
  if (tool === "read" && path) return `read ${redactedLine(path, max)}${readRange(args)}`;
  const pattern = str(args.pattern);
  const where = path ? ` ${redactedLine(path, max / 2)}` : "";
  if (tool === "grep" && pattern) return `grep "${redactedLine(pattern, max)}"${where}`;
  if (tool === "find" && pattern) return `find ${redactedLine(pattern, max)}${where}`;
  if (tool === "ls") return `ls ${redactedLine(path ?? ".", max)}`;
  const json = safeJson(args);
  return json === "{}" ? tool : `${tool} ${redactedLine(json, max)}`;
}

/** JSON that never throws (cyclic or BigInt values fall back to a marker). */
export function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? "null";
  } catch {
    // swallow-ok: a value JSON cannot hold gets a marker of its own.
    return '"[unserializable]"';
  }
}

function emptyHistory(): History {
  return { exchanges: [] };
}

/**
 * What came before `beforeIndex`: the latest compaction or branch summary, the last `n` exchanges
 * (prompt plus the last assistant text before the next prompt) and, if not among them, the first prompt.
 */
export function collectHistory(entries: SnapEntry[], beforeIndex: number, n: number): History {
  if (n <= 0) return emptyHistory();
  let summary: string | undefined;
  const all: HistoryExchange[] = [];
  const end = Math.min(beforeIndex, entries.length);
  for (let i = 0; i < end; i++) {
    const e = entries[i];
    if (!e?.visible) continue;
    if (e.role === "compactionSummary" || e.role === "branchSummary") {
      const text = e.summary ?? e.text;
      if (text.trim() !== "") summary = text;
    } else if (isUserMessage(e)) {
      all.push({ user: promptText(e), assistant: "" });
    } else {
      const text = assistantText(e);
      const last = all[all.length - 1];
      if (text !== undefined && last) last.assistant = text;
    }
  }
  const included = all.slice(Math.max(0, all.length - n));
  const history: History = {
    exchanges: included.map((x) => ({
      user: clip(x.user, LIMITS.exchangeUser),
      assistant: clip(x.assistant, LIMITS.exchangeAssistant),
    })),
  };
  if (summary !== undefined) history.summary = clip(summary, LIMITS.summary);
  const first = all[0];
  if (all.length > included.length && first && first.user !== IMAGE_ONLY && first.user !== "") {
    history.firstRequest = clip(first.user, LIMITS.firstRequest);
  }
  return history;
}

/**
 * The last run before `end` (default: the whole snapshot, so the run that just finished): its question
 * (prompt plus steering), answer, notes, tool calls and history. `end` is the index of the prompt that
 * started the next run when an earlier run is rebuilt (its outputs asked again at a later run end).
 */
export function collectRun(entries: SnapEntry[], historyExchanges: number, end = entries.length): RunSpan | undefined {
  const stop = Math.min(end, entries.length);
  const start = findRunStart(entries, stop);
  const prompt = entries[start];
  if (start < 0 || !prompt) return undefined;
  const question = [promptText(prompt)];
  const texts: string[] = [];
  const calls = new Map<string, SnapToolCall>();
  for (let i = start + 1; i < stop; i++) {
    const e = entries[i];
    if (!e) continue;
    // Everything after the run's prompt that is a user message is steering, by how findRunStart works.
    if (isUserMessage(e)) question.push(`${STEERING_MARKER}\n${promptText(e)}`);
    for (const call of e.toolCalls ?? []) calls.set(call.id, call);
    const text = assistantText(e);
    if (text !== undefined) texts.push(text);
  }
  return {
    startIndex: start,
    promptId: prompt.id,
    question: question.join("\n\n"),
    answer: texts[texts.length - 1] ?? "",
    notes: texts.slice(0, -1).join("\n\n"),
    history: collectHistory(entries, start, historyExchanges),
    calls,
  };
}

export type CandidateConfig = Pick<GuardConfig, "minResultChars" | "excludeTools" | "distillErrors"> &
  Partial<Pick<GuardConfig, "smallResultMinChars">>;

/** The longest output judged whole as a small item: the classifier is shown all of it. */
export const WHOLE_ITEM_MAX = 4000;

/**
 * The length from which an output is chunked. With small items on it is never above WHOLE_ITEM_MAX: a
 * longer output judged whole would be judged from an excerpt, and could then be dropped with parts no
 * one looked at. Without them an output below `minResultChars` is not judged at all, so it stays.
 */
export function chunkedFrom(config: Pick<CandidateConfig, "minResultChars" | "smallResultMinChars">): number {
  const small = (config.smallResultMinChars ?? 0) > 0;
  return small ? Math.min(config.minResultChars, WHOLE_ITEM_MAX + 1) : config.minResultChars;
}
/** The settings the size-independent candidate rules read. */
export type CandidateRuleConfig = Pick<GuardConfig, "excludeTools" | "distillErrors"> &
  Partial<Pick<GuardConfig, "keepReads">>;

/**
 * The candidate rules for one tool result of the run, except its size (large and small outputs share them).
 * `superseded` says a later call of the run changed or re-read what it shows.
 */
export function passesCandidateRules(
  e: SnapEntry,
  config: CandidateRuleConfig,
  tool: string,
  superseded = false,
): boolean {
  if (!e.visible || e.role !== "toolResult" || e.images !== 0) return false;
  if (e.isError === true && !config.distillErrors) return false;
  if (config.excludeTools.includes(tool)) return false;
  // Removed reads were needed later more often than other outputs (docs/replay.md), unless the run read
  // the file again or changed it since: then the work goes by the newer text.
  if (config.keepReads === true && tool === "read" && !superseded) return false;
  // An edited output is either ours (distilled already) or someone else's (recall returns the raw entry,
  // so whatever that edit added could not be recovered): both are left alone. The visible text is never
  // the test: a tool's own output may start with the guard's marker, and is judged like any other.
  return e.edited !== true;
}

/** The candidate for one tool result under the candidate rules (size aside), with its call from `calls`. */
export function resultCandidate(
  e: SnapEntry,
  calls: ReadonlyMap<string, SnapToolCall>,
  config: CandidateRuleConfig,
  superseded?: ReadonlyMap<string, string>,
): Candidate | undefined {
  if (e.role !== "toolResult") return undefined;
  const call = e.toolCallId === undefined ? undefined : calls.get(e.toolCallId);
  const tool = e.toolName ?? call?.name ?? "tool";
  if (!passesCandidateRules(e, config, tool, superseded?.has(e.id) === true)) return undefined;
  const args = call?.args ?? {};
  return { entryId: e.id, tool, label: toolLabel(tool, args), args, isError: e.isError === true, text: e.text };
}

/**
 * Tool results of the run that pass the candidate rules and whose text length is at least `minChars`
 * and below `maxChars`, matched with their calls.
 */
export function collectRunResults(
  entries: SnapEntry[],
  span: RunSpan,
  config: CandidateRuleConfig,
  minChars: number,
  maxChars = Number.POSITIVE_INFINITY,
  superseded?: ReadonlyMap<string, string>,
): Candidate[] {
  const out: Candidate[] = [];
  for (let i = span.startIndex + 1; i < entries.length; i++) {
    const e = entries[i];
    if (e?.role !== "toolResult" || e.text.length < minChars || e.text.length >= maxChars) continue;
    const candidate = resultCandidate(e, span.calls, config, superseded);
    if (candidate) out.push(candidate);
  }
  return out;
}

/** Tool results of the run that the pass may distill. */
export function collectCandidates(
  entries: SnapEntry[],
  span: RunSpan,
  config: CandidateConfig,
  superseded?: ReadonlyMap<string, string>,
): Candidate[] {
  return collectRunResults(entries, span, config, chunkedFrom(config), Number.POSITIVE_INFINITY, superseded);
}

/** Only worth a classifier request when the candidates together are big enough. */
export function runWorthDistilling(candidates: Candidate[], minRunChars: number): boolean {
  let total = 0;
  for (const c of candidates) total += c.text.length;
  return candidates.length > 0 && total >= minRunChars;
}
