// Rules around the classifier: items a pass keeps whatever any classifier says, because the work visibly
// still needs them at this boundary. The classifier sees one item against a summary of the run; these
// rules see the whole branch (what the run edits, what it follows, whether it goes on, which names it
// reuses). Each rule is a reason of its own in the record (`keep:<rule>`), so what it costs in saving
// shows in `/guard list` and in the replay.

import { isUserMessage, promptText } from "../distill/run.ts";
import { isWeak, proxyTokens, samePath } from "../replay/proxy-tokens.ts";
import { basename } from "../shared/tokens.ts";
import type { PassPhase, RunSpan, SnapEntry, SnapToolCall } from "../shared/types.ts";
import { KEEP_RULES, type KeepRule } from "./keep-rule-names.ts";
import { callPath } from "./superseded.ts";

export { DEFAULT_KEEP_RULES, KEEP_RULES, type KeepRule } from "./keep-rule-names.ts";

/** The record reason of a result a rule kept. */
export function keepReason(rule: KeepRule): string {
  return `keep:${rule}`;
}

/** An item the pass may remove: a tool output, or an old exchange (its prompt and every entry after it). */
export interface RuleItem {
  /** The output's entry, or the exchange's prompt. */
  entryId: string;
  /** The exchange's other entries; absent for an output. */
  entryIds?: readonly string[];
}

/** Tuned on the labelled set's tuning half (docs/replay.md, "Rules that keep what the work needs"). */
export interface KeepRuleSettings {
  /** Distinct strong names an old exchange must share with the current run. */
  sharedNames: number;
  /** editing: a file the answer names when it proposes next steps counts as about to be edited. */
  namedNext: boolean;
  /** editing: only an edit after the read counts (else any edit of the run). */
  editAfterRead: boolean;
  /**
   * editing at run end, when the run is over unless its answer proposes next steps: `always` keeps reads
   * of edited files anyway, `continues` only when the work goes on.
   */
  editingAtRunEnd: "always" | "continues";
  /** instructions: an old exchange that read one is kept whole (else only outputs are). */
  instructionsInExchanges: boolean;
  /** instructions: a document (.md, .txt) that a prompt names counts, whatever its name. */
  docsNamedInPrompts: boolean;
}

export const DEFAULT_KEEP_RULE_SETTINGS: KeepRuleSettings = {
  sharedNames: 3,
  namedNext: true,
  editAfterRead: false,
  editingAtRunEnd: "always",
  instructionsInExchanges: false,
  docsNamedInPrompts: true,
};

const EDIT_TOOLS = new Set(["edit", "write", "multiedit", "apply_patch", "str_replace"]);

// Files whose reading the rest of the work follows: skills, agent instructions, task lists, plans, specs.
const INSTRUCTION_NAME =
  /^(?:skill|agents?|claude|gemini|conventions|contributing|tasks?|todos?|plan|spec|requirements|checklist|roadmap)(?:[-_.][\w.-]*)?\.(?:md|mdx|txt)$/i;
const INSTRUCTION_DIR = /(?:^|\/)(?:skills|specs|tasks|plans)\//i;

// An answer that hands over what comes next rather than closing the work.
const NEXT_STEPS =
  /\b(?:next steps?|next,? (?:i|we)(?:'ll| will)|shall i|should i (?:proceed|continue|go ahead|start|implement|apply)|want me to|would you like me to|ready to (?:proceed|implement|start|continue)|to proceed|remaining (?:steps|tasks|work|items)|i(?:'ll| will) (?:now|next|then) |still (?:need|to do|left))/i;

// A prompt that only says to go on with what the last answer proposed.
const CONTINUE_PROMPT =
  /^\W*(?:(?:ok(?:ay)?|yes|yep|sure|great|good|perfect|thanks?|lgtm)\W+)*(?:proceed|continue|go ahead|go on|carry on|keep going|do it|do that|resume|next|implement (?:it|that|them|this)|yes|ok(?:ay)?|lgtm)\b/i;
const CONTINUE_MAX_CHARS = 200;

export function proposesNextSteps(answer: string): boolean {
  return NEXT_STEPS.test(answer);
}

export function saysContinue(prompt: string): boolean {
  return prompt.length <= CONTINUE_MAX_CHARS && CONTINUE_PROMPT.test(prompt.trim());
}

export function isInstructionPath(path: string): boolean {
  return INSTRUCTION_NAME.test(basename(path)) || INSTRUCTION_DIR.test(path);
}

function pathOfCall(call: Pick<SnapToolCall, "name" | "args"> | undefined): string | undefined {
  return call ? callPath(call.args ?? {}) : undefined;
}

function strongNames(text: string): Set<string> {
  const out = new Set<string>();
  for (const [token, kind] of proxyTokens(text)) if (!isWeak(token, kind)) out.add(token);
  return out;
}

function mentionsPath(text: string, path: string): boolean {
  const name = basename(path);
  return (
    name.length > 0 && (text.includes(path) || new RegExp(`(?<![\\w.-])${escapeRegExp(name)}(?![\\w-])`).test(text))
  );
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** What the rules read off the branch once per pass. */
interface RunFacts {
  calls: Map<string, SnapToolCall>;
  /** Files the run edits or writes, with where. */
  edited: Array<{ path: string; at: number }>;
  /** The answer names next steps: the work goes on. */
  continues: boolean;
  /** The run's prompt only says to go on: the previous run's work goes on. */
  continuesPrevious: boolean;
  /** Where the previous run starts (for continuesPrevious). */
  previousStart: number;
  /** Text of the session's prompts so far and the run's own assistant text. */
  prompts: string;
  talk: string;
  /** Strong names the run uses: its prompt, its assistant text and its calls' arguments. */
  runNames: Set<string>;
}

function runFacts(entries: readonly SnapEntry[], span: RunSpan): RunFacts {
  const calls = new Map<string, SnapToolCall>();
  const prompts: string[] = [];
  let previousStart = -1;
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i] as SnapEntry;
    for (const c of e.toolCalls ?? []) calls.set(c.id, c);
    if (isUserMessage(e)) {
      prompts.push(promptText(e));
      if (i < span.startIndex) previousStart = i;
    }
  }
  const edited: Array<{ path: string; at: number }> = [];
  const callText: string[] = [];
  for (let i = span.startIndex + 1; i < entries.length; i++) {
    for (const c of entries[i]?.toolCalls ?? []) {
      callText.push(JSON.stringify(c.args ?? {}));
      const path = pathOfCall(c);
      if (path !== undefined && EDIT_TOOLS.has(c.name)) edited.push({ path, at: i });
    }
  }
  const talk = `${span.notes}\n${span.answer}`;
  return {
    calls,
    edited,
    continues: proposesNextSteps(span.answer),
    continuesPrevious: saysContinue(promptText(entries[span.startIndex] as SnapEntry)),
    previousStart,
    prompts: prompts.join("\n"),
    talk,
    runNames: strongNames(`${span.question}\n${talk}\n${callText.join("\n")}`),
  };
}

/** One item as the rules see it. */
interface Seen {
  /** Positions of its entries: one for an output, the prompt first for an exchange. */
  at: number[];
  exchange: boolean;
  /** An output's call. */
  call?: SnapToolCall;
}

interface RuleInput {
  phase: PassPhase;
  entries: readonly SnapEntry[];
  span: RunSpan;
  facts: RunFacts;
  settings: KeepRuleSettings;
}

function callsOf(input: RuleInput, item: Seen): SnapToolCall[] {
  if (!item.exchange) return item.call ? [item.call] : [];
  return item.at.flatMap((i) => input.entries[i]?.toolCalls ?? []);
}

const RULES: Record<KeepRule, (input: RuleInput, item: Seen) => boolean> = {
  editing(input, item) {
    const path = pathOfCall(item.call);
    if (item.exchange || item.call?.name !== "read" || path === undefined) return false;
    if (input.phase === "run-end" && input.settings.editingAtRunEnd === "continues" && !input.facts.continues)
      return false;
    const from = input.settings.editAfterRead ? (item.at[0] as number) : -1;
    if (input.facts.edited.some((e) => e.at > from && samePath(e.path, path))) return true;
    return input.settings.namedNext && input.facts.continues && mentionsPath(input.span.answer, path);
  },
  instructions(input, item) {
    const { settings } = input;
    if (item.exchange && !settings.instructionsInExchanges) return false;
    return callsOf(input, item).some((call) => {
      const path = pathOfCall(call);
      if (path === undefined) return false;
      if (isInstructionPath(path)) return true;
      return settings.docsNamedInPrompts && DOC_FILE.test(path) && mentionsPath(input.facts.prompts, path);
    });
  },
  continues(input, item) {
    const first = item.at[0] as number;
    const { facts, span } = input;
    if (item.exchange) return facts.continuesPrevious && first === facts.previousStart;
    if (first > span.startIndex) return facts.continues;
    return facts.continuesPrevious && first > facts.previousStart;
  },
  "shared-names"(input, item) {
    if (!item.exchange) return false;
    const texts: string[] = [];
    for (const i of item.at) {
      const e = input.entries[i] as SnapEntry;
      texts.push(e.text);
      for (const c of e.toolCalls ?? []) texts.push(JSON.stringify(c.args ?? {}));
    }
    let shared = 0;
    for (const name of strongNames(texts.join("\n"))) {
      if (input.facts.runNames.has(name) && ++shared >= input.settings.sharedNames) return true;
    }
    return false;
  },
};

const DOC_FILE = /\.(?:md|mdx|txt)$/i;

/**
 * The items that a rule keeps, by entry id (an exchange by its prompt's id), each with the first of
 * `rules` (in KEEP_RULES order) that holds. `span` is the pass's run.
 */
export function ruleKeeps(
  entries: readonly SnapEntry[],
  span: RunSpan,
  items: readonly RuleItem[],
  rules: readonly KeepRule[],
  phase: PassPhase,
  settings: KeepRuleSettings = DEFAULT_KEEP_RULE_SETTINGS,
): Map<string, KeepRule> {
  const out = new Map<string, KeepRule>();
  const on = KEEP_RULES.filter((r) => rules.includes(r));
  if (on.length === 0 || items.length === 0) return out;
  const input: RuleInput = { phase, entries, span, facts: runFacts(entries, span), settings };
  const index = new Map<string, number>();
  for (const [i, e] of entries.entries()) index.set(e.id, i);
  for (const item of items) {
    const at = index.get(item.entryId);
    if (at === undefined) continue;
    const e = entries[at] as SnapEntry;
    const seen: Seen =
      item.entryIds === undefined
        ? {
            at: [at],
            exchange: false,
            call: e.toolCallId === undefined ? undefined : input.facts.calls.get(e.toolCallId),
          }
        : { at: [at, ...item.entryIds.flatMap((id) => index.get(id) ?? [])], exchange: true };
    const rule = on.find((r) => RULES[r](input, seen));
    if (rule) out.set(item.entryId, rule);
  }
  return out;
}
