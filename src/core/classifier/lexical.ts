// The embedded offline classifier (`local/lexical`): a deterministic scorer that answers the same
// bool and choice questions as Jev from the evidence in the request's state. It is much weaker than
// Jev (it matches tokens, it does not read), but it needs no key and no network, so the replay and the
// extension can run anywhere.
//
// Evidence, per judged piece (a chunk, a small output, an old exchange):
// - distinctive tokens the piece shares with the current work (final answer, question, notes, earlier
//   conversation): paths and file names count most, then quoted strings and identifiers, numbers least;
//   tokens of the call's own arguments and tokens found in most pieces of the request do not count;
// - word overlap (tf-idf cosine over the request's pieces) with the current work;
// - error lines in a failed output, and their tokens named by the work;
// - calls the agent made later (mid-run) count as part of the current work;
// - an old exchange that shares its paths and identifiers with other old exchanges belongs to a theme the
//   session keeps returning to, which counts for keeping it;
// - a `superseded` note lowers the probability.
// The score becomes a probability through a logistic curve; choice questions spread probability over
// `whole`, `none` and the pieces, and always sum to 1.

import { parseModelRef } from "../shared/model-ref.ts";
import { distinctiveTokens, errorLines, type TokenKind, wordCounts } from "../shared/tokens.ts";
import type { Answer, ChoiceQuestion, ClassifierRequest, JsonObject, JsonValue } from "../shared/types.ts";
import { classifyRouting } from "./lexical-routing.ts";

const LOCAL_PROVIDER = "local";
const LOCAL_MODEL_ID = "lexical";
export const LOCAL_MODEL_REF = `${LOCAL_PROVIDER}/${LOCAL_MODEL_ID}`;

/** Whether a `model` setting names the embedded classifier. */
export function isLocalModelRef(ref: string): boolean {
  const parsed = parseModelRef(ref);
  return parsed?.provider === LOCAL_PROVIDER && parsed.id === LOCAL_MODEL_ID;
}

/** How much one shared token of each kind adds to the score. */
const KIND_WEIGHT: Readonly<Record<TokenKind, number>> = { path: 1.3, quoted: 1.1, identifier: 1, number: 0.5 };
/** Extra weight for a shared token that sits on an error line of a failed output. */
const ERROR_TOKEN_FACTOR = 1.5;
const MAX_TOKEN_SCORE = 3;
const COSINE_WEIGHT = 2;
const ERROR_BOOST = 0.25;
const SUPERSEDED_FACTOR = 0.6;
/** A token in more than this share of a request's pieces (with 3 or more pieces) says nothing about one of them. */
const COMMON_SHARE = 0.6;
/** Old exchanges: how much tokens shared with other old exchanges (a recurring theme) add. */
const RECURRING_WEIGHT = 0.6;
/** Probability for a question the scorer has no evidence for. */
const UNKNOWN = 0.5;

/** Where the current work is described, and how much each part counts. */
const WORK_FIELDS: ReadonlyArray<[path: string[], weight: number]> = [
  [["final_answer"], 1],
  [["user_question"], 0.9],
  [["agent_progress", "latest_note"], 0.9],
  [["agent_progress", "earlier_notes"], 0.6],
  [["agent_notes_during_the_run"], 0.6],
  [["later_tool_calls"], 0.7],
  [["earlier_conversation"], 0.45],
];

/** Containers of judged pieces in a request's state. */
const GROUPS = ["chunks", "items", "exchanges"] as const;

interface Work {
  tokens: Map<string, number>;
  words: Map<string, number>;
}

interface Piece {
  id: string;
  text: string;
  superseded: boolean;
  failed: boolean;
}

function isObject(v: JsonValue | undefined): v is JsonObject {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** All string leaves of a JSON value, joined. */
function textOf(v: JsonValue | undefined): string {
  if (v === undefined || v === null) return "";
  if (typeof v === "string") return v;
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  if (Array.isArray(v)) return v.map(textOf).join("\n");
  return Object.values(v).map(textOf).join("\n");
}

function at(state: JsonObject, path: string[]): JsonValue | undefined {
  let v: JsonValue | undefined = state;
  for (const key of path) v = isObject(v) ? v[key] : undefined;
  return v;
}

function readWork(state: JsonObject): Work {
  const tokens = new Map<string, number>();
  const words = new Map<string, number>();
  for (const [path, weight] of WORK_FIELDS) {
    const text = textOf(at(state, path));
    if (text === "") continue;
    for (const t of distinctiveTokens(text).keys()) tokens.set(t, Math.max(tokens.get(t) ?? 0, weight));
    for (const [w, n] of wordCounts(text)) words.set(w, (words.get(w) ?? 0) + weight * (1 + Math.log(n)));
  }
  return { tokens, words };
}

function toPiece(id: string, value: JsonValue, outputFailed: boolean, outputSuperseded = false): Piece {
  if (!isObject(value)) return { id, text: textOf(value), superseded: outputSuperseded, failed: outputFailed };
  // Small outputs: label and output; exchanges: prompt, reply and tool calls. The size line is noise.
  const { size: _size, superseded, status, ...rest } = value;
  return {
    id,
    text: textOf(rest),
    superseded: superseded !== undefined && superseded !== null && superseded !== "",
    failed: outputFailed || status === "failed",
  };
}

interface Scored {
  p: Map<string, number>;
  /** Pieces by question id, for choice questions. */
  ids: Set<string>;
}

const sigmoid = (x: number) => 1 / (1 + Math.exp(-x));
const round = (p: number) => Math.round(p * 10_000) / 10_000;

/**
 * Probability that each piece of one group is needed. `recurring` weighs the share of a piece's tokens
 * that other pieces of the group share too: for old exchanges, a theme the session keeps coming back to.
 */
function scoreGroup(pieces: Piece[], work: Work, exclude: Set<string>, recurring = 0): Map<string, number> {
  const n = pieces.length;
  const tokens = pieces.map((p) => distinctiveTokens(p.text));
  const words = pieces.map((p) => wordCounts(p.text));
  const tokenDf = new Map<string, number>();
  const wordDf = new Map<string, number>();
  for (const set of tokens) for (const t of set.keys()) tokenDf.set(t, (tokenDf.get(t) ?? 0) + 1);
  for (const set of words) for (const w of set.keys()) wordDf.set(w, (wordDf.get(w) ?? 0) + 1);
  const common = (df: number | undefined) => n >= 3 && (df ?? 0) / n > COMMON_SHARE;
  const idf = (w: string) => Math.log(1 + (n + 1) / ((wordDf.get(w) ?? 0) + 0.5));

  // The work's word vector, weighted by the same idf, so cosine stays comparable across pieces.
  let workNorm = 0;
  for (const [w, weight] of work.words) workNorm += (weight * idf(w)) ** 2;
  workNorm = Math.sqrt(workNorm);

  const out = new Map<string, number>();
  pieces.forEach((piece, i) => {
    const errorText = piece.failed ? errorLines(piece.text).join("\n") : "";
    const errorTokens = errorText === "" ? undefined : distinctiveTokens(errorText);
    let strong = 0;
    let own = 0;
    let shared = 0;
    for (const [t, kind] of tokens[i] as Map<string, TokenKind>) {
      const df = tokenDf.get(t) ?? 0;
      if (exclude.has(t) || common(df)) continue;
      own++;
      if (df >= 2) shared++;
      const weight = work.tokens.get(t);
      if (weight === undefined) continue;
      strong += weight * KIND_WEIGHT[kind] * (errorTokens?.has(t) ? ERROR_TOKEN_FACTOR : 1);
    }
    let dot = 0;
    let norm = 0;
    for (const [w, count] of words[i] as Map<string, number>) {
      if (common(wordDf.get(w))) continue;
      const x = (1 + Math.log(count)) * idf(w);
      norm += x * x;
      const y = work.words.get(w);
      if (y !== undefined) dot += x * y * idf(w);
    }
    const cosine = dot > 0 && norm > 0 && workNorm > 0 ? dot / (Math.sqrt(norm) * workNorm) : 0;
    const theme = recurring > 0 && own > 0 ? recurring * (shared / own) : 0;
    const score =
      Math.min(strong, MAX_TOKEN_SCORE) + COSINE_WEIGHT * cosine + (errorText !== "" ? ERROR_BOOST : 0) + theme;
    let p = 0.04 + 0.92 * sigmoid(2.4 * (score - 0.75));
    if (piece.superseded) p *= SUPERSEDED_FACTOR;
    out.set(piece.id, round(p));
  });
  return out;
}

/** Tokens of the call itself (tool name and arguments): every chunk of its output shares them. */
function callTokens(state: JsonObject): Set<string> {
  const text = `${textOf(state.tool)}\n${textOf(state.tool_arguments)}`;
  return new Set(distinctiveTokens(text).keys());
}

/** The pieces a request asks about (chunks, items, exchanges), in groups scored apart. */
function pieceGroups(request: ClassifierRequest): Array<{ pieces: Piece[]; recurring: number }> {
  const { state } = request;
  const failed = state.tool_status !== undefined;
  // A checkpoint request says when a later call made the whole output out of date.
  const stale = typeof state.superseded === "string" && state.superseded.trim() !== "";
  const groups: Array<{ pieces: Piece[]; recurring: number }> = [];
  for (const key of GROUPS) {
    const group = state[key];
    if (!isObject(group)) continue;
    groups.push({
      pieces: Object.entries(group).map(([id, value]) => toPiece(id, value, failed, key === "chunks" && stale)),
      recurring: key === "exchanges" ? RECURRING_WEIGHT : 0,
    });
  }
  // Pieces that are asked about but live elsewhere in the state (a future request shape): one group.
  const known = new Set(groups.flatMap((g) => g.pieces.map((piece) => piece.id)));
  const loose: Piece[] = [];
  for (const [id, question] of Object.entries(request.questions)) {
    if (known.has(id) || question.type !== "bool" || id === "keep_whole") continue;
    let found: JsonValue | undefined = state[id];
    for (const value of Object.values(state))
      if (found === undefined && isObject(value) && id in value) found = value[id];
    if (found !== undefined) loose.push(toPiece(id, found, failed));
  }
  if (loose.length > 0) groups.push({ pieces: loose, recurring: 0 });
  return groups;
}

/** The text of each piece a request asks about, by its question id. */
export function requestPieces(request: ClassifierRequest): Map<string, string> {
  return new Map(
    pieceGroups(request).flatMap((g) => g.pieces.map((piece): [string, string] => [piece.id, piece.text])),
  );
}

function scoreState(request: ClassifierRequest, work: Work): Scored {
  const p = new Map<string, number>();
  const exclude = callTokens(request.state);
  for (const group of pieceGroups(request)) {
    for (const [id, prob] of scoreGroup(group.pieces, work, exclude, group.recurring)) p.set(id, prob);
  }
  return { p, ids: new Set(p.keys()) };
}

/** Share of pieces judged needed, and the strongest one. */
function spread(probabilities: number[]): { frac: number; max: number } {
  if (probabilities.length === 0) return { frac: 0, max: 0 };
  const needed = probabilities.filter((p) => p >= 0.6).length;
  return { frac: needed / probabilities.length, max: Math.max(...probabilities) };
}

function chunkProbabilities(request: ClassifierRequest, scored: Scored): number[] {
  const chunks = request.state.chunks;
  if (!isObject(chunks)) return [];
  return Object.keys(chunks).map((id) => scored.p.get(id) ?? UNKNOWN);
}

function keepWhole(probabilities: number[]): number {
  if (probabilities.length === 0) return UNKNOWN;
  if (probabilities.length === 1) return round(0.9 * (probabilities[0] as number));
  const { frac } = spread(probabilities);
  return round(0.05 + 0.9 * frac * frac);
}

/**
 * A choice among `whole`, `none` and pieces: `whole` grows with the share of needed pieces, `none`
 * with the weakness of the strongest piece, each piece with its own probability.
 */
function choose(question: ChoiceQuestion, scored: Scored): Answer {
  const keys = Object.keys(question.criteria);
  const pieceKeys = keys.filter((k) => scored.ids.has(k));
  const { frac, max } = spread(pieceKeys.map((k) => scored.p.get(k) as number));
  const raw = new Map<string, number>();
  for (const key of keys) {
    let weight: number;
    if (scored.ids.has(key)) weight = (scored.p.get(key) as number) ** 2 * (1 - frac * frac) + 1e-4;
    else if (key === "whole") weight = pieceKeys.length > 0 ? frac * frac + 1e-4 : 0.5;
    else if (key === "none") weight = pieceKeys.length > 0 ? (1 - max) ** 3 + 1e-4 : 0.5;
    else weight = pieceKeys.length > 0 ? 1e-4 : 1;
    raw.set(key, weight);
  }
  let total = 0;
  for (const w of raw.values()) total += w;
  const probabilities: Record<string, number> = {};
  let choice = keys[0] ?? "none";
  let best = -1;
  for (const key of keys) {
    const p = round((raw.get(key) as number) / total);
    probabilities[key] = p;
    if (p > best) {
      best = p;
      choice = key;
    }
  }
  return { type: "choice", choice, probabilities, confidence: Math.max(0, best) };
}

/**
 * Answers every question of the request: bool questions with P(true) in [0, 1], choice questions with
 * one of their options and probabilities that sum to 1. Deterministic: the same request always gets
 * the same answers.
 */
export function classifyLexical(request: ClassifierRequest): Record<string, Answer> {
  const routed = classifyRouting(request);
  if (routed) return routed;
  return answersFrom(request, scoreState(request, readWork(request.state)).p);
}

/**
 * Answers every question of a pruning request from the probability that each piece (by question id) is
 * needed: the lexical scorer's, or another judge's (the replay's oracle).
 */
export function answersFrom(request: ClassifierRequest, p: ReadonlyMap<string, number>): Record<string, Answer> {
  const scored: Scored = { p: new Map(p), ids: new Set(p.keys()) };
  const answers: Record<string, Answer> = {};
  for (const [id, question] of Object.entries(request.questions)) {
    if (question.type === "choice") {
      answers[id] = choose(question, scored);
    } else if (id === "keep_whole") {
      answers[id] = { type: "bool", probability: keepWhole(chunkProbabilities(request, scored)) };
    } else {
      answers[id] = { type: "bool", probability: scored.p.get(id) ?? UNKNOWN };
    }
  }
  return answers;
}
