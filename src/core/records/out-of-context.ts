// What is out of the model's context on this branch now, as `/guard list` shows it: every entry whose
// latest edit is the guard's replacement (an exchange once, by its prompt), newest first, with its size
// before and after, the run that judged it and why in words. Read from the projection (what the model
// sees) and the guard's full records on the branch; nothing is kept in memory.

import { isGuardEdit, readJudgments } from "../items/judged.ts";
import { count, formatCount, oneLine } from "../shared/text.ts";
import { type PassPhase, RECORD_TYPE, type RecordResult, type SnapEntry } from "../shared/types.ts";
import { type Pins, readPins } from "./pins.ts";

/** The parts of a raw branch entry read here (records carry their full results on the raw branch). */
export interface BranchLike {
  type: string;
  id: string;
  customType?: string;
  data?: unknown;
  message?: { role?: string; stopReason?: string };
}

export type OutKind = "large" | "small" | "exchange" | "image";

export interface OutItem {
  /** The entry to name in `/guard restore` (an exchange: its prompt). */
  entryId: string;
  kind: OutKind;
  label: string;
  beforeChars: number;
  afterChars: number;
  /** The run (counted by the user's prompts on the branch) whose pass made the edit; 0 when unknown. */
  run: number;
  phase: PassPhase;
  /** Why, in words: the reason and the classifier's probabilities. */
  why: string;
  /** The other entries an omitted exchange took out. */
  omitted: string[];
}

const KIND_WORDS: Record<OutKind, string> = {
  large: "large output",
  small: "small output",
  exchange: "old exchange",
  image: "image",
};

/** `.84` or `1` (as traces write them) → 0.84. */
function prob(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const p = Number(text.startsWith(".") ? `0${text}` : text);
  return Number.isFinite(p) ? p : undefined;
}

const pct = (p: number) => `${Math.round(p * 100)}%`;

/** The reason of a record result, with the probabilities of its traces, said plainly. */
export function explainResult(r: Pick<RecordResult, "kind" | "reason" | "jev">): string {
  const traces = Array.isArray(r.jev) ? r.jev.filter((t): t is string => typeof t === "string") : [];
  const reason = typeof r.reason === "string" ? r.reason : "";
  const first = traces[0] ?? "";
  const p = prob(/(?:^|\s)p(\.\d+|1|0)\b/.exec(first)?.[1]);
  switch (r.kind) {
    case "image":
      return `an image ${reason || "that had aged"}: old images go without asking the classifier`;
    case "exchange":
      return p === undefined
        ? "judged unrelated to the current work by the classifier"
        : `judged unrelated to the current work by the classifier (${pct(1 - p)} sure)`;
    case "small":
      return p === undefined
        ? "judged not needed by the classifier"
        : `judged not needed by the classifier (${pct(1 - p)} sure)`;
    default:
      return explainLarge(reason, traces);
  }
}

/** Large outputs: pieces kept of all, and how sure the classifier was that nothing (or not all) was needed. */
function explainLarge(reason: string, traces: string[]): string {
  let kept = 0;
  let total = 0;
  let noneSure: number | undefined;
  let wholeNeeded: number | undefined;
  for (const t of traces) {
    const times = Number(/×(\d+)$/.exec(t)?.[1] ?? 1);
    const keep = /keep (\d+)\/(\d+)/.exec(t);
    if (keep) {
      kept += Number(keep[1]) * times;
      total += Number(keep[2]) * times;
    }
    const none = prob(/focus=none:(\.\d+|1|0)/.exec(t)?.[1]);
    if (none !== undefined) noneSure = Math.max(noneSure ?? 0, none);
    const kw = prob(/^kw(\.\d+|1|0)/.exec(t)?.[1]);
    if (kw !== undefined) wholeNeeded = Math.max(wholeNeeded ?? 0, kw);
  }
  const whole = wholeNeeded === undefined ? "" : `; ${pct(1 - wholeNeeded)} sure the whole was not needed`;
  if (kept === 0 && (reason.includes("none-needed") || total > 0)) {
    return noneSure === undefined
      ? "judged not needed by the classifier"
      : `judged not needed by the classifier (${pct(noneSure)} sure)`;
  }
  if (total > 0) return `the classifier kept the ${kept} of ${total} pieces it judged needed${whole}`;
  return `distilled by the classifier (${reason || "no reason recorded"})`;
}

/** Run-starting prompts: a user message that does not answer a turn still asking for tools (a steer). */
function startsRun(e: BranchLike, previous: BranchLike | undefined): boolean {
  if (e.type !== "message" || e.message?.role !== "user") return false;
  const role = previous?.message?.role;
  return !(role === "toolResult" || (role === "assistant" && previous?.message?.stopReason === "toolUse"));
}

interface Latest {
  result: Partial<RecordResult>;
  run: number;
  phase: PassPhase;
  order: number;
}

/** The latest full result per entry in the guard's records on the raw branch, with its run and order. */
function latestResults(branch: readonly BranchLike[]): Map<string, Latest> {
  const out = new Map<string, Latest>();
  let run = 0;
  let order = 0;
  let previous: BranchLike | undefined;
  const runOf = new Map<string, number>();
  for (const e of branch) {
    if (e.type === "message") {
      if (startsRun(e, previous)) run++;
      if (typeof e.id === "string") runOf.set(e.id, run);
      previous = e;
      continue;
    }
    if (e.type !== "custom" || e.customType !== RECORD_TYPE || typeof e.data !== "object" || e.data === null) continue;
    const data = e.data as { phase?: unknown; results?: unknown };
    if (!Array.isArray(data.results)) continue;
    const phase = data.phase === "mid-run" ? "mid-run" : "run-end";
    const results = (data.results as unknown[]).filter(
      (r): r is Partial<RecordResult> => typeof r === "object" && r !== null,
    );
    // A pass handed over lands (and is recorded) after the next prompt: the run it judged is that of the
    // newest item it judged, not the one its record falls in.
    let judged = 0;
    for (const r of results) judged = Math.max(judged, runOf.get(r.entryId ?? "") ?? 0);
    for (const result of results) {
      if (typeof result.entryId === "string")
        out.set(result.entryId, { result, run: judged || run, phase, order: order++ });
    }
  }
  return out;
}

const num = (v: unknown) => (typeof v === "number" && Number.isFinite(v) ? v : 0);

/**
 * What the guard keeps out of context now, newest first. `entries` is the snapshot of Pi's projection
 * (what the model sees); `branch` the raw branch, whose records carry labels and traces. Restored
 * entries are back in context and never listed.
 */
export function outOfContext(entries: readonly SnapEntry[], branch: readonly BranchLike[]): OutItem[] {
  const judged = readJudgments(entries);
  if (judged.edited.size === 0) return [];
  const pins = readPins(entries);
  const latest = latestResults(branch);
  const items: Array<OutItem & { order: number }> = [];
  for (const e of entries) {
    if (pins.restored.has(e.id) || pins.notes.has(e.id) || !isGuardEdit(e, judged)) continue;
    const found = latest.get(e.id);
    const r = found?.result ?? {};
    const kind: OutKind =
      r.kind === "small" || r.kind === "exchange" || r.kind === "image"
        ? r.kind
        : e.role === "user"
          ? "exchange"
          : "large";
    items.push({
      entryId: e.id,
      kind,
      label: oneLine(typeof r.label === "string" ? r.label : (e.toolName ?? e.role ?? e.type), 60),
      beforeChars: num(r.beforeChars) || (e.rawText ?? "").length,
      afterChars: num(r.afterChars) || e.text.length,
      run: found?.run ?? 0,
      phase: found?.phase ?? "run-end",
      why: explainResult({ kind, reason: r.reason ?? "", jev: Array.isArray(r.jev) ? r.jev : [] }),
      omitted: Array.isArray(r.omitted) ? r.omitted.filter((id): id is string => typeof id === "string") : [],
      order: found?.order ?? -1,
    });
  }
  items.sort((a, b) => b.order - a.order);
  return items.map(({ order: _order, ...item }) => item);
}

/** The item that stands for an entry id: its own, or the exchange that omitted it. */
export function itemFor(items: readonly OutItem[], id: string): OutItem | undefined {
  return items.find((i) => i.entryId === id) ?? items.find((i) => i.omitted.includes(id));
}

/** `run 3, at its end` / `run 3, mid-run checkpoint`. */
export function itemWhen(item: OutItem): string {
  if (item.run === 0) return item.phase === "mid-run" ? "mid-run checkpoint" : "run end";
  return `run ${item.run}, ${item.phase === "mid-run" ? "mid-run checkpoint" : "at its end"}`;
}

/** `36.1k → 1.2k chars`. */
export function itemSize(item: OutItem): string {
  return `${formatCount(item.beforeChars)} → ${formatCount(item.afterChars)} chars`;
}

/** `large output · bash \`rg foo\``. */
export function itemWhat(item: OutItem): string {
  return `${KIND_WORDS[item.kind]} · ${item.label}`;
}

/** One line for a list or a picker: kind, label, size before → after, and the run. */
export function itemHeadline(item: OutItem): string {
  return `${itemWhat(item)} · ${itemSize(item)} · ${itemWhen(item)}`;
}

/** `📌 ` before a pinned item (kept out as it is, never judged again), `↺ ` before one being restored. */
export function pinMark(item: OutItem, pins: Pins): string {
  if (pins.restored.has(item.entryId)) return "↺ ";
  return pins.pinned.has(item.entryId) ? "📌 " : "";
}

/** The text `/guard list` shows outside the TUI. */
export function formatOutList(items: readonly OutItem[], pins: Pins): string {
  const lines: string[] = [];
  if (items.length === 0) lines.push("context-guard: nothing is out of context on this branch");
  else {
    lines.push(`context-guard: ${count(items.length, "item")} out of context on this branch, newest first`);
    for (const item of items) {
      lines.push(`  ${item.entryId}  ${pinMark(item, pins)}${itemHeadline(item)}`);
      lines.push(`      ${item.why}`);
    }
    lines.push("  /guard restore <id> puts one back (and pins it); /guard pin <id> keeps an entry from being judged");
  }
  const restored = [...pins.restoredItems];
  const pinnedOnly = [...pins.pinned].filter((id) => !pins.restored.has(id) && !pins.notes.has(id));
  if (restored.length > 0 || pinnedOnly.length > 0) {
    const ids = (list: string[]) => (list.length ? ` (${list.join(", ")})` : "");
    lines.push(
      `restored: ${restored.length}${ids(restored)} · pinned: ${pinnedOnly.length}${ids(pinnedOnly)}; never judged again`,
    );
  }
  return lines.join("\n");
}
