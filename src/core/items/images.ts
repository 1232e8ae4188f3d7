// Images in tool results stop earning their place a few turns after the model looked at them: what it
// concluded from them is in its own later text. This module finds such results anywhere on the branch
// and builds the text-only replacement that drops the images but keeps the result's text.
// Two linear passes: one to index tool calls, one backwards to count the assistant turns that follow.

import { toolLabel } from "../distill/run.ts";
import { type ImageSize, imageSize, imageTokens, visibleChars } from "../shared/size.ts";
import { formatCount } from "../shared/text.ts";
import {
  type ContextEditDraft,
  GUARD_MARKER,
  type RecordResult,
  type SnapEntry,
  type SnapToolCall,
} from "../shared/types.ts";

/** Image sizes named in one stub; the rest are counted. */
const MAX_LISTED_SIZES = 5;

/** A tool result whose images are old enough to drop. */
export interface ImageItem {
  entryId: string;
  tool: string;
  label: string;
  /** Model-visible image blocks of the result. */
  images: number;
  /** Pixel size per image, undefined where the header could not be read. */
  sizes: Array<ImageSize | undefined>;
  /** Visible assistant messages after the result. */
  turnsOld: number;
  /** Visible size now (text plus images) and after the replacement, in characters. */
  beforeChars: number;
  afterChars: number;
  /** The result's own model-visible text, kept after the stub. */
  text: string;
  /** True when the result comes before the current run's prompt. */
  beforePrompt: boolean;
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

function sizeText(size: ImageSize | undefined): string {
  return size ? `${size.width}×${size.height}` : "size unknown";
}

function sizeList(sizes: Array<ImageSize | undefined>): string {
  const shown = sizes.slice(0, MAX_LISTED_SIZES).map(sizeText).join(", ");
  const rest = sizes.length - MAX_LISTED_SIZES;
  return rest > 0 ? `${shown} and ${rest} more` : shown;
}

/** Estimated tokens of the item's images (unknown sizes take the fallback). */
function itemImageTokens(item: Pick<ImageItem, "images" | "sizes">): number {
  let tokens = 0;
  for (let i = 0; i < item.images; i++) tokens += imageTokens(item.sizes[i]);
  return tokens;
}

/** The line that stands where the images were. */
export function imageStub(item: Pick<ImageItem, "entryId" | "images" | "sizes" | "turnsOld">): string {
  const what = plural(item.images, "image");
  const tokens = formatCount(itemImageTokens(item));
  const recall = `recall(${JSON.stringify({ entryId: item.entryId })})`;
  return (
    `${GUARD_MARKER} Removed ${what} from this output (${sizeList(item.sizes)}; ~${tokens} tokens), ` +
    `${plural(item.turnsOld, "turn")} old. ${recall} shows it again.`
  );
}

/** Replacement text blocks: the stub, then the result's text when it has any. */
function replacementBlocks(item: ImageItem): Array<{ type: "text"; text: string }> {
  const blocks = [{ type: "text" as const, text: imageStub(item) }];
  if (item.text !== "") blocks.push({ type: "text", text: item.text });
  return blocks;
}

/** Characters the replacement shows, measured as the snapshot joins text blocks. */
function replacementChars(item: ImageItem): number {
  const stub = imageStub(item).length;
  return item.text === "" ? stub : stub + 1 + item.text.length;
}

export function isToolResultWithImages(e: SnapEntry): boolean {
  if (!e.visible || e.role !== "toolResult" || e.images <= 0) return false;
  // An edited result is ours (its images are gone already) or someone else's: dropping its images would
  // stack on an edit that recall cannot give back. Unedited text that starts with our marker is the
  // tool's own and says nothing about who changed what.
  return e.edited !== true;
}

/** Tool calls by id, over the whole branch. */
function indexCalls(entries: SnapEntry[]): Map<string, SnapToolCall> {
  const calls = new Map<string, SnapToolCall>();
  for (const e of entries) {
    if (e.role !== "assistant") continue;
    for (const call of e.toolCalls ?? []) calls.set(call.id, call);
  }
  return calls;
}

/**
 * Tool results with images that at least `imageKeepTurns` visible assistant messages follow, in branch
 * order. `promptIndex` is the index of the current run's prompt (-1 when there is none): results before
 * it are marked `beforePrompt`.
 */
export function collectImages(entries: SnapEntry[], imageKeepTurns: number, promptIndex = -1): ImageItem[] {
  const calls = indexCalls(entries);
  const found: ImageItem[] = [];
  let turns = 0;
  for (let i = entries.length - 1; i >= 0; i--) {
    const e = entries[i];
    if (!e) continue;
    if (e.visible && e.role === "assistant") {
      turns++;
      continue;
    }
    if (turns < imageKeepTurns || !isToolResultWithImages(e)) continue;
    found.push(imageItem(e, calls, turns, i < promptIndex));
  }
  return found.reverse();
}

/** The item for a tool result with images that `turns` visible assistant messages follow. */
export function imageItem(
  e: SnapEntry,
  calls: ReadonlyMap<string, SnapToolCall>,
  turns: number,
  beforePrompt: boolean,
): ImageItem {
  const call = e.toolCallId === undefined ? undefined : calls.get(e.toolCallId);
  const tool = e.toolName ?? call?.name ?? "tool";
  const sizes: Array<ImageSize | undefined> = [];
  for (let k = 0; k < e.images; k++) sizes.push(imageSize(e.imageHeads?.[k]));
  const item: ImageItem = {
    entryId: e.id,
    tool,
    label: toolLabel(tool, call?.args ?? {}),
    images: e.images,
    sizes,
    turnsOld: turns,
    beforeChars: visibleChars(e),
    afterChars: 0,
    text: e.text,
    beforePrompt,
  };
  item.afterChars = replacementChars(item);
  return item;
}

/** The context_edit that swaps the result's content for the stub and its text. */
export function imageDraft(item: ImageItem): ContextEditDraft {
  return { type: "context_edit", targetId: item.entryId, replacement: { content: replacementBlocks(item) } };
}

/** The record line for a removal. */
export function imageResult(item: ImageItem): RecordResult {
  return {
    kind: "image",
    entryId: item.entryId,
    tool: item.tool,
    label: item.label,
    outcome: "removed",
    reason: `${plural(item.turnsOld, "turn")} old`,
    beforeChars: item.beforeChars,
    afterChars: item.afterChars,
    jev: [],
  };
}
