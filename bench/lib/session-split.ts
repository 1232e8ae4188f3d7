/**
 * The fixed split of the real sessions into a tuning half (rules may be fitted on it) and a held-out half
 * (the figures docs and the README quote), made once by bench/split-sessions.ts.
 */
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";

export interface SessionSplit {
  seed: number;
  tune: string[];
  report: string[];
}

export type Half = "tune" | "report";

export const SPLIT_FILE = resolve(import.meta.dirname, "../session-split.json");
export const SHARED_SESSIONS = resolve(import.meta.dirname, "../../../shared/sessions");

export function readSplit(): SessionSplit {
  return JSON.parse(readFileSync(SPLIT_FILE, "utf8")) as SessionSplit;
}

const FIXTURES = resolve(import.meta.dirname, "../../test/fixtures/sessions");

/** The paths of one half's sessions that are present in `dir` (or among the committed fixtures). */
export function halfPaths(half: Half, dir = SHARED_SESSIONS): string[] {
  return readSplit()
    [half].map((f) => [join(dir, f), join(FIXTURES, f)].find((p) => existsSync(p)))
    .filter((p): p is string => p !== undefined);
}

/** What the session's assistant entries record as billed (usage.cost.total), in dollars. */
export function recordedDollars(jsonl: string): number {
  let total = 0;
  for (const line of jsonl.split("\n")) {
    if (!line.includes('"usage"')) continue;
    try {
      const cost = (JSON.parse(line) as { message?: { usage?: { cost?: { total?: unknown } } } }).message?.usage?.cost
        ?.total;
      if (typeof cost === "number" && Number.isFinite(cost)) total += cost;
    } catch {
      // A damaged line bills nothing here; the replay reports it.
    }
  }
  return total;
}
