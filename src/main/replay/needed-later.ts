// The replay's reading of what the session did next: the oracle judge (which knows it before each pass)
// and, once the replay is over, the needed-later proxy's suspects among what the passes removed and what
// their recalls would cost.
import type { SessionEntry } from "@earendil-works/pi-coding-agent";
import { oracleAnswers } from "../../core/replay/oracle.ts";
import {
  callSignature,
  findSuspects,
  type RemovedPiece,
  removedChunks,
  type Suspect,
  SuspectFinder,
} from "../../core/replay/proxy.ts";
import { type RecallHarm, type RequestAt, recallHarm } from "../../core/replay/recall-harm.ts";
import type { PassMetrics, SuspectView } from "../../core/replay/replay-metrics.ts";
import type { ContextEditDraft, GuardRecord } from "../../core/shared/types.ts";
import type { ClassifyFn } from "../pass/classify-queue.ts";
import { readContent } from "../pass/snapshot.ts";
import { around, compactionsOf, excerpt, laterMessages, rawText } from "./proxy-input.ts";
import { messageOf, toolCallsOf } from "./run-boundaries.ts";
import type { VisibleTracker } from "./visible-memo.ts";

const isAssistantEntry = (e: SessionEntry) =>
  e.type === "message" && (e.message as { role?: unknown } | null)?.role === "assistant";

export interface Oracle {
  /** Answers every pruning request from what the branch does after `at()`, the pass's position. */
  classify: ClassifyFn;
  /** The requests left after a position before the session ends or next compacts (the gates' count). */
  requestsAhead: (at: number) => number;
}

export function oracleFor(branch: readonly SessionEntry[], at: () => number): Oracle {
  const finder = new SuspectFinder(laterMessages(branch), compactionsOf(branch));
  // From the end back: at each position, the requests after it before the next compaction.
  const ahead = new Array<number>(branch.length).fill(0);
  for (let j = branch.length - 1, n = 0; j >= 0; j--) {
    ahead[j] = n;
    const e = branch[j] as SessionEntry;
    if (e.type === "compaction") n = 0;
    else if (isAssistantEntry(e)) n++;
  }
  return {
    classify: async (request) => ({ status: "stop", answers: oracleAnswers(request, finder, at()), costUsd: 0, ms: 0 }),
    requestsAhead: (from) => ahead[from] ?? 0,
  };
}

export interface NeededLater {
  suspects: Suspect[];
  views: SuspectView[];
  harm: RecallHarm;
}

/**
 * The proxy's suspects among the removed pieces (each pass's count set on `passes`), and the recalls the
 * likely-needed ones would cost at the main model's prices.
 */
export function neededLater(input: {
  branch: readonly SessionEntry[];
  pieces: readonly RemovedPiece[];
  passes: PassMetrics[];
  requests: readonly RequestAt[];
  lineOf: ReadonlyMap<SessionEntry, number>;
  lineOfId: ReadonlyMap<string, number>;
  main: { prices?: Parameters<typeof recallHarm>[2]; family: string } | undefined;
}): NeededLater {
  const { branch, pieces, passes, lineOf } = input;
  const compactions = compactionsOf(branch);
  const suspects = findSuspects(pieces, laterMessages(branch), compactions);
  const pieceByKey = new Map(pieces.map((p) => [p.key, p]));
  const views: SuspectView[] = suspects.map((s) => {
    const piece = pieceByKey.get(s.key);
    const laterEntry = branch[s.at];
    const result = passes.find((p) => p.n === s.pass)?.results.find((r) => r.entryId === s.entryId);
    return {
      ...s,
      line: input.lineOfId.get(s.entryId),
      atLine: laterEntry ? lineOf.get(laterEntry) : undefined,
      excerpt: excerpt(piece?.text ?? ""),
      laterExcerpt: around(laterEntry ? rawText(laterEntry) : "", s.tokens[0]),
      label: result?.label ?? s.entryId,
    };
  });
  const perPass = new Map<number, number>();
  for (const s of suspects) if (s.tier === "likely-needed") perPass.set(s.pass, (perPass.get(s.pass) ?? 0) + 1);
  for (const p of passes) p.suspected = perPass.get(p.n) ?? 0;
  const neededAt = new Map(
    views
      .filter((s) => s.tier === "likely-needed")
      .map((s) => [s.key, s.atLine ?? lineOf.get(branch[s.at] as SessionEntry)]),
  );
  const harm = recallHarm(
    pieces.map((p) => ({ chars: p.text.length, neededAtLine: neededAt.get(p.key) })),
    input.requests,
    input.main?.prices,
    input.main !== undefined && input.main.family !== "none",
    compactions.map((c) => lineOf.get(branch[c.index] as SessionEntry) ?? 0),
  );
  return { suspects, views, harm };
}

/** The replay's lookups of the branch so far, and what the model still sees. */
export interface BranchLookups {
  byId: ReadonlyMap<string, SessionEntry>;
  indexById: ReadonlyMap<string, number>;
  callById: ReadonlyMap<string, { name: string; args: Record<string, unknown> }>;
  visible: VisibleTracker;
}

/** What one pass took out of the context, item by item, for the needed-later proxy. */
export function removedPieces(
  record: GuardRecord,
  edits: ContextEditDraft[],
  after: number,
  pass: number,
  { byId, indexById, callById, visible }: BranchLookups,
): RemovedPiece[] {
  const changed = record.results.filter((r) => r.outcome !== "kept");
  if (changed.length === 0) return [];
  const replacement = new Map(edits.map((e) => [e.targetId, e.replacement]));
  const signatureOf = (entry: SessionEntry | undefined): string[] => {
    const id = (messageOf(entry) as { toolCallId?: string } | undefined)?.toolCallId;
    const call = id === undefined ? undefined : callById.get(id);
    return call ? [callSignature(call.name, call.args)] : [];
  };
  const out: RemovedPiece[] = [];
  for (const r of changed) {
    const entry = byId.get(r.entryId);
    const kind = r.kind ?? "large";
    const at = indexById.get(r.entryId);
    const base = {
      key: `${pass}:${r.entryId}`,
      entryId: r.entryId,
      pass,
      after,
      visible: new Set<string>(),
      ...(at === undefined ? {} : { at }),
    };
    if (kind === "large") {
      const text = readContent(messageOf(entry)?.content).text;
      const shown = replacement.get(r.entryId);
      const shownText = shown ? shown.content.map((b) => b.text).join("\n") : "";
      const chunks = removedChunks(text, shownText);
      const removedText = chunks.map((c) => c.text).join("\n");
      if (chunks.length > 0) out.push({ ...base, kind: "chunk", text: removedText, calls: signatureOf(entry) });
    } else if (kind === "small") {
      out.push({ ...base, kind: "small", text: rawText(entry), calls: signatureOf(entry) });
    } else if (kind === "image") {
      out.push({ ...base, kind: "image", text: "", calls: signatureOf(entry) });
    } else if (kind === "exchange") {
      const ids = [r.entryId, ...(r.omitted ?? [])];
      const texts: string[] = [];
      const sigs: string[] = [];
      for (const id of ids) {
        const e = byId.get(id);
        texts.push(rawText(e));
        for (const call of toolCallsOf(messageOf(e))) sigs.push(callSignature(call.name, call.args));
      }
      out.push({ ...base, kind: "exchange", text: texts.join("\n"), calls: sigs });
    }
  }
  // Each piece keeps only its own tokens that are still visible: findSuspects asks about no other.
  for (const piece of out) piece.visible = visible.visibleOf(piece.text);
  return out;
}
