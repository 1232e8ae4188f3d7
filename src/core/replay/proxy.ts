// The needed-later proxy: a cheap, offline stand-in for "did the guard remove something the agent
// needed?". A removed chunk or omitted item is a suspected false removal when, after the pass that
// removed it, a distinctive token of it (a path, identifier, quoted string, or long number) shows up in
// later user or assistant text (tool-call arguments included), or the same tool call is made again.
// Tokens the model could still see elsewhere after the pass do not count: naming them later proves
// nothing about the removed part. Numbers are weak evidence: one other token or two numbers are needed.

import { chunkOutput, endsInsideLine } from "../distill/chunk.ts";
import { normalizeCommand, stableJson } from "../items/superseded.ts";
import { distinctiveTokens, type TokenKind } from "../shared/tokens.ts";
import { type Chunk, GUARD_MARKER } from "../shared/types.ts";

export type RemovedKind = "chunk" | "small" | "exchange" | "image";

export interface RemovedPiece {
  /** Unique key, e.g. `a1b2c3d4#3` for chunk 3 of entry a1b2c3d4. */
  key: string;
  kind: RemovedKind;
  /** The entry whose content was removed (for an exchange: its prompt). */
  entryId: string;
  /** The pass that removed it. */
  pass: number;
  /** Position (in the replayed branch) of the run end after which it is gone. */
  after: number;
  /** The removed text. */
  text: string;
  /** Signatures (callSignature) of the calls whose output was removed. */
  calls: string[];
  /** Tokens still visible to the model after the pass (kept chunks, other messages). */
  visible: ReadonlySet<string>;
}

/** A later user or assistant message. */
export interface LaterMessage {
  /** Position in the replayed branch. */
  index: number;
  role: "user" | "assistant";
  /** Its text, with tool-call arguments for an assistant message. */
  text: string;
  /** Signatures of its tool calls. */
  calls: string[];
}

export interface Suspect {
  key: string;
  kind: RemovedKind;
  entryId: string;
  pass: number;
  /** Position of the first later message that points back at the piece. */
  at: number;
  reasons: Array<"tokens" | "same-call">;
  /** Matched tokens (at most MAX_SHOWN). */
  tokens: string[];
}

export interface ProxyRate {
  removed: number;
  suspected: number;
  /** suspected ÷ removed; 0 when nothing was removed. */
  rate: number;
}

const MAX_SHOWN = 5;

/** The same call: bash commands compare normalized, other tools by name and arguments. */
export function callSignature(name: string, args: Record<string, unknown>): string {
  const command = args.command;
  if (name === "bash" && typeof command === "string") return `bash ${normalizeCommand(command)}`;
  return `${name} ${stableJson(args)}`;
}

/** First position in the sorted list that is greater than `after`, or undefined. */
function firstAfter(positions: readonly number[] | undefined, after: number): number | undefined {
  if (!positions || positions.length === 0) return undefined;
  let lo = 0;
  let hi = positions.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((positions[mid] as number) > after) hi = mid;
    else lo = mid + 1;
  }
  return positions[lo];
}

function push(index: Map<string, number[]>, key: string, at: number): void {
  const list = index.get(key);
  if (!list) index.set(key, [at]);
  else if (list[list.length - 1] !== at) list.push(at);
}

/** Finds the suspected false removals. `later` must be in branch order. */
export function findSuspects(pieces: readonly RemovedPiece[], later: readonly LaterMessage[]): Suspect[] {
  const tokenAt = new Map<string, number[]>();
  const callAt = new Map<string, number[]>();
  for (const m of later) {
    for (const t of distinctiveTokens(m.text).keys()) push(tokenAt, t, m.index);
    for (const c of m.calls) push(callAt, c, m.index);
  }
  const out: Suspect[] = [];
  for (const piece of pieces) {
    const matched: Array<{ token: string; kind: TokenKind; at: number }> = [];
    for (const [token, kind] of distinctiveTokens(piece.text)) {
      if (piece.visible.has(token)) continue;
      const at = firstAfter(tokenAt.get(token), piece.after);
      if (at !== undefined) matched.push({ token, kind, at });
    }
    const numbers = matched.filter((m) => m.kind === "number").length;
    const byTokens = matched.length - numbers >= 1 || numbers >= 2;
    let callHit: number | undefined;
    for (const c of piece.calls) {
      const at = firstAfter(callAt.get(c), piece.after);
      if (at !== undefined && (callHit === undefined || at < callHit)) callHit = at;
    }
    if (!byTokens && callHit === undefined) continue;
    const reasons: Suspect["reasons"] = [];
    if (byTokens) reasons.push("tokens");
    if (callHit !== undefined) reasons.push("same-call");
    matched.sort((a, b) => a.at - b.at);
    const tokenHit = byTokens ? matched[0]?.at : undefined;
    const at = Math.min(tokenHit ?? Number.POSITIVE_INFINITY, callHit ?? Number.POSITIVE_INFINITY);
    out.push({
      key: piece.key,
      kind: piece.kind,
      entryId: piece.entryId,
      pass: piece.pass,
      at,
      reasons,
      tokens: byTokens ? matched.slice(0, MAX_SHOWN).map((m) => m.token) : [],
    });
  }
  return out;
}

export function proxyRate(removed: number, suspected: number): ProxyRate {
  return { removed, suspected, rate: removed > 0 ? suspected / removed : 0 };
}

/** Every distinctive token of the texts: what the model still sees. */
export function visibleTokens(texts: Iterable<string>): Set<string> {
  const out = new Set<string>();
  for (const text of texts) for (const t of distinctiveTokens(text, Number.POSITIVE_INFINITY).keys()) out.add(t);
  return out;
}

const OMISSION_LINE = /^\[… [^\n]* omitted: [^\n]* …\]$/;

/**
 * The chunks of `original` that a distilled replacement left out. The output is cut again exactly as
 * the pass cut it (chunkOutput is deterministic); kept chunks appear verbatim and in order after the
 * header, and an omission line stands for each run of removed ones. A replacement that is not ours, or
 * that does not line up, counts every chunk as removed.
 */
export function removedChunks(original: string, replacement: string): Chunk[] {
  const chunks = chunkOutput(original);
  if (!replacement.startsWith(GUARD_MARKER)) return chunks;
  const headerEnd = replacement.indexOf("\n");
  if (headerEnd === -1) return chunks;
  let cursor = headerEnd + 1;
  const removed: Chunk[] = [];
  for (const chunk of chunks) {
    const body = chunk.text.endsWith("\n") ? chunk.text.slice(0, -1) : chunk.text;
    const end = cursor + body.length;
    // A kept piece of a long line is followed directly by the next piece when that one is kept too (a
    // continuation never starts with "\n"), else by the line break before an omission line.
    const inside = endsInsideLine(chunk, original.length);
    if (replacement.startsWith(body, cursor) && (end === replacement.length || replacement[end] === "\n" || inside)) {
      cursor = replacement[end] === "\n" ? end + 1 : end;
      continue;
    }
    removed.push(chunk);
    // The first removed chunk of a run sits where its omission line is: step over that line.
    const lineEnd = replacement.indexOf("\n", cursor);
    const line = replacement.slice(cursor, lineEnd === -1 ? replacement.length : lineEnd);
    if (OMISSION_LINE.test(line)) cursor = lineEnd === -1 ? replacement.length : lineEnd + 1;
  }
  return removed;
}
