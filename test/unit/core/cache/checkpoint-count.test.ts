// How many checkpoints a long run gets (issue 19): each output is judged mid-run once, and a checkpoint
// runs only when the outputs not judged yet reach the batch, so a run of N outputs gets at most about
// (their characters / midRunBatchChars) checkpoints, whether the outputs were edited or kept.
import { describe, expect, it } from "vitest";
import { planCheckpoint, type RunPlan } from "../../../../src/core/distill/plan.ts";
import { DEFAULT_CONFIG } from "../../../../src/core/shared/config.ts";
import type { SnapEntry } from "../../../../src/core/shared/types.ts";
import { mulberry32 } from "../../../kit/prng.ts";
import { assistantEntry, recordEntry, toolCall, toolResultEntry, userEntry } from "../../../kit/snap.ts";

/** A grep-like output of about `size` characters; every other one names the file the answer needs. */
function output(i: number, size: number): string {
  const line = `src/mod${i}.js:12: const entry = session.model; // ${i % 2 === 0 ? "session-manager" : "other"}\n`;
  return line.repeat(Math.ceil(size / line.length)).slice(0, size);
}

/** Runs `turns` turns, planning a checkpoint at each turn end; the record lists what it judged. */
function simulate(turns: number, outcome: "kept" | "distilled") {
  const rand = mulberry32(19);
  const entries: SnapEntry[] = [userEntry("u", "Where does the session model live?")];
  const judged: string[] = [];
  let checkpoints = 0;
  let chars = 0;
  for (let t = 1; t <= turns; t++) {
    const size = 8_000 + Math.floor(rand() * 37_000);
    chars += size;
    entries.push(assistantEntry(`a${t}`, "", [toolCall(`c${t}`, "bash", { command: `cat f${t % 60}.txt` })]));
    entries.push(toolResultEntry(`t${t}`, `c${t}`, "bash", output(t, size)));
    const plan = planCheckpoint(entries, DEFAULT_CONFIG, { family: "other" });
    if (plan.status !== "run") continue;
    checkpoints++;
    const ids = (plan as RunPlan).candidates.map((c) => c.entryId);
    judged.push(...ids);
    const results = ids.map((entryId) => ({
      kind: "large",
      entryId,
      outcome,
      reason: outcome === "kept" ? "whole-needed" : "chunks",
    }));
    entries.push(recordEntry(`r${t}`, { v: 1, phase: "mid-run", results }));
  }
  return { checkpoints, judged, chars };
}

describe("checkpoints in a long run", () => {
  for (const outcome of ["kept", "distilled"] as const) {
    it(`judge each output once and come no more often than the batch allows (outputs ${outcome})`, () => {
      const { checkpoints, judged, chars } = simulate(200, outcome);
      expect(new Set(judged).size).toBe(judged.length);
      // All but the youngest outputs (the age rule) are judged.
      expect(judged.length).toBeGreaterThanOrEqual(200 - DEFAULT_CONFIG.midRunMinAgeTurns - 4);
      expect(checkpoints).toBeLessThanOrEqual(Math.ceil(chars / DEFAULT_CONFIG.midRunBatchChars));
      expect(checkpoints).toBeGreaterThan(0);
    });
  }

  it("do not run again for outputs a checkpoint kept: the memo keeps them out of the batch", () => {
    const { checkpoints: kept } = simulate(120, "kept");
    const { checkpoints: distilled } = simulate(120, "distilled");
    expect(kept).toBe(distilled);
  });
});
