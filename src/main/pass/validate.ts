// Pi drops every extension's drafts when one is invalid, so each of ours is checked against the
// context it will be applied to before it is returned.
import { imageChars } from "../../core/shared/size.ts";
import type { ContextEditDraft } from "../../core/shared/types.ts";
import { drain, PACE_STRIDE, paced, type Steps } from "../platform/pace.ts";
import { type ProjectedLike, readContent } from "./snapshot.ts";

export interface Validation {
  valid: ContextEditDraft[];
  dropped: Array<{ draft: ContextEditDraft; why: string }>;
}

type RawMessage = { role: string; content?: unknown };

function rawOf(entry: ProjectedLike["sourceEntry"]): { role?: string; content?: unknown } | undefined {
  if (entry.type === "message") return entry.message as { role?: string; content?: unknown };
  if (entry.type === "custom_message") return { role: "custom", content: entry.content };
  return undefined;
}

/** Context size of a content: text plus images by the size model. */
export function contentSize(content: unknown): number {
  const c = readContent(content);
  return c.text.length + c.imageHeads.reduce((n, head) => n + imageChars(head), 0);
}

/** Where an entry id sits in the context: the hint if it is right, else from an index built once. */
function locator(context: readonly ProjectedLike[], hint?: (id: string) => number | undefined) {
  let index: Map<string, number> | undefined;
  return (id: string): number | undefined => {
    const at = hint?.(id);
    if (at !== undefined && context[at]?.sourceEntry.id === id) return at;
    if (!index) {
      index = new Map();
      for (let i = 0; i < context.length; i++) index.set((context[i] as ProjectedLike).sourceEntry.id, i);
    }
    return index.get(id);
  };
}

const replacementSize = (draft: ContextEditDraft) =>
  draft.replacement === null ? 0 : draft.replacement.content.reduce((n, block) => n + block.text.length, 0);

/**
 * Checks every draft: the target is a message on this context, assistant content is never replaced,
 * no target is edited twice, and each edit makes the context smaller. A prompt's stub counts together
 * with the entries of its exchange that the same set omits.
 */
export function validateEdits(
  drafts: readonly ContextEditDraft[],
  context: readonly ProjectedLike[],
  positionOf?: (id: string) => number | undefined,
): Validation {
  return drain(validationSteps(drafts, context, positionOf));
}

/** The same, handing the event loop back between slices (thousands of drafts on a cold session). */
export function validateEditsPaced(
  drafts: readonly ContextEditDraft[],
  context: readonly ProjectedLike[],
  positionOf?: (id: string) => number | undefined,
  reject?: Reject,
): Promise<Validation> {
  return paced(validationSteps(drafts, context, positionOf, reject));
}

/** A caller's own reason to drop a draft whose target is on the context (checked before the rules). */
export type Reject = (draft: ContextEditDraft, target: ProjectedLike) => string | undefined;

/**
 * `positionOf` is a hint for where an id sits (the snapshot builder's index); a wrong or missing hint
 * falls back to indexing the whole context.
 */
function* validationSteps(
  drafts: readonly ContextEditDraft[],
  context: readonly ProjectedLike[],
  positionOf?: (id: string) => number | undefined,
  reject?: Reject,
): Steps<Validation> {
  const locate = locator(context, positionOf);
  const omitted = new Set(drafts.filter((d) => d.replacement === null).map((d) => d.targetId));
  const valid: ContextEditDraft[] = [];
  const dropped: Validation["dropped"] = [];
  const seen = new Set<string>();
  const breach = (draft: ContextEditDraft, raw: RawMessage, at: number): string | undefined => {
    if (seen.has(draft.targetId)) return "second edit of the same target";
    if (draft.replacement === null) return undefined;
    // Replacing assistant content would drop its thinking, signatures and tool calls.
    if (raw.role !== "user" && raw.role !== "toolResult" && raw.role !== "custom") {
      return `the guard never replaces ${raw.role} content`;
    }
    let before = contentSize(raw.content);
    if (raw.role === "user") {
      for (const i of exchangeOmissions(context, at, omitted)) {
        before += contentSize(rawOf((context[i] as ProjectedLike).sourceEntry)?.content);
      }
    }
    return replacementSize(draft) >= before ? "replacement is not shorter than the original" : undefined;
  };
  let step = 0;
  for (const draft of drafts) {
    if ((++step & (PACE_STRIDE - 1)) === 0) yield;
    const at = locate(draft.targetId);
    const target = at === undefined ? undefined : context[at];
    const raw = target ? rawOf(target.sourceEntry) : undefined;
    let why: string | undefined;
    if (!target || at === undefined) why = "target is not in the context";
    else if (!raw?.role) why = "target is not a message";
    else why = reject?.(draft, target) ?? breach(draft, raw as RawMessage, at);
    if (why) dropped.push({ draft, why });
    else {
      valid.push(draft);
      seen.add(draft.targetId);
    }
  }
  // An exchange goes as a whole or not at all: when its prompt's stub is dropped, the omissions behind
  // it go too (else the model would lose the exchange without the note that says how to recall it).
  const orphaned = new Set<string>();
  for (const { draft } of dropped) {
    const at = locate(draft.targetId);
    if (draft.replacement === null || at === undefined) continue;
    if (rawOf((context[at] as ProjectedLike).sourceEntry)?.role !== "user") continue;
    for (const i of exchangeOmissions(context, at, omitted)) orphaned.add((context[i] as ProjectedLike).sourceEntry.id);
  }
  if (orphaned.size === 0) return { valid, dropped };
  for (const draft of valid) {
    if (draft.replacement === null && orphaned.has(draft.targetId)) {
      dropped.push({ draft, why: "the stub of its exchange was rejected" });
    }
  }
  return { valid: valid.filter((d) => !(d.replacement === null && orphaned.has(d.targetId))), dropped };
}

/**
 * Indices of the entries after the prompt at `at` that this draft set omits, up to the next prompt that
 * stays: a steering message omitted with the exchange is part of it.
 */
function exchangeOmissions(context: readonly ProjectedLike[], at: number, omitted: Set<string>): number[] {
  const out: number[] = [];
  for (let i = at + 1; i < context.length; i++) {
    const id = (context[i] as ProjectedLike).sourceEntry.id;
    const next = rawOf((context[i] as ProjectedLike).sourceEntry);
    if (next?.role === "user" && !omitted.has(id)) break;
    if (omitted.has(id)) out.push(i);
  }
  return out;
}
