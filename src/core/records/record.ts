// The `context-guard` custom entry a pass appends: what it judged and what it cost. Statistics and
// `/guard` read these back from the branch, so nothing is kept in memory.

import { redact, redactDeep, type Secrets } from "../shared/redact.ts";
import { sizeChange } from "../shared/text.ts";
import { type CustomDraft, type GuardRecord, type PassPhase, RECORD_TYPE, type RecordResult } from "../shared/types.ts";

export interface RecordInput {
  phase: PassPhase;
  model: string;
  results: RecordResult[];
  requests: number;
  inputTokens: number;
  costUsd: number;
  ms: number;
  timedOut: boolean;
  /**
   * Credentials to cut out of the results' labels, reasons and traces (core/shared/redact.ts); well-known
   * credential shapes are cut even without them.
   */
  secrets?: Secrets;
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

/**
 * A usage total fit for a record (JSON has no Infinity or NaN; they would be stored as null): a sum that
 * overflowed is capped at Number.MAX_SAFE_INTEGER, and a value that is not a number, or is negative, is 0.
 */
export function usageTotal(value: number): number {
  if (value === Number.POSITIVE_INFINITY) return Number.MAX_SAFE_INTEGER;
  if (!Number.isFinite(value) || value < 0) return 0;
  return Math.min(value, Number.MAX_SAFE_INTEGER);
}

export function buildRecord(input: RecordInput): GuardRecord {
  // A trace can quote a classifier error that echoed a credential; labels quote commands.
  const results = input.results.map((r) => ({
    ...r,
    label: redact(r.label, input.secrets),
    reason: redact(r.reason, input.secrets),
    jev: redactDeep(r.jev, input.secrets),
  }));
  return {
    v: 1,
    phase: input.phase,
    model: input.model,
    savedChars: savedChars(results),
    requests: input.requests,
    inputTokens: usageTotal(input.inputTokens),
    costUsd: usageTotal(input.costUsd),
    ms: input.ms,
    timedOut: input.timedOut,
    results,
  };
}

export function recordDraft(record: GuardRecord): CustomDraft {
  return { type: "custom", customType: RECORD_TYPE, data: record };
}

/** One line per result for `/guard`, e.g. `bash \`rg foo\`: distilled 36.1k → 1.2k chars (chunks) kw.15 …`. */
export function summarizeRecord(record: GuardRecord, secrets?: Secrets): string[] {
  // Read back from session files: a damaged record shows what it can instead of failing /guard.
  const results = Array.isArray(record.results) ? record.results : [];
  return results
    .filter((r) => typeof r === "object" && r !== null)
    .map((r) => {
      const size = sizeChange(r.beforeChars, r.afterChars);
      // Records are read back from session files, where an older or damaged one may lack traces.
      const traces = Array.isArray(r.jev) && r.jev.length > 0 ? ` ${r.jev.join(" | ")}` : "";
      // A record written before redaction covered fragments can still hold one: cut it again.
      return redact(`[${r.kind ?? "large"}] ${r.label}: ${r.outcome} ${size} (${r.reason})${traces}`, secrets);
    });
}
