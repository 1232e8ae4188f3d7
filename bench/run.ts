/**
 * Settling-latency and UI-stall benchmarks (issue 3): worker pool vs inline, Piscina vs Tinypool, on heavy
 * sessions and huge outputs, with pi-ai's real System One client against a loopback classifier.
 *
 *   npm run bench               # --quick: smoke suite, < 1 min on 2 cores (CI runs it, no thresholds)
 *   npm run bench:full          # --full: all sizes, more repetitions; regenerates bench/RESULTS.md
 *
 * Writes bench/out/results-<mode>.json (and bench/out/results-quick.md) and prints the tables.
 * `--only a,b` runs some scenarios (written to bench/out only); `--render <json>` re-renders saved results.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import type { PoolBackend, TaskRunner } from "../src/main/platform/pool.ts";
import { benchConfig, loopbackClassify, passRunner, startedThreadFetch } from "../test/kit/hook.ts";
import { startLoopbackHost } from "../test/kit/loopback-host.ts";
import { fullGc } from "../test/kit/stall.ts";
import { load1, machineInfo, referenceTimes } from "./lib/machine.ts";
import { type BenchMode, FULL, QUICK } from "./lib/mode.ts";
import type { PassEnv } from "./lib/pass.ts";
import { type BenchResults, renderMarkdown, renderText } from "./lib/report.ts";
import { releaseWorkloads } from "./lib/workloads.ts";
import { runBreakdown } from "./scenarios/breakdown.ts";
import { runChunking } from "./scenarios/chunking.ts";
import { runClient } from "./scenarios/client.ts";
import { runFloor } from "./scenarios/floor.ts";
import { runHang } from "./scenarios/hang.ts";
import { runOutputs } from "./scenarios/outputs.ts";
import { runPoolStart } from "./scenarios/pool-start.ts";
import { runRecall } from "./scenarios/recall.ts";
import { runSerialization } from "./scenarios/serialization.ts";
import { runSessions } from "./scenarios/sessions.ts";

/** What the loopback classifier keeps: chunks that mention an error (about a third of the chunks here). */
export const KEEP_KEYWORD = "\\b(error|fail(ed|ure|s)?|throw)\\b";

const { values } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    full: { type: "boolean", default: false },
    only: { type: "string" },
    render: { type: "string" },
  },
});
if (values.quick && values.full) throw new Error("choose --quick or --full");
const mode: BenchMode = values.full ? FULL : QUICK;
const only = values.only ? new Set(values.only.split(",")) : undefined;
const want = (name: string) => only === undefined || only.has(name);

const here = dirname(fileURLToPath(import.meta.url));
const outDir = join(here, "out");

/** Prints the tables and writes the Markdown: bench/RESULTS.md for a complete full run, else bench/out/. */
function writeReports(r: BenchResults, complete: boolean): string {
  process.stdout.write(`${renderText(r)}\n`);
  const path = r.mode === "full" && complete ? join(here, "RESULTS.md") : join(outDir, `results-${r.mode}.md`);
  writeFileSync(path, renderMarkdown(r));
  return path;
}

if (values.render) {
  // Re-render the tables and RESULTS.md from a saved JSON (after a change to the report only).
  const saved = JSON.parse(readFileSync(values.render, "utf8")) as BenchResults & { errors?: string[] };
  const path = writeReports(saved, (saved.errors ?? []).length === 0);
  process.stderr.write(`rendered ${values.render} → ${path}\n`);
  process.exit(0);
}
const started = performance.now();
const log = (line: string) => {
  // Each scenario starts from a collected heap holding only its own workloads: the previous one's data
  // and garbage are not its GC pauses.
  if (!line.startsWith(" ")) {
    releaseWorkloads();
    fullGc();
  }
  const load = line.startsWith(" ") ? "" : ` (load ${load1()})`;
  process.stderr.write(`[${((performance.now() - started) / 1000).toFixed(1)}s] ${line}${load}\n`);
};

log(`context-guard bench --${mode.name}: ${mode.reps} reps, sessions ${mode.sessionSizes.join("/")}`);
const results: BenchResults = {
  mode: mode.name,
  machine: { ...machineInfo(), speedStart: referenceTimes() },
  settings: {
    reps: mode.reps,
    slowReps: mode.slowReps,
    latencyMs: mode.latencyMs,
    concurrency: benchConfig().concurrency,
    timeoutMs: mode.timeoutMs,
    hangTimeoutMs: mode.hangTimeoutMs,
    recallTimeoutMs: mode.recallTimeoutMs,
    keepKeyword: KEEP_KEYWORD,
    steps: mode.steps,
  },
};

mkdirSync(outDir, { recursive: true });
const jsonPath = join(outDir, `results-${mode.name}.json`);
const errors: string[] = [];

/** Runs one scenario; a failure is reported and recorded, and the others still run. */
async function scenario(name: string, title: string, body: () => Promise<void>): Promise<void> {
  if (!want(name)) return;
  log(title);
  try {
    await body();
  } catch (error) {
    const message = `${name}: ${(error as Error).stack ?? String(error)}`;
    errors.push(message);
    log(`FAILED ${message}`);
  }
  // A checkpoint after every scenario: a long run that fails late keeps what it measured.
  writeFileSync(jsonPath, `${JSON.stringify({ ...results, errors }, null, 1)}\n`);
}

await scenario("floor", "probe floor (idle main thread, busy workers)", async () => {
  results.floor = await runFloor(mode, log);
});
await scenario("pool-start", "pool cold start (fresh processes)", async () => {
  results.poolStart = await runPoolStart(mode, log);
});
await scenario("chunking", "chunking throughput", async () => {
  results.chunking = runChunking(mode, log);
});
await scenario("serialization", "structured clone vs msgpackr", async () => {
  results.serialization = await runSerialization(mode, log);
});

const lb = await startLoopbackHost({ latencyMs: mode.latencyMs, keyword: KEEP_KEYWORD, flags: "i" });
// The extension's HTTP thread for classifier requests, started ahead as the extension does at a run's start.
const http = await startedThreadFetch();
try {
  const env: PassEnv = {
    classify: loopbackClassify(lb.baseUrl, http.fetch),
    classifyInline: loopbackClassify(lb.baseUrl),
    config: benchConfig({ timeoutMs: mode.timeoutMs }),
    latencyMs: mode.latencyMs,
  };
  // The pass runners openSessionGuard creates at session_start (one warm thread each), shared by the pass scenarios.
  const runners = new Map<PoolBackend, TaskRunner>();
  for (const b of mode.backends) runners.set(b, await passRunner(b));
  try {
    await scenario("sessions", "sessions: stall and settle per backend", async () => {
      results.sessions = (await runSessions(mode, env, runners, log)).samples;
    });
    await scenario("outputs", "single huge outputs", async () => {
      results.outputs = await runOutputs(mode, env, runners, log);
    });
    await scenario("hang", `hang case (timeoutMs ${mode.hangTimeoutMs})`, async () => {
      results.hang = await runHang(mode, env, runners.get("piscina") as TaskRunner, lb, log);
    });
  } finally {
    for (const r of runners.values()) await r.destroy();
  }
  await scenario("client", "classifier client cost per request", async () => {
    results.client = await runClient(mode, lb, log);
  });
  await scenario("breakdown", "breakdown of the main thread's work per pass", async () => {
    await lb.set({ latencyMs: 0 });
    try {
      results.breakdown = await runBreakdown(mode, { ...env, latencyMs: 0 }, log);
    } finally {
      await lb.set({ latencyMs: mode.latencyMs });
    }
  });
} finally {
  await http.close();
  await lb.close();
}
await scenario("recall", "recall with a catastrophic pattern", async () => {
  results.recall = await runRecall(mode, log);
});
results.seconds = Math.round((performance.now() - started) / 100) / 10;
results.machine.loadEnd = load1();
results.machine.speedEnd = referenceTimes();

writeFileSync(jsonPath, `${JSON.stringify({ ...results, errors }, null, 1)}\n`);
const mdPath = writeReports(results, only === undefined && errors.length === 0);
log(`wrote ${jsonPath} and ${mdPath} in ${results.seconds} s`);
if (errors.length > 0) {
  log(`${errors.length} scenario(s) failed`);
  process.exitCode = 1;
}
