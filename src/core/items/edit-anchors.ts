// The lines of a read that a later `edit` of the run matched (its `oldText`). The agent wrote that edit
// from those lines, so a distilled read always keeps them: dropping them would leave the edit without the
// text it replaced.

import type { Chunk, RunSpan, SnapEntry } from "../shared/types.ts";
import { callPath } from "./superseded.ts";

/** Every `oldText` of an edit call: Pi's `edits[]`, a single edit object, or the older top-level form. */
export function editOldTexts(args: Record<string, unknown>): string[] {
  const out: string[] = [];
  const add = (edit: unknown) => {
    const old = (edit as { oldText?: unknown } | null)?.oldText;
    if (typeof old === "string" && old !== "") out.push(old);
  };
  let edits = args.edits;
  if (typeof edits === "string") {
    try {
      edits = JSON.parse(edits);
    } catch {
      // swallow-ok: Edits given as text that is not JSON have no anchors to read.
      edits = undefined;
    }
  }
  if (Array.isArray(edits)) for (const e of edits) add(e);
  else if (edits && typeof edits === "object") add(edits);
  add(args);
  return out;
}

/** For each read result of the run, the `oldText`s of the run's later edits of the same file. */
export function laterEditTexts(entries: SnapEntry[], span: RunSpan): Map<string, string[]> {
  // Calls in order, then a walk back collecting each file's later oldTexts.
  const calls: Array<{ id: string; name: string; args: Record<string, unknown> }> = [];
  for (let i = span.startIndex + 1; i < entries.length; i++) {
    const e = entries[i];
    if (e?.role === "assistant") for (const c of e.toolCalls ?? []) calls.push(c);
  }
  const later = new Map<string, string[]>();
  const byCall = new Map<string, string[]>();
  for (let i = calls.length - 1; i >= 0; i--) {
    const call = calls[i]!;
    const path = callPath(call.args ?? {});
    if (path === undefined) continue;
    if (call.name === "edit") {
      const olds = editOldTexts(call.args ?? {});
      if (olds.length > 0) later.set(path, [...olds, ...(later.get(path) ?? [])]);
    } else if (call.name === "read") {
      const olds = later.get(path);
      if (olds) byCall.set(call.id, olds);
    }
  }
  const out = new Map<string, string[]>();
  if (byCall.size === 0) return out;
  for (let i = span.startIndex + 1; i < entries.length; i++) {
    const e = entries[i];
    const olds = e?.role === "toolResult" && e.toolCallId !== undefined ? byCall.get(e.toolCallId) : undefined;
    if (olds) out.set(e!.id, olds);
  }
  return out;
}

/** Numbers of the chunks that hold part of any occurrence of `texts` in `output`. */
export function anchoredChunks(
  output: string,
  chunks: readonly Pick<Chunk, "n" | "start" | "end">[],
  texts: string[],
): number[] {
  const hit = new Set<number>();
  for (const t of texts) {
    for (let at = output.indexOf(t); at !== -1; at = output.indexOf(t, at + 1)) {
      const end = at + t.length;
      for (const c of chunks) if (c.start < end && c.end > at) hit.add(c.n);
    }
  }
  return [...hit].sort((a, b) => a - b);
}
