// The needed-later proxy: a cheap, offline stand-in for "did the guard remove something the agent
// needed?", judged per removed item (an output's removed chunks together, a small output, an exchange).
// An item is *likely needed* when the agent later used one of its distinctive tokens (a path, identifier,
// dotted name, quoted string, long number) before any later tool result showed that token again. Tokens
// the model could still see, and tokens the user typed, prove nothing and are skipped. Making the same
// call again is *re-ran* (usually a deliberate refresh: a rebuild, a re-read), and a token the agent used
// only after a tool result showed it again is *seen again*: neither counts as a false removal.
// Numbers and relative imports are weak evidence: one other token or two of them are needed.

import { chunkOutput, endsInsideLine } from "../distill/chunk.ts";
import { normalizeCommand, stableJson } from "../items/superseded.ts";
import type { TokenKind } from "../shared/tokens.ts";
import { type Chunk, GUARD_MARKER } from "../shared/types.ts";
import { expectedNeeded, PROXY_QUALITY, type ProxyQuality } from "./proxy-quality.ts";
import { fileName, isWeak, proxyTokens, samePath, shownTokens } from "./proxy-tokens.ts";

export type RemovedKind = "chunk" | "small" | "exchange" | "image";

/** Everything one pass took out of one item. */
export interface RemovedPiece {
  /** Unique key, e.g. `3:a1b2c3d4` for entry a1b2c3d4 removed by pass 3. */
  key: string;
  /** `chunk` for the removed chunks of a large output. */
  kind: RemovedKind;
  /** The entry whose content was removed (for an exchange: its prompt). */
  entryId: string;
  /** The pass that removed it. */
  pass: number;
  /** Position (in the replayed branch) of the run end after which it is gone. */
  after: number;
  /** Position of the removed entry (an exchange's prompt), when known: earlier uses prove nothing. */
  at?: number;
  /** The removed text. */
  text: string;
  /** Signatures (callSignature) of the calls whose output was removed. */
  calls: string[];
  /** Tokens still visible to the model after the pass (kept chunks, other messages): see visibleTokens. */
  visible: ReadonlySet<string>;
}

export interface LaterCall {
  signature: string;
  /** The call as text: its name and JSON arguments (without `fresh`). */
  text: string;
  /** Text the call writes anew (a write's content, an edit's new text): see splitCallArgs. */
  fresh?: string;
}

/** A compaction of the branch: at `index`, everything before `firstKept` left the model's view. */
export interface Compaction {
  index: number;
  firstKept: number;
}

/** A recorded message of the branch, in order. */
export interface LaterMessage {
  /** Position in the replayed branch. */
  index: number;
  role: "user" | "assistant" | "toolResult";
  /** Its text, without tool calls. */
  text: string;
  calls: LaterCall[];
}

/** likely-needed: used before seen again; re-ran: the same call was made again; seen-again: used after a tool result showed it. */
export type Tier = "likely-needed" | "re-ran" | "seen-again";

export interface Suspect {
  key: string;
  kind: RemovedKind;
  entryId: string;
  pass: number;
  tier: Tier;
  /** Position of the later message that is the evidence. */
  at: number;
  /** The evidence tokens (at most MAX_SHOWN); none for re-ran. */
  tokens: string[];
}

export interface LikelyNeeded {
  /** Removed items in the tier. */
  items: number;
  /** items ÷ removed items; 0 when nothing was removed. */
  rate: number;
  /** The tier's precision and recall on the labelled removals (PROXY_QUALITY). */
  precision: number;
  recall: number;
  /** Removed items the agent would likely have had to recall: items × precision ÷ recall. */
  expected: number;
}

export interface ProxyRate {
  /** Removed items. */
  removed: number;
  likelyNeeded: LikelyNeeded;
  /** Items whose call was made again (no false removal: usually a deliberate refresh). */
  reran: number;
  /** Items whose tokens a later tool result showed again before the agent used them. */
  seenAgain: number;
}

const MAX_SHOWN = 5;

/** The same call: bash commands compare normalized, other tools by name and arguments. */
export function callSignature(name: string, args: Record<string, unknown>): string {
  const command = args.command;
  if (name === "bash" && typeof command === "string") return `bash ${normalizeCommand(command)}`;
  return `${name} ${stableJson(args)}`;
}

interface Mention {
  at: number;
  role: LaterMessage["role"];
  /** Signature of the tool call whose arguments hold it. */
  call?: string;
  /** In text the agent writes anew: a name there may be its own, not read from an output. */
  fresh?: boolean;
}

/** Where each token is mentioned; a path also answers for the other spellings of the same file. */
class Mentions {
  #byToken = new Map<string, Mention[]>();
  #pathsByName = new Map<string, Set<string>>();

  add(text: string, mention: Mention): void {
    for (const [token, kind] of proxyTokens(text)) {
      const list = this.#byToken.get(token);
      if (!list) this.#byToken.set(token, [mention]);
      else list.push(mention);
      if (kind !== "path") continue;
      const name = fileName(token);
      const paths = this.#pathsByName.get(name) ?? new Set<string>();
      paths.add(token);
      this.#pathsByName.set(name, paths);
    }
  }

  /** The mentions of a token, in branch order. */
  of(token: string, kind: TokenKind): Mention[] {
    if (kind !== "path") return this.#byToken.get(token) ?? [];
    const out: Mention[] = [];
    for (const path of this.#pathsByName.get(fileName(token)) ?? []) {
      if (samePath(path, token)) out.push(...(this.#byToken.get(path) ?? []));
    }
    return out.sort((a, b) => a.at - b.at);
  }
}

interface Use {
  token: string;
  kind: TokenKind;
  at: number;
  /** Only in text the agent wrote anew: weak evidence. */
  fresh?: boolean;
}

/**
 * The first later use of a token by the agent before `until`, and whether a tool result had shown it
 * again first.
 */
function firstUse(
  mentions: readonly Mention[],
  piece: RemovedPiece,
  until: number,
): { at: number; seenFirst: boolean; fresh: boolean } | undefined {
  let seenFirst = false;
  for (const m of mentions) {
    if (m.at <= piece.after) continue;
    if (m.at > until) break;
    if (m.role === "toolResult") seenFirst = true;
    // Naming the file again in the same call is a re-run, not a use of what the output said.
    else if (m.role === "assistant" && !(m.call !== undefined && piece.calls.includes(m.call)))
      return { at: m.at, seenFirst, fresh: m.fresh === true };
  }
  return undefined;
}

/** The agent named it before the removed entry existed: it had the token from elsewhere. */
function knownBefore(mentions: readonly Mention[], piece: RemovedPiece): boolean {
  const at = piece.at;
  return at !== undefined && mentions.some((m) => m.at < at && m.role === "assistant");
}

/** Where a compaction dropped the piece anyway: later uses are not the guard's doing. */
export function droppedAt(piece: RemovedPiece, compactions: readonly Compaction[]): number {
  const at = piece.at ?? piece.after;
  for (const c of compactions) if (c.index > piece.after && at < c.firstKept) return c.index;
  return Number.POSITIVE_INFINITY;
}

/**
 * Strong enough evidence: one strong token, or two weak ones (numbers, relative imports, names only in
 * text the agent wrote anew).
 */
function enough(uses: readonly Use[]): boolean {
  const weak = uses.filter((u) => u.fresh || isWeak(u.token, u.kind)).length;
  return uses.length - weak >= 1 || weak >= 2;
}

interface VisibleNames {
  /** Visible paths by file name. */
  paths: Map<string, string[]>;
  /** Every folder or file name inside a visible path (`pi-ai` of `@scope/pi-ai/dist`). */
  segments: Set<string>;
}

const visibleNames = new WeakMap<ReadonlySet<string>, VisibleNames>();

function namesOf(visible: ReadonlySet<string>): VisibleNames {
  let names = visibleNames.get(visible);
  if (names) return names;
  names = { paths: new Map(), segments: new Set() };
  for (const t of visible) {
    if (!t.includes("/")) continue;
    const name = fileName(t);
    const list = names.paths.get(name);
    if (list) list.push(t);
    else names.paths.set(name, [t]);
    for (const part of t.split("/")) if (part.length >= 3) names.segments.add(part);
  }
  visibleNames.set(visible, names);
  return names;
}

/** Whether the model still sees the token: as written, as another spelling of a path, or inside a path. */
function isVisible(token: string, kind: TokenKind, visible: ReadonlySet<string>): boolean {
  if (visible.has(token)) return true;
  const names = namesOf(visible);
  if (kind !== "path") return names.segments.has(token);
  return (names.paths.get(fileName(token)) ?? []).some((t) => samePath(t, token));
}

function earliest(uses: Use[]): Use[] {
  return uses.sort((a, b) => a.at - b.at);
}

/**
 * Judges removed pieces against the later conversation; pieces without evidence get no suspect.
 * `compactions` (in branch order) end the evidence for the pieces they dropped. The conversation is
 * indexed once, so one finder judges any number of pieces (the oracle asks at every pass).
 */
export class SuspectFinder {
  readonly #mentions = new Mentions();
  readonly #callAt = new Map<string, number[]>();
  readonly #compactions: readonly Compaction[];

  constructor(messages: readonly LaterMessage[], compactions: readonly Compaction[] = []) {
    this.#compactions = compactions;
    for (const m of messages) {
      this.#mentions.add(m.text, { at: m.index, role: m.role });
      for (const call of m.calls) {
        this.#mentions.add(call.text, { at: m.index, role: m.role, call: call.signature });
        if (call.fresh)
          this.#mentions.add(call.fresh, { at: m.index, role: m.role, call: call.signature, fresh: true });
        if (m.role !== "assistant") continue;
        const list = this.#callAt.get(call.signature) ?? [];
        list.push(m.index);
        this.#callAt.set(call.signature, list);
      }
    }
  }

  judge(piece: RemovedPiece): Suspect | undefined {
    const used: Use[] = [];
    const seen: Use[] = [];
    const until = droppedAt(piece, this.#compactions);
    for (const [token, kind] of proxyTokens(piece.text)) {
      if (isVisible(token, kind, piece.visible)) continue;
      const list = this.#mentions.of(token, kind);
      // The user typed it: the agent had it from the user, not from the removed copy.
      if (list.some((m) => m.role === "user")) continue;
      if (knownBefore(list, piece)) continue;
      const use = firstUse(list, piece, until);
      if (use) (use.seenFirst ? seen : used).push({ token, kind, at: use.at, fresh: use.fresh });
    }
    const base = { key: piece.key, kind: piece.kind, entryId: piece.entryId, pass: piece.pass };
    if (enough(used)) {
      const first = earliest(used);
      return { ...base, tier: "likely-needed", at: first[0]?.at ?? 0, tokens: shown(first) };
    }
    let again: number | undefined;
    for (const c of piece.calls) {
      const at = this.#callAt.get(c)?.find((i) => i > piece.after);
      if (at !== undefined && (again === undefined || at < again)) again = at;
    }
    if (again !== undefined) return { ...base, tier: "re-ran", at: again, tokens: [] };
    const evidence = [...used, ...seen];
    if (!enough(evidence)) return undefined;
    const first = earliest(evidence);
    return { ...base, tier: "seen-again", at: first[0]?.at ?? 0, tokens: shown(first) };
  }
}

/** Judges every removed piece against the later conversation; pieces without evidence are left out. */
export function findSuspects(
  pieces: readonly RemovedPiece[],
  messages: readonly LaterMessage[],
  compactions: readonly Compaction[] = [],
): Suspect[] {
  const finder = new SuspectFinder(messages, compactions);
  const out: Suspect[] = [];
  for (const piece of pieces) {
    const suspect = finder.judge(piece);
    if (suspect) out.push(suspect);
  }
  return out;
}

function shown(uses: readonly Use[]): string[] {
  return uses.slice(0, MAX_SHOWN).map((u) => u.token);
}

function likelyNeeded(
  items: number,
  removed: number,
  quality: Pick<ProxyQuality, "precision" | "recall">,
): LikelyNeeded {
  return {
    items,
    rate: removed > 0 ? items / removed : 0,
    precision: quality.precision,
    recall: quality.recall,
    expected: expectedNeeded(items, quality),
  };
}

/** Items per tier, and what the likely-needed count means given the proxy's measured quality. */
export function proxyRate(
  removed: number,
  suspects: readonly Pick<Suspect, "tier">[],
  quality: Pick<ProxyQuality, "precision" | "recall"> = PROXY_QUALITY,
): ProxyRate {
  const count = (tier: Tier) => suspects.filter((s) => s.tier === tier).length;
  return {
    removed,
    likelyNeeded: likelyNeeded(count("likely-needed"), removed, quality),
    reran: count("re-ran"),
    seenAgain: count("seen-again"),
  };
}

/** The rates of several sessions as one. */
export function combineProxy(rates: readonly ProxyRate[]): ProxyRate {
  const sum = (of: (r: ProxyRate) => number) => rates.reduce((n, r) => n + of(r), 0);
  const removed = sum((r) => r.removed);
  const quality = rates[0]?.likelyNeeded ?? PROXY_QUALITY;
  return {
    removed,
    likelyNeeded: likelyNeeded(
      sum((r) => r.likelyNeeded.items),
      removed,
      quality,
    ),
    reran: sum((r) => r.reran),
    seenAgain: sum((r) => r.seenAgain),
  };
}

/** Every distinctive token of the texts, file names of paths included: what the model still sees. */
export function visibleTokens(texts: Iterable<string>): Set<string> {
  const out = new Set<string>();
  for (const text of texts) for (const t of shownTokens(text, Number.POSITIVE_INFINITY).keys()) out.add(t);
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
