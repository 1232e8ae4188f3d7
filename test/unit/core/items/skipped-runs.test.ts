// When the guard was at work from: a run-end pass that waited behind a pending one lands its record runs
// later, so the first output any record judged (not only a checkpoint's) marks it. A run whose own run
// end was dropped in between is then still a skipped run, and a later run end judges its outputs.
import { describe, expect, it } from "vitest";
import { firstSkippableRun, readOutputRecords } from "../../../../src/core/items/skipped-runs.ts";
import type { SnapEntry } from "../../../../src/core/shared/types.ts";
import { recordEntry, toolResultEntry, userEntry } from "../../../kit/snap.ts";

/** Runs a, b, c: a prompt and one output each; then the record of run a's run end, landed after c. */
function session(phase: "run-end" | "mid-run"): SnapEntry[] {
  return [
    userEntry("ua", "a"),
    toolResultEntry("ta", "ca", "bash", "out a"),
    userEntry("ub", "b"),
    toolResultEntry("tb", "cb", "bash", "out b"),
    userEntry("uc", "c"),
    toolResultEntry("tc", "cc", "bash", "out c"),
    userEntry("ud", "later"),
    recordEntry("r", { v: 1, phase, results: [{ kind: "large", entryId: "ta", outcome: "kept", reason: "x" }] }),
  ];
}

describe("readOutputRecords: since", () => {
  it.each(["run-end", "mid-run"] as const)(
    "is the first output a %s record judged, though it landed runs later",
    (phase) => {
      const entries = session(phase);
      const records = readOutputRecords(entries);
      expect(records.since).toBe(1);
      // Runs a, b and c (prompts at 0, 2, 4; the current one at 6) may all count as skipped.
      expect(firstSkippableRun([0, 2, 4], 6, records)).toBe(0);
    },
  );
});
