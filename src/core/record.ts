// The `context-guard` custom entry a pass appends: what it judged and what it cost. Statistics and
// `/guard` read these back from the branch, so nothing is kept in memory.

import { formatCount } from "./text.ts";
import { type CustomDraft, type GuardRecord, RECORD_TYPE, type RecordResult } from "./types.ts";

export interface RecordInput {
  phase: "run-end" | "mid-run";
  model: string;
  results: RecordResult[];
  requests: number;
  inputTokens: number;
  costUsd: number;
  ms: number;
  timedOut: boolean;
}

/** Characters the pass took out of context: only results that were actually replaced count. */
export function savedChars(results: RecordResult[]): number {
  let saved = 0;
  for (const r of results) {
    if (r.outcome === "kept") continue;
    saved += Math.max(0, r.beforeChars - r.afterChars);
  }
  return saved;
}

export function buildRecord(input: RecordInput): GuardRecord {
  return {
    v: 1,
    phase: input.phase,
    model: input.model,
    savedChars: savedChars(input.results),
    requests: input.requests,
    inputTokens: input.inputTokens,
    costUsd: input.costUsd,
    ms: input.ms,
    timedOut: input.timedOut,
    results: input.results,
  };
}

export function recordDraft(record: GuardRecord): CustomDraft {
  return { type: "custom", customType: RECORD_TYPE, data: record };
}

/** One line per result for `/guard`, e.g. `bash \`rg foo\`: distilled 36.1k→1.2k chars (chunks) kw.15 …`. */
export function summarizeRecord(record: GuardRecord): string[] {
  // Read back from session files: a damaged record shows what it can instead of failing /guard.
  const results = Array.isArray(record.results) ? record.results : [];
  return results
    .filter((r) => typeof r === "object" && r !== null)
    .map((r) => {
      const size = `${formatCount(r.beforeChars)}→${formatCount(r.afterChars)} chars`;
      // Records are read back from session files, where an older or damaged one may lack traces.
      const traces = Array.isArray(r.jev) && r.jev.length > 0 ? ` ${r.jev.join(" | ")}` : "";
      return `[${r.kind ?? "large"}] ${r.label}: ${r.outcome} ${size} (${r.reason})${traces}`;
    });
}
