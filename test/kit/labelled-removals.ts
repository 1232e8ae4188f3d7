// The hand-labelled removals (test/fixtures/labelled-removals.json) and how each one becomes the
// proxy's input straight from its session file, without a replay: so the labels stay valid whatever
// the classifier removes today. What stays visible is everything on the branch up to the run end
// (the removed entry's kept chunks included) except the removed text: as if the guard had removed
// only this.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { SessionEntry } from "@earendil-works/pi-coding-agent";
import { chunkOutput } from "../../src/core/distill/chunk.ts";
import { callSignature, type RemovedPiece, visibleTokens } from "../../src/core/replay/proxy.ts";
import { readContent } from "../../src/main/pass/snapshot.ts";
import { messageText } from "../../src/main/replay/proxy-input.ts";
import type { SessionFile } from "../../src/main/replay/reader.ts";

export interface LabelledRemoval {
  /** File name in test/fixtures/sessions, or in the shared sessions folder (SHARED_SESSIONS). */
  session: string;
  /**
   * Line (1-based) of the removed tool result in the session file (v1 files have no stable ids); for an
   * omitted exchange, the line of its prompt.
   */
  line: number;
  /** A tool output (the default) or an old exchange omitted whole. */
  kind?: "output" | "exchange";
  /** An exchange's other omitted entries, by line (its prompt is `line`). */
  omittedLines?: number[];
  /** Its entry id, for files that have ids. */
  entryId?: string;
  /** The removed chunks (numbers of chunkOutput), or "all" for the whole output. */
  removed: "all" | number[];
  /** Line of the run end after which it is gone. */
  afterLine: number;
  /** What was removed, in a few words. */
  what: string;
  /** Whether the needed-later proxy of the day it was drawn flagged it (labelled-removals.md). */
  suspectToday: boolean;
  /**
   * Removed by the local/lexical replay with the default settings, or with settings that remove more
   * (see labelled-removals.md), or a whole output chosen by hand; "replay-census": one of every removal
   * of the default replay on the day of the census.
   */
  source: "replay" | "replay-aggressive" | "replay-drawn" | "hand-picked" | "replay-census";
  /** Labelled after the proxy's rules were settled: not used to tune them. */
  heldOut: boolean;
  /** Which half of the set it is in (see labelled-removals.md): tuned on, or held out to report. */
  half?: "tune" | "report";
  label: "needed" | "not-needed";
  reason: string;
  /**
   * For a needed removal: whether the stub the guard writes today (its key facts) carries what the later
   * use needed, read by hand (labelled-removals.md); with the line of reasoning.
   */
  stubCovers?: boolean;
  stubReason?: string;
}

/**
 * One removal exactly: the same entry, gone after the same run end, the same chunks. A label holds for the
 * removal it was read for; the same output removed at another point or in other chunks needs its own.
 */
export function removalKey(
  r: Pick<LabelledRemoval, "session" | "line" | "afterLine" | "removed" | "omittedLines">,
): string {
  const what = r.removed === "all" ? "all" : r.removed.join(",");
  return `${r.session}:${r.line}:${r.afterLine}:${what}:${(r.omittedLines ?? []).join(",")}`;
}

/** Of these labelled removals: how many, how many needed, and how many needed whose stub lacks the use. */
export function countLabels(rs: readonly LabelledRemoval[]): { labelled: number; needed: number; harmful: number } {
  const needed = rs.filter((r) => r.label === "needed");
  return { labelled: rs.length, needed: needed.length, harmful: needed.filter((r) => r.stubCovers === false).length };
}

export interface LabelledSet {
  provenance: string;
  removals: LabelledRemoval[];
}

export const FIXTURES = join(import.meta.dirname, "..", "fixtures");

/** The real sessions shared beside the clone (../shared/sessions in CI, /work/shared/sessions here). */
export const SHARED_SESSIONS = [
  join(import.meta.dirname, "..", "..", "..", "shared", "sessions"),
  "/work/shared/sessions",
].find((dir) => existsSync(dir));

/** Where a labelled removal's session file is: the fixtures first, then the shared folder. */
export function sessionPath(session: string): string {
  const local = join(FIXTURES, "sessions", session);
  if (existsSync(local) || SHARED_SESSIONS === undefined) return local;
  return join(SHARED_SESSIONS, session);
}

export function readLabelledSet(path = join(FIXTURES, "labelled-removals.json")): LabelledSet {
  return JSON.parse(readFileSync(path, "utf8")) as LabelledSet;
}

function indexOfLine(file: SessionFile, line: number): number {
  const i = file.branch.findIndex((e) => file.lineOf.get(e) === line);
  if (i === -1) throw new Error(`${file.path}: no entry on line ${line} of the branch`);
  return i;
}

function textOf(entry: SessionEntry): string {
  if (entry.type === "custom_message") return readContent(entry.content).text;
  return entry.type === "message" ? messageText(entry.message) : "";
}

/** The removed piece a labelled removal describes, rebuilt from its session file. */
export function pieceFor(file: SessionFile, removal: LabelledRemoval): RemovedPiece {
  if (removal.kind === "exchange") return exchangePieceFor(file, removal);
  const at = indexOfLine(file, removal.line);
  const after = indexOfLine(file, removal.afterLine);
  const entry = file.branch[at] as SessionEntry;
  const message =
    entry.type === "message" ? (entry.message as { role?: string; toolCallId?: string; content?: unknown }) : undefined;
  if (message?.role !== "toolResult") throw new Error(`${file.path}:${removal.line} is not a tool result`);
  if (after < at) throw new Error(`${file.path}:${removal.afterLine} comes before line ${removal.line}`);
  const chunks = chunkOutput(readContent(message.content).text);
  const gone = removal.removed === "all" ? new Set(chunks.map((c) => c.n)) : new Set(removal.removed);
  const text = chunks
    .filter((c) => gone.has(c.n))
    .map((c) => c.text)
    .join("\n");
  const kept = chunks.filter((c) => !gone.has(c.n)).map((c) => c.text);
  const shown: string[] = [file.header.cwd ?? "", ...kept];
  const calls: string[] = [];
  for (let i = 0; i <= after; i++) {
    const e = file.branch[i] as SessionEntry;
    if (i !== at) shown.push(textOf(e));
    if (e.type !== "message") continue;
    for (const call of readContent((e.message as { content?: unknown }).content).toolCalls) {
      if (call.id === message.toolCallId) calls.push(callSignature(call.name, call.args));
    }
  }
  return {
    key: `${removal.session}:${removal.line}`,
    kind: removal.removed === "all" ? "small" : "chunk",
    entryId: entry.id,
    pass: 0,
    after,
    at,
    text,
    calls,
    visible: visibleTokens(shown),
  };
}

/** An omitted exchange: its prompt and every omitted entry go; the rest of the branch stays in view. */
function exchangePieceFor(file: SessionFile, removal: LabelledRemoval): RemovedPiece {
  const lines = [removal.line, ...(removal.omittedLines ?? [])];
  const gone = new Set(lines.map((l) => indexOfLine(file, l)));
  const after = indexOfLine(file, removal.afterLine);
  for (const i of gone)
    if (i > after) throw new Error(`${file.path}: line ${removal.afterLine} comes before the exchange`);
  const texts: string[] = [];
  const calls: string[] = [];
  const shown: string[] = [file.header.cwd ?? ""];
  for (let i = 0; i <= after; i++) {
    const e = file.branch[i] as SessionEntry;
    if (!gone.has(i)) {
      shown.push(textOf(e));
      continue;
    }
    texts.push(textOf(e));
    if (e.type !== "message") continue;
    for (const call of readContent((e.message as { content?: unknown }).content).toolCalls)
      calls.push(callSignature(call.name, call.args));
  }
  const prompt = file.branch[indexOfLine(file, removal.line)] as SessionEntry;
  return {
    key: `${removal.session}:${removal.line}`,
    kind: "exchange",
    entryId: prompt.id,
    pass: 0,
    after,
    at: Math.min(...gone),
    text: texts.join("\n"),
    calls,
    visible: visibleTokens(shown),
  };
}
