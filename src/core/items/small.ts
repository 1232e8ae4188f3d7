// Small tool outputs (below the size that is worth chunking) are judged whole: one yes/no per output,
// many outputs per classifier request. An output that is no longer needed becomes a one-line stub that
// says how to get it back.

import { formatProbability, isProbability } from "../distill/interpret.ts";
import { outputFacts, STUB_FACT_CHARS } from "../distill/render.ts";
import { hasHistory, workState } from "../distill/request.ts";
import { chunkedFrom, collectRunResults, WHOLE_ITEM_MAX } from "../distill/run.ts";
import type { GuardConfig } from "../shared/config.ts";
import { clip, formatCount, oneLine } from "../shared/text.ts";
import {
  type BoolQuestion,
  type Candidate,
  type ClassifierOutcome,
  type ClassifierRequest,
  type ContextEditDraft,
  GUARD_MARKER,
  type JsonObject,
  type PassPhase,
  type RecordResult,
  type RunSpan,
  type SnapEntry,
} from "../shared/types.ts";
import { CHANGED_ON_DISK, changedOnDiskStub } from "./stale-reads.ts";

/** One small output to judge. */
export interface SmallItem {
  entryId: string;
  tool: string;
  label: string;
  /** Length of the whole output. */
  chars: number;
  isError: boolean;
  /** Why a later call made the output out of date, when one did. */
  superseded?: string;
  /** The output, clipped to ITEM_TEXT_MAX characters. */
  text: string;
  /** ` It held: …`: the key facts its stub carries (key-facts.ts), from the whole output. */
  facts?: string;
}

/** What the classifier said about one item. `keep` is undefined when there was no usable answer. */
export interface SmallVerdict {
  entryId: string;
  keep: boolean | undefined;
  /** `p.06`, or `error`, `timeout`, `no-answer`. */
  trace: string;
}

export interface SmallRequest {
  request: ClassifierRequest;
  /** Entry ids of the request's items: `item_1` is the first. */
  entryIds: string[];
}

export type SmallConfig = Pick<
  GuardConfig,
  "smallResultMinChars" | "minResultChars" | "excludeTools" | "distillErrors"
>;

/** Most output characters shown to the classifier per item: collectSmall's items are never longer. */
export const ITEM_TEXT_MAX = WHOLE_ITEM_MAX;

const SITUATION_RUN_END =
  "A coding agent has replied (final_answer) to user_question. items holds short outputs of tools it called " +
  "while working on it. Each output the agent no longer needs is swapped for a one-line placeholder in its " +
  "context; the agent can fetch it back, but only if it realizes it has to.";
const SITUATION_MID_RUN =
  "A coding agent is still working on user_question; agent_progress shows what it has written so far. items " +
  "holds short outputs of tools it called earlier in this work. Each output the agent no longer needs is " +
  "swapped for a one-line placeholder in its context; the agent can fetch it back, but only if it realizes " +
  "it has to.";
const SITUATION_HISTORY =
  " earlier_conversation is what the session was about before user_question; that work probably continues next.";

const STALE_HINT = "If the item has a superseded note, its output is stale and no longer reflects the current state.";

function itemId(n: number): string {
  return `item_${n}`;
}

/** Small outputs of the run, under the same rules as large ones, whose stub would save something. */
export function collectSmall(
  entries: SnapEntry[],
  span: RunSpan,
  config: SmallConfig,
  superseded: Map<string, string>,
  /** Which outputs may be items at all (checked before the item and its facts are made). */
  keep: (c: Candidate) => boolean = () => true,
): SmallItem[] {
  if (config.smallResultMinChars <= 0) return [];
  const out: SmallItem[] = [];
  for (const c of collectRunResults(
    entries,
    span,
    config,
    config.smallResultMinChars,
    chunkedFrom(config),
    superseded,
  )) {
    if (!keep(c)) continue;
    const item = smallItem(c, superseded.get(c.entryId));
    if (item) out.push(item);
  }
  return out;
}

/**
 * An output waiting for its checkpoint is made into an item again at every boundary until a batch is
 * large enough: its facts are remembered (most recently asked first) instead of read again each time.
 */
const FACTS_MEMO_SIZE = 4096;
const factsMemo = new Map<string, string>();

function smallFacts(text: string, label: string): string {
  const key = `${label}\u0000${text}`;
  let facts = factsMemo.get(key);
  if (facts === undefined) {
    // A short output's stub lists fewer facts: about a quarter of what it replaces.
    facts = outputFacts(text, label, Math.min(STUB_FACT_CHARS, Math.floor(text.length / 4)));
    if (factsMemo.size >= FACTS_MEMO_SIZE) factsMemo.delete(factsMemo.keys().next().value as string);
  } else factsMemo.delete(key);
  factsMemo.set(key, facts);
  return facts;
}

/** The item for one output that passed the candidate rules, unless its stub would not be shorter. */
export function smallItem(c: Candidate, superseded?: string): SmallItem | undefined {
  const item: SmallItem = {
    entryId: c.entryId,
    tool: c.tool,
    label: c.label,
    chars: c.text.length,
    isError: c.isError,
    text: clip(c.text, ITEM_TEXT_MAX),
  };
  if (superseded !== undefined) item.superseded = superseded;
  else {
    const facts = smallFacts(c.text, c.label);
    if (facts !== "") item.facts = facts;
  }
  return smallStub(item).length < item.chars ? item : undefined;
}

/** The line that replaces a small output judged not needed. */
export function smallStub(item: Pick<SmallItem, "entryId" | "label" | "chars" | "superseded" | "facts">): string {
  if (item.superseded === CHANGED_ON_DISK) return changedOnDiskStub(item);
  return (
    `${GUARD_MARKER} Omitted the output of ${item.label} (${formatCount(item.chars)} chars): judged no longer ` +
    `needed.${item.facts ?? ""} Full output: recall(${JSON.stringify({ entryId: item.entryId })}).`
  );
}

/** Consecutive items grouped so each group stays within the character and count limits. */
function batch(items: SmallItem[], maxChars: number, maxItems: number): SmallItem[][] {
  const groups: SmallItem[][] = [];
  let current: SmallItem[] = [];
  let chars = 0;
  for (const item of items) {
    const size = item.text.length;
    if (current.length > 0 && (current.length >= maxItems || chars + size > maxChars)) {
      groups.push(current);
      current = [];
      chars = 0;
    }
    // An item larger than maxChars on its own still gets a request: its text is clipped to ITEM_TEXT_MAX.
    current.push(item);
    chars += size;
  }
  if (current.length > 0) groups.push(current);
  return groups;
}

function itemState(item: SmallItem): JsonObject {
  const out: JsonObject = { tool: item.tool, label: item.label };
  if (item.isError) out.status = "failed";
  if (item.superseded !== undefined) out.superseded = item.superseded;
  out.output = item.text;
  return out;
}

function sharedState(span: RunSpan, phase: PassPhase): JsonObject {
  const situation = phase === "run-end" ? SITUATION_RUN_END : SITUATION_MID_RUN;
  const state = workState(span, phase, { situation, historyNote: SITUATION_HISTORY, runEndNotes: true });
  return state;
}

function itemQuestion(id: string, phase: PassPhase, withHistory: boolean): BoolQuestion {
  let ask: string;
  if (phase === "run-end") {
    const next = withHistory
      ? "that a probable next step (or the ongoing work in earlier_conversation) would need"
      : "that a probable next step would need";
    ask = `Is there anything in ${id} that final_answer is based on, or ${next}?`;
  } else {
    ask = `Does the agent still need the output of ${id} to complete user_question?`;
  }
  return {
    type: "bool",
    instructions: `${ask} ${STALE_HINT}`,
    criteria: { true: "the output is still needed", false: "the output can be replaced by a placeholder" },
  };
}

/** Classifier requests for the small items, at most `maxItemsPerRequest` and `maxSegmentChars` of output each. */
export function buildSmallRequests(
  items: SmallItem[],
  span: RunSpan,
  phase: PassPhase,
  limits: { maxSegmentChars: number; maxItemsPerRequest: number },
): SmallRequest[] {
  if (items.length === 0) return [];
  const shared = sharedState(span, phase);
  const withHistory = hasHistory(span.history);
  return batch(items, limits.maxSegmentChars, Math.max(1, limits.maxItemsPerRequest)).map((group) => {
    const itemsState: JsonObject = {};
    const questions: ClassifierRequest["questions"] = {};
    group.forEach((item, i) => {
      const id = itemId(i + 1);
      itemsState[id] = itemState(item);
      questions[id] = itemQuestion(id, phase, withHistory);
    });
    return { request: { state: { ...shared, items: itemsState }, questions }, entryIds: group.map((x) => x.entryId) };
  });
}

/** One verdict per entry id, in order: keep when P(still needed) ≥ threshold; no usable answer → undefined. */
export function interpretSmall(outcome: ClassifierOutcome, entryIds: string[], threshold: number): SmallVerdict[] {
  if (outcome.status !== "stop") {
    const trace = outcome.status === "timeout" || outcome.status === "aborted" ? outcome.status : "error";
    return entryIds.map((entryId) => ({ entryId, keep: undefined, trace }));
  }
  const answers = outcome.answers ?? {};
  return entryIds.map((entryId, i) => {
    const answer = answers[itemId(i + 1)];
    const p = answer?.type === "bool" && "probability" in answer ? answer.probability : undefined;
    if (!isProbability(p)) return { entryId, keep: undefined, trace: "no-answer" };
    return { entryId, keep: p >= threshold, trace: `p${formatProbability(p)}` };
  });
}

/** The edit that swaps a small output for its stub. */
export function smallDraft(item: SmallItem): ContextEditDraft {
  return {
    type: "context_edit",
    targetId: item.entryId,
    replacement: { content: [{ type: "text", text: smallStub(item) }] },
  };
}

function keptReason(trace: string): string {
  return trace === "error" || trace === "timeout" || trace === "aborted" ? trace : "no-answer";
}

/** The record entry for a judged small output. */
export function smallResult(item: SmallItem, verdict: Pick<SmallVerdict, "keep" | "trace">): RecordResult {
  const removed = verdict.keep === false;
  return {
    kind: "small",
    entryId: item.entryId,
    tool: item.tool,
    label: item.label,
    outcome: removed ? "removed" : "kept",
    reason: removed ? "not-needed" : verdict.keep === true ? "needed" : keptReason(verdict.trace),
    beforeChars: item.chars,
    afterChars: removed ? smallStub(item).length : item.chars,
    jev: [oneLine(verdict.trace, 80)],
  };
}
