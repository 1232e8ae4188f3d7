// Every script in bench/ at its smallest size: `npm run bench:smoke` (and so .ci/run) runs each, so none can
// rot unnoticed. A test checks that every script in bench/ is listed here.

export interface SmokeRun {
  /** The script, relative to bench/. */
  script: string;
  args: string[];
}

export const SMOKE: readonly SmokeRun[] = [
  { script: "run.ts", args: ["--quick"] },
  { script: "hooks.ts", args: ["--small"] },
  { script: "checkpoints.ts", args: ["--turns", "4"] },
  { script: "profile.ts", args: ["--entries", "200", "--steps", "2"] },
  { script: "generate-sample.ts", args: ["--entries", "40", "--out", "{tmp}/generated.jsonl"] },
  { script: "sweep.ts", args: ["--only", "margin-2", "--sessions", "session"] },
  { script: "compare.ts", args: ["--base", "{repo}", "--rounds", "1", "--only", "outputs"] },
  { script: "figures.ts", args: ["--check"] },
  { script: "census.ts", args: ["--quick"] },
  { script: "boundary-shape.ts", args: ["--reps", "1"] },
  { script: "boundary-work.ts", args: ["--turns", "30", "--every", "10"] },
  { script: "print-mode.ts", args: ["--latency", "200"] },
  { script: "handover-money.ts", args: [] },
  { script: "routing-eval.ts", args: ["--size", "smallest"] },
  { script: "live-dollars.ts", args: ["--reps", "1"] },
  { script: "replay-scale.ts", args: ["bench/sample/session.jsonl"] },
  {
    script: "draw-removals.ts",
    args: [
      "--flagged",
      "2",
      "--unflagged",
      "2",
      "--out",
      "{tmp}/drawn.json",
      "test/fixtures/sessions/rycerzes__trl__session.jsonl",
    ],
  },
  // Every labelled removal already has its half, so this rewrites the fixture unchanged.
  { script: "split-labelled.ts", args: [] },
  // The fixtures are all in the split already, so this rewrites it unchanged.
  { script: "split-sessions.ts", args: ["--dir", "test/fixtures/sessions"] },
  { script: "held-out.ts", args: ["--half", "report", "--only", "trl", "--oracle"] },
  { script: "background.ts", args: ["--turns", "2", "--out", "{tmp}/BACKGROUND.md"] },
  { script: "cache-families.ts", args: ["test/fixtures/sessions"] },
  { script: "keep-rules.ts", args: ["--half", "tune"] },
  { script: "stub-facts.ts", args: ["--only", "trl"] },
  { script: "stub-facts-labelled.ts", args: [] },
  {
    script: "label-context.ts",
    args: ["--drawn", "test/fixtures/labelled-removals.json", "--session", "trl", "--text", "200"],
  },
  { script: "harm-rate.ts", args: ["--only", "trl"] },
  { script: "key-facts-speed.ts", args: [] },
  { script: "keep-rules-money.ts", args: ["--variants", "none,all", "--only", "trl"] },
  { script: "trade-curve.ts", args: ["--only", "today", "--money", "--sessions", "trl"] },
  { script: "pass-messages.ts", args: ["--entries", "200"] },
  { script: "skipped-runs-cost.ts", args: ["--entries", "300"] },
  { script: "turn-end-cost.ts", args: ["--turns", "10", "--rounds", "1"] },
  { script: "slope.ts", args: ["--sizes", "200", "--turns", "3", "--warm", "1", "--latency", "50", "--seed", "3"] },
  {
    script: "long-session.ts",
    args: ["--entries", "600", "--compactions", "2", "--turns", "3", "--latency", "50", "--out", "{tmp}/long.json"],
  },
];

/** Scripts that need something CI has only sometimes, run by .ci/run on their own. */
export const RUN_APART: readonly string[] = ["screenshot-report.ts"];

/** Run by `npm run bench:smoke` itself. */
export const RUNNER = "smoke.ts";
