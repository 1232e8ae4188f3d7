// Mid-run checkpoints: which older items of a running run may be judged now, and whether a batch of
// them is worth the one-time prompt-cache rewrite its edits cause. Every scan is one pass over the run.

import { isUserMessage, toolLabel } from "../distill/run.ts";
import type { ImageItem } from "../items/images.ts";
import type { GuardConfig } from "../shared/config.ts";
import type { Exchange } from "../shared/types.ts";
import { type GuardRecord, RECORD_TYPE, type RunSpan, type SnapEntry } from "../shared/types.ts";
import { type CacheModel, entryChars, rewriteFactor, type TokenPrices } from "./break-even.ts";
import { coldCache } from "./cold-cache.ts";

/** Turn numbers inside the run: the assistant message index (1-based) that made each call. */
export interface RunTurns {
  /** Assistant messages in the run so far: the current turn. */
  current: number;
  callTurn: Map<string, number>;
  /** Every call of the run in order, for "later tool calls". */
  calls: Array<{ id: string; label: string }>;
  callIndex: Map<string, number>;
}

export function runTurns(entries: readonly SnapEntry[], span: RunSpan): RunTurns {
  const out = noTurns();
  for (let i = span.startIndex + 1; i < entries.length; i++) addTurn(out, entries[i] as SnapEntry);
  return out;
}

export function noTurns(): RunTurns {
  return { current: 0, callTurn: new Map(), calls: [], callIndex: new Map() };
}

/** Counts the run's next entry into `out` (runTurns, one entry at a time). */
export function addTurn(out: RunTurns, e: SnapEntry): void {
  if (e.role !== "assistant") return;
  out.current++;
  for (const call of e.toolCalls ?? []) {
    out.callTurn.set(call.id, out.current);
    out.callIndex.set(call.id, out.calls.length);
    out.calls.push({ id: call.id, label: toolLabel(call.name, call.args) });
  }
}

/** Labels of the calls made after this one; above 30, the first and last 15 with a gap note. */
export function laterCalls(turns: RunTurns, callId: string | undefined): string[] {
  const at = callId === undefined ? undefined : turns.callIndex.get(callId);
  if (at === undefined) return [];
  const after = turns.calls.slice(at + 1).map((c) => c.label);
  if (after.length <= 30) return after;
  return [...after.slice(0, 15), `[… ${after.length - 30} more calls …]`, ...after.slice(-15)];
}

/** Reasons that mean the classifier never answered: such an output is asked again next time. */
const UNANSWERED = new Set(["timeout", "error", "aborted", "no-answer"]);

/** Tool results already judged at a checkpoint of this run (from the mid-run records on the branch). */
export function checkpointMemo(entries: readonly SnapEntry[], runStart: number): Set<string> {
  const memo = new Set<string>();
  for (let i = runStart + 1; i < entries.length; i++) addToMemo(memo, entries[i] as SnapEntry);
  return memo;
}

/** Adds what one entry of the run (a mid-run record, or nothing) settles to checkpointMemo's set. */
export function addToMemo(memo: Set<string>, e: SnapEntry): void {
  if (e.type !== "custom" || e.customType !== RECORD_TYPE || !e.data || typeof e.data !== "object") return;
  const record = e.data as Partial<GuardRecord>;
  if (record.phase !== "mid-run" || !Array.isArray(record.results)) return;
  for (const r of record.results as unknown[]) {
    // Records come back from session files: a damaged result is skipped, not trusted.
    if (typeof r !== "object" || r === null) continue;
    const { kind, entryId, reason } = r as { kind?: unknown; entryId?: unknown; reason?: unknown };
    if (kind === "exchange" || kind === "image" || typeof entryId !== "string") continue;
    const reasons = String(reason ?? "").split(",");
    if (!reasons.some((x) => UNANSWERED.has(x.trim()))) memo.add(entryId);
  }
}

/** Old enough, not judged at an earlier checkpoint, and not a recall the model just asked for. */
export function eligibleAtCheckpoint(
  item: { entryId: string; tool: string; callId?: string },
  turns: RunTurns,
  memo: Set<string>,
  minAgeTurns: number,
): boolean {
  if (item.tool === "recall" || memo.has(item.entryId)) return false;
  const turn = item.callId === undefined ? undefined : turns.callTurn.get(item.callId);
  return turn !== undefined && turns.current - turn >= minAgeTurns;
}

/** The batch a checkpoint may edit, by kind, with the characters each would take out. */
export interface CheckpointBatch {
  outputIds: string[];
  outputChars: number;
  exchanges: Exchange[];
  exchangeChars: number;
  images: ImageItem[];
  imageChars: number;
}

export type BreakEvenConfig = Pick<
  GuardConfig,
  "midRunBatchChars" | "midRunBatchCharsOpenAI" | "midRunBreakEven" | "pinAnthropicCache" | "breakEvenMargin"
>;

/** What the caller knows of the main model's prompt cache at the boundary. */
export interface CheckpointCacheView {
  family: CacheModel["family"];
  /** Entry ids of cache entries this process can still read (Anthropic), newest last. */
  trustedIds?: readonly string[];
  /** Milliseconds since the last main-model request was sent: past the TTL, the cache is cold. */
  sinceRequestMs?: number;
  /** The session uses the provider's long cache retention. */
  longRetention?: boolean;
  /** The main model's prices (Pi's registry), for the break-even factor. */
  prices?: TokenPrices;
  /**
   * The requests an edit's saving may count on. Live it is unknown and the requests so far stand in for
   * it; the replay's oracle knows it (the requests left before the session ends or compacts).
   */
  requestsAhead?: number;
}

/** Index of the last user message with text: where the Anthropic question pin sits. */
export function questionPinIndex(entries: readonly SnapEntry[]): number {
  for (let i = entries.length - 1; i >= 0; i--) {
    const e = entries[i] as SnapEntry;
    if (isUserMessage(e) && e.text.trim() !== "") return i;
  }
  return -1;
}

function charsFrom(entries: readonly SnapEntry[], from: number): number {
  let chars = 0;
  for (let i = Math.max(0, from); i < entries.length; i++) chars += entryChars(entries[i] as SnapEntry);
  return chars;
}

/** The latest trusted entry before `before` (Anthropic read point), or -1. */
function readPointBefore(
  entries: readonly SnapEntry[],
  before: number,
  trusted: readonly string[] | undefined,
): number {
  if (!trusted || trusted.length === 0) return -1;
  const ids = new Set(trusted);
  for (let i = Math.min(before, entries.length) - 1; i >= 0; i--) if (ids.has((entries[i] as SnapEntry).id)) return i;
  return -1;
}

/**
 * Characters the next request would write to cache again after edits starting at `firstEdit`:
 * OpenAI Codex rewrites everything; Anthropic rewrites after the read point it can still use (a trusted
 * cache entry, else the question pin when the edit comes after it, else everything); other providers
 * rewrite from the first edited entry on.
 */
export function rewriteAfterEdit(
  entries: readonly SnapEntry[],
  firstEdit: number,
  view: CheckpointCacheView,
  pinAnthropicCache: boolean,
): number {
  if (view.family === "openai-codex") return charsFrom(entries, 0);
  if (view.family !== "anthropic") return charsFrom(entries, firstEdit);
  if (!pinAnthropicCache) return charsFrom(entries, 0);
  const readPoint = readPointBefore(entries, firstEdit, view.trustedIds);
  const pin = questionPinIndex(entries);
  const floor = pin >= 0 && pin < firstEdit ? pin : -1;
  return charsFrom(entries, Math.max(readPoint, floor) + 1);
}

export interface TierDecision {
  run: boolean;
  tier: "all" | "without-exchanges" | "without-early-images" | "none";
  reason: string;
  /** The items the checkpoint judges. */
  batch: CheckpointBatch;
}

function firstIndex(entries: readonly SnapEntry[], ids: Set<string>): number {
  for (let i = 0; i < entries.length; i++) if (ids.has((entries[i] as SnapEntry).id)) return i;
  return -1;
}

/**
 * Batch threshold, then the break-even rule on the biggest tier that pays: everything; without old
 * exchanges; without exchanges and images from before the last user message.
 */
export function decideCheckpoint(
  entries: readonly SnapEntry[],
  batch: CheckpointBatch,
  requestsSoFar: number,
  lastUserIndex: number,
  config: BreakEvenConfig,
  view: CheckpointCacheView,
): TierDecision {
  const total = batch.outputChars + batch.exchangeChars + batch.imageChars;
  const threshold = view.family === "openai-codex" ? config.midRunBatchCharsOpenAI : config.midRunBatchChars;
  const none = (reason: string): TierDecision => ({ run: false, tier: "none", reason, batch });
  if (total === 0) return none("nothing eligible");
  // A cold cache is rewritten by the next request anyway: the batch and break-even rules have no cost to weigh.
  const cold = coldCache(entries, view);
  if (cold.cold) return { run: true, tier: "all", reason: `cold cache (${cold.reason})`, batch };
  if (total < threshold) return none(`eligible ${total} chars < batch ${threshold}`);
  const positions = new Map(entries.map((e, i) => [e.id, i]));
  const lateImages = batch.images.filter((i) => (positions.get(i.entryId) ?? -1) > lastUserIndex);
  const tiers: Array<[TierDecision["tier"], CheckpointBatch]> = [
    ["all", batch],
    ["without-exchanges", { ...batch, exchanges: [], exchangeChars: 0 }],
    [
      "without-early-images",
      {
        ...batch,
        exchanges: [],
        exchangeChars: 0,
        images: lateImages,
        imageChars: lateImages.reduce((n, i) => n + Math.max(0, i.beforeChars - i.afterChars), 0),
      },
    ],
  ];
  if (!config.midRunBreakEven) return { run: true, tier: "all", reason: "break-even off", batch };
  const factor = rewriteFactor(view.family, view.prices, config.breakEvenMargin);
  let last = "";
  for (const [tier, b] of tiers) {
    const pending = b.outputChars + b.exchangeChars + b.imageChars;
    if (pending === 0) continue;
    const ids = new Set([...b.outputIds, ...b.exchanges.map((x) => x.promptId), ...b.images.map((i) => i.entryId)]);
    const first = firstIndex(entries, ids);
    if (first < 0) continue;
    const rewrite = rewriteAfterEdit(entries, first, view, config.pinAnthropicCache);
    last = `${pending} chars × ${requestsSoFar} requests vs ${Math.round(factor * 10) / 10} × ${rewrite} rewrite`;
    if (pending * requestsSoFar >= factor * rewrite) return { run: true, tier, reason: `${last}: pays off`, batch: b };
  }
  return none(`${last || "nothing to edit"}: does not pay off`);
}
