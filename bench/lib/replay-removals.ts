// Every item a replay of one session removes, as labelled removals (test/kit/labelled-removals.ts): the
// removed chunks of a distilled output, a small output removed whole, an old exchange omitted whole.
// Images are left out (nothing to label). Shared by bench/draw-removals.ts and bench/harm-rate.ts.
import { basename } from "node:path";
import type { SessionEntry } from "@earendil-works/pi-coding-agent";
import { chunkOutput } from "../../src/core/distill/chunk.ts";
import { removedChunks } from "../../src/core/replay/proxy.ts";
import type { SessionMetrics } from "../../src/core/replay/replay-metrics.ts";
import type { GuardConfig } from "../../src/core/shared/config.ts";
import { type ContextEditDraft, type GuardRecord, RECORD_TYPE } from "../../src/core/shared/types.ts";
import { localClassify } from "../../src/main/pass/classifier.ts";
import { readContent } from "../../src/main/pass/snapshot.ts";
import type { TaskRunner } from "../../src/main/platform/pool.ts";
import { replaySession } from "../../src/main/replay/driver.ts";
import type { PriceBook } from "../../src/main/replay/prices.ts";
import type { SessionFile } from "../../src/main/replay/reader.ts";
import type { LabelledRemoval } from "../../test/kit/labelled-removals.ts";

export interface ReplayedRemovals {
  removals: LabelledRemoval[];
  /** The replay itself (its suspects carry the proxy's tiers, keyed by pass and entry id). */
  metrics: SessionMetrics;
  /** The replay's pass number of each removal (same order), to find its suspect. */
  passes: number[];
}

/** Replays `file` with local/lexical and `config`, and lists what each pass removed. */
export async function replayRemovals(
  file: SessionFile,
  options: {
    runner: TaskRunner;
    config: GuardConfig;
    prices?: PriceBook;
    source: LabelledRemoval["source"];
  },
): Promise<ReplayedRemovals> {
  const session = basename(file.path);
  const byId = new Map(file.branch.map((e) => [e.id, e]));
  const line = (id: string) => file.lineOf.get(byId.get(id) as SessionEntry) ?? 0;
  const removals: LabelledRemoval[] = [];
  const passes: number[] = [];
  const metrics = await replaySession(file, {
    runner: options.runner,
    classify: localClassify(),
    modelRef: "local/lexical",
    config: options.config,
    ...(options.prices ? { prices: options.prices } : {}),
    onApplied: (added, pass) => {
      const record = added.find((e) => e.type === "custom" && e.customType === RECORD_TYPE) as
        | { data: GuardRecord }
        | undefined;
      const edits = new Map<string, ContextEditDraft["replacement"]>();
      for (const e of added) {
        const edit = e as unknown as { type: string; targetId: string; replacement: ContextEditDraft["replacement"] };
        if (edit.type === "context_edit") edits.set(edit.targetId, edit.replacement);
      }
      for (const r of record?.data.results ?? []) {
        if (r.outcome === "kept" || r.kind === "image") continue;
        const base = {
          session,
          line: line(r.entryId),
          ...(file.version >= 2 ? { entryId: r.entryId } : {}),
          afterLine: pass.line,
          suspectToday: false,
          source: options.source,
          heldOut: false,
          label: "not-needed" as const,
          reason: "",
        };
        if (r.kind === "exchange") {
          removals.push({
            ...base,
            kind: "exchange",
            omittedLines: (r.omitted ?? []).map(line),
            removed: "all",
            what: `exchange: ${r.label}`,
          });
          passes.push(pass.n);
          continue;
        }
        const entry = byId.get(r.entryId);
        const text = readContent((entry as { message?: { content?: unknown } }).message?.content).text;
        const shown = edits.get(r.entryId);
        const chunks = chunkOutput(text);
        const gone =
          (r.kind ?? "large") === "large"
            ? removedChunks(text, shown ? shown.content.map((b) => b.text).join("\n") : "").map((c) => c.n)
            : chunks.map((c) => c.n);
        if (gone.length === 0) continue;
        const removed = gone.length === chunks.length ? ("all" as const) : gone;
        removals.push({
          ...base,
          removed,
          what: `${r.label}: ${removed === "all" ? "all" : `${gone.length} of ${chunks.length} chunks`}`,
        });
        passes.push(pass.n);
      }
    },
  });
  return { removals, metrics, passes };
}
