// Runs whose run-end pass never judged their outputs: the run end found a checkpoint or a handed-over
// rest still pending and left its pass to a later run end, or the pass went behind the agent and was
// dropped (/reload, /new, exit). Nothing on the branch says so, and nothing is written for it: such a
// run is known by its outputs, which no run-end record lists. Their outputs that no record names at all
// are then asked at a later run end like the retries (retry.ts): against their own run, through the
// same cache gate.

import { chunkedFrom, passesCandidateRules } from "../distill/run.ts";
import type { GuardConfig } from "../shared/config.ts";
import { RECORD_TYPE, type SnapEntry } from "../shared/types.ts";

/**
 * Most runs back from the current one whose run end may count as skipped. A run end is skipped while a
 * pass is pending, which lasts a classifier deadline or so: a few runs at most. Without a bound, a session
 * whose runs all lack run-end records (the classifier missing for long, the guard turned off) would have
 * every earlier run rebuilt and asked about at each run end.
 */
export const MAX_SKIPPED_RUNS = 8;

/** What the guard's records on the branch list of the session's outputs. */
export interface OutputRecords {
  /** Entries any result of any record names. */
  named: Set<string>;
  /** Outputs a run-end record names as a large or small item. */
  atRunEnd: Set<string>;
  /** Outputs a checkpoint record names as a large or small item (a checkpoint judges only its own run's). */
  atCheckpoint: Set<string>;
  /**
   * Where the guard was at work from: its first record, or the first output a record judged if that comes
   * earlier (a record can land runs later). The entries' length when there is none.
   */
  since: number;
}

/** One linear pass over the records (read defensively: they come back from session files). */
export function readOutputRecords(entries: readonly SnapEntry[]): OutputRecords {
  const out: OutputRecords = { named: new Set(), atRunEnd: new Set(), atCheckpoint: new Set(), since: entries.length };
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i] as SnapEntry;
    if (e.type !== "custom" || e.customType !== RECORD_TYPE) continue;
    if (out.since === entries.length) out.since = i;
    const data = (typeof e.data === "object" && e.data !== null ? e.data : {}) as {
      phase?: unknown;
      results?: unknown;
    };
    if (!Array.isArray(data.results)) continue;
    const outputs = data.phase === "mid-run" ? out.atCheckpoint : data.phase === "run-end" ? out.atRunEnd : undefined;
    for (const r of data.results as unknown[]) {
      if (typeof r !== "object" || r === null) continue;
      const { kind, entryId } = r as { kind?: unknown; entryId?: unknown };
      if (typeof entryId !== "string") continue;
      out.named.add(entryId);
      // Records older than item kinds name only large outputs.
      if (kind === undefined || kind === "large" || kind === "small") outputs?.add(entryId);
    }
  }
  // A pass handed over or queued behind a pending one lands its record runs later: the first output any
  // record judged says when the guard was at work.
  for (let i = 0; i < out.since; i++) {
    const id = (entries[i] as SnapEntry).id;
    if (!out.atCheckpoint.has(id) && !out.atRunEnd.has(id)) continue;
    out.since = i;
    break;
  }
  return out;
}

/**
 * The first run (an index into `starts`, the prompts of the runs before the current one, which starts
 * at `end`) that the guard was at work in: the run before the one holding its first record or
 * judged output, since a pass pending at a run end lands a run later at the earliest, and
 * at most MAX_SKIPPED_RUNS back. Runs before it are history from before the guard (installed on an
 * older session), or too old, and stay as they are.
 */
export function firstSkippableRun(starts: readonly number[], end: number, records: OutputRecords): number {
  let holding = starts.length;
  if (records.since < end) {
    while (holding > 0 && (starts[holding - 1] as number) > records.since) holding--;
    holding = Math.max(0, holding - 1);
  }
  return Math.max(0, holding - 1, starts.length - MAX_SKIPPED_RUNS);
}

/** Whether a finished run (its outputs) was left without a run-end pass: no run-end record lists any. */
export function runEndSkipped(outputIds: readonly string[], records: OutputRecords): boolean {
  return !outputIds.some((id) => records.atRunEnd.has(id));
}

/**
 * Of a skipped run's outputs that no record names, the ids its own run end would have judged: those
 * that pass the candidate rules and are small or large enough, the large ones only when together they
 * reach `minRunChars`.
 */
export function unjudgedOutputs(
  outputs: readonly SnapEntry[],
  config: Pick<
    GuardConfig,
    "minResultChars" | "smallResultMinChars" | "minRunChars" | "excludeTools" | "distillErrors"
  >,
): Set<string> {
  const from = chunkedFrom(config);
  const judgeable = outputs.filter((e) => passesCandidateRules(e, config, e.toolName ?? "tool"));
  const large = judgeable.filter((e) => e.text.length >= from);
  const small = judgeable.filter(
    (e) => e.text.length < from && config.smallResultMinChars > 0 && e.text.length >= config.smallResultMinChars,
  );
  // As runWorthDistilling at a run end: the large outputs together, or none.
  const worth = large.reduce((n, e) => n + e.text.length, 0) >= config.minRunChars;
  return new Set([...(worth ? large : []), ...small].map((e) => e.id));
}
