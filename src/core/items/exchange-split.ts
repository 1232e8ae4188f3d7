// The session cut into exchanges (a prompt and everything up to the next), for exchanges.ts, entry by
// entry: the pass worker keeps one ExchangeSplit per session (core/distill/plan-index.ts) and extends it
// with what each boundary appended, so a plan does not walk the whole session again. Which exchanges may
// be judged is decided in exchanges.ts; this file only says what each one holds.

import { entryChars } from "../cache/break-even.ts";
import { isUserMessage, toolLabel } from "../distill/run.ts";
import type { SnapEntry } from "../shared/types.ts";
import { type GuardJudgments, isGuardEdit } from "./judged.ts";

export interface ExchangeDraft {
  ordinal: number;
  prompt: SnapEntry;
  index: number;
  entryIds: string[];
  /** Where each of entryIds is in the snapshot. */
  at: number[];
  chars: number;
  lastAssistant: string;
  lastAssistantEntry: SnapEntry | undefined;
  toolLabels: string[];
  /** The prompt and entries that are hidden or edited: foreignEdit reads them against the records. */
  touched: SnapEntry[];
  /** A tool call and its result are not both inside the exchange (before the run's prompt). */
  split: boolean;
}

/** Entries a context_edit can change that belong to an exchange: messages other than system/shell, custom messages. */
export function isEditable(e: SnapEntry): boolean {
  if (e.type === "custom_message") return true;
  return e.type === "message" && (e.role === "user" || e.role === "assistant" || e.role === "toolResult");
}

function isSummary(e: SnapEntry): boolean {
  return (
    e.role === "compactionSummary" ||
    e.role === "branchSummary" ||
    e.type === "compaction" ||
    e.type === "branch_summary"
  );
}

/** An assistant message that asked for tools and was not cut off (so its run went on). */
export function asksForTools(e: SnapEntry): boolean {
  const ended = e.stopReason === "error" || e.stopReason === "aborted";
  return (e.toolCalls?.length ?? 0) > 0 && !ended;
}

const touches = (e: SnapEntry) => !e.visible || e.edited === true;

/**
 * Whether an entry of the exchange shows something other than its raw content that is not ours. Ours is
 * what the guard's records say it replaced (judged.ts), not whatever starts with the marker: another
 * extension's edit could.
 */
export function foreignEdit(d: ExchangeDraft, judged: GuardJudgments): boolean {
  return d.touched.some((e) => !e.visible || (e.edited === true && !isGuardEdit(e, judged)));
}

/** What splitting reads of an entry: an edit that changes none of it keeps every exchange's bounds. */
function sameShape(a: SnapEntry, b: SnapEntry): boolean {
  if (a.id !== b.id || a.type !== b.type || a.role !== b.role || a.visible !== b.visible) return false;
  if (a.toolCallId !== b.toolCallId || a.stopReason !== b.stopReason) return false;
  const x = a.toolCalls ?? [];
  const y = b.toolCalls ?? [];
  return x.length === y.length && x.every((c, i) => c.id === y[i]?.id);
}

/**
 * The exchanges before `end` (the run's prompt), eligible or not. Every entry is walked, those after `end`
 * too, so that a tool call and its result are matched wherever they are: an exchange holding only one of
 * the two is split (a result answers the nearest earlier call with its id, so reused ids are fine). The
 * entries from `end` on are kept apart (`#tail`), since a later run start folds them into exchanges.
 */
export class ExchangeSplit {
  readonly drafts: ExchangeDraft[] = [];
  /** Entries folded into exchanges: those before this position. */
  #end = 0;
  /** Exchange ordinal of the latest call with each id; -1 outside any exchange. */
  readonly #callOwner = new Map<string, number>();
  /** The draft each folded position belongs to, -1 for none. */
  readonly #ownerAt: number[] = [];
  #current: ExchangeDraft | undefined;
  /**
   * The nearest earlier visible message that is not a custom notice, to tell steering from a new prompt
   * the way run.ts isSteering does, without walking back for every user message.
   */
  #previous: SnapEntry | undefined;
  /** The entries from #end on: their calls (all outside any exchange), and the exchanges they split. */
  #tail = { done: 0, owner: new Map<string, number>(), split: new Set<number>() };
  /** The exchange made of each draft, until the draft changes. */
  readonly made = new WeakMap<ExchangeDraft, unknown>();

  /** Split across the whole snapshot, including a result after `end` whose call is in an exchange. */
  isSplit(d: ExchangeDraft): boolean {
    return d.split || this.#tail.split.has(d.ordinal);
  }

  /** Folds the entries up to `end` into exchanges and the rest into the tail. False: start over. */
  extend(entries: readonly SnapEntry[], end: number): boolean {
    if (end < this.#end) return false;
    if (end > this.#end) {
      for (let i = this.#end; i < end; i++) this.#fold(entries[i] as SnapEntry, i);
      this.#end = end;
      this.#tail = { done: end, owner: new Map(), split: new Set() };
    }
    const tail = this.#tail;
    for (; tail.done < entries.length; tail.done++) {
      const e = entries[tail.done] as SnapEntry;
      for (const call of e.toolCalls ?? []) tail.owner.set(call.id, -1);
      if (e.role !== "toolResult" || e.toolCallId === undefined) continue;
      const callAt = tail.owner.get(e.toolCallId) ?? this.#callOwner.get(e.toolCallId);
      if (callAt !== undefined && callAt >= 0) tail.split.add(callAt);
    }
    return true;
  }

  /**
   * An entry edited in place: its exchange is counted again. False when the edit changes what splitting
   * reads (the split starts over).
   */
  replace(entries: readonly SnapEntry[], at: number, was: SnapEntry, now: SnapEntry): boolean {
    if (!sameShape(was, now)) return false;
    if (at >= this.#end) return true;
    const d = this.drafts[this.#ownerAt[at] ?? -1];
    if (!d) return true;
    d.prompt = entries[d.index] as SnapEntry;
    d.chars = entryChars(d.prompt);
    d.touched = touches(d.prompt) ? [d.prompt] : [];
    d.lastAssistant = "";
    d.lastAssistantEntry = undefined;
    d.toolLabels = [];
    for (const i of d.at) this.#count(d, entries[i] as SnapEntry);
    this.made.delete(d);
    return true;
  }

  #fold(e: SnapEntry, i: number): void {
    const previous = this.#previous;
    const steering =
      previous !== undefined &&
      (previous.role === "toolResult" || (previous.role === "assistant" && asksForTools(previous)));
    if (e.visible && e.role !== undefined && e.role !== "custom") this.#previous = e;
    this.#ownerAt[i] = -1;
    if (isSummary(e)) {
      this.#current = undefined;
    } else if (isUserMessage(e) && !steering) {
      const d: ExchangeDraft = {
        ordinal: this.drafts.length,
        prompt: e,
        index: i,
        entryIds: [],
        at: [],
        chars: entryChars(e),
        lastAssistant: "",
        lastAssistantEntry: undefined,
        toolLabels: [],
        touched: touches(e) ? [e] : [],
        split: false,
      };
      this.#current = d;
      this.drafts.push(d);
      this.#ownerAt[i] = d.ordinal;
      return;
    }
    const current = this.#current;
    const owner = current?.ordinal ?? -1;
    for (const call of e.toolCalls ?? []) this.#callOwner.set(call.id, owner);
    if (e.role === "toolResult") {
      const callAt = e.toolCallId === undefined ? undefined : this.#callOwner.get(e.toolCallId);
      if (callAt !== owner) {
        this.#markSplit(callAt);
        this.#markSplit(owner);
      }
    }
    if (current === undefined || !isEditable(e)) return;
    current.entryIds.push(e.id);
    current.at.push(i);
    this.#ownerAt[i] = current.ordinal;
    this.#count(current, e);
  }

  #count(d: ExchangeDraft, e: SnapEntry): void {
    d.chars += entryChars(e);
    if (touches(e)) d.touched.push(e);
    if (e.role === "assistant") {
      d.lastAssistantEntry = e;
      if (e.text.trim() !== "") d.lastAssistant = e.text;
      for (const call of e.toolCalls ?? []) d.toolLabels.push(toolLabel(call.name, call.args));
    }
  }

  #markSplit(ordinal: number | undefined): void {
    const d = ordinal === undefined ? undefined : this.drafts[ordinal];
    if (d) d.split = true;
  }
}
