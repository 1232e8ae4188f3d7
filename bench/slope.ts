/**
 * The guard's cost as a session grows (issue 41): a generated session of `--sizes` entries (no compaction,
 * so every request carries all of it) is resumed in Pi's SDK and given the census workload (bench/census.ts:
 * a scripted model that `cat`s one 8–45 KB real tool output per turn, the loopback classifier in its own
 * thread). One warm-up prompt of `--warm` turns, then one measured prompt of `--turns` turns. Each size runs
 * with the guard and with Pi alone, each in a child process of its own, and reports per measured turn:
 *
 * - Pi's thread CPU (process.threadCpuUsage), and the guard's part of it: the share of the thread's CPU
 *   profile samples with a frame of the project's `src/` on the stack;
 * - the CPU of the threads the guard started (pass pool, HTTP thread: /proc/self/task, those not there
 *   before the session opened);
 * - the guard's `context` handler per request, p50 and max, and the time all its handlers held the thread
 *   (each call until it returns: bench/lib/handler-probe.ts);
 * - the checkpoint passes' time (their records' `ms`), and the process's peak RSS and heap after the run.
 *
 * A TUI host is simulated (the footer is drawn), as a terminal user runs it.
 *
 *   npx node bench/slope.ts [--sizes 1000,5000,10000,20000] [--turns 40] [--latency 200] [--out FILE]
 */
import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import type { JsonObject } from "@earendil-works/pi-ai";
import contextGuard from "../src/main/index.ts";
import { generateSession, writeSessionFile } from "../test/kit/generate.ts";
import { capturingUi } from "../test/kit/hook-probe.ts";
import { startLoopbackHost } from "../test/kit/loopback-host.ts";
import { createTestSession, type FauxResponse } from "../test/kit/sdk-session.ts";
import { censusOutputs } from "./lib/census-outputs.ts";
import { attribute, startCpuProfile } from "./lib/cpu-profile.ts";
import { timedExtension } from "./lib/handler-probe.ts";
import { load1, machineInfo } from "./lib/machine.ts";
import { median } from "./lib/stats.ts";

const { values } = parseArgs({
  options: {
    sizes: { type: "string", default: "1000,5000,10000,20000" },
    turns: { type: "string", default: "40" },
    warm: { type: "string", default: "2" },
    latency: { type: "string", default: "200" },
    modes: { type: "string", default: "pi,guard" },
    seed: { type: "string", default: "7" },
    out: { type: "string" },
    label: { type: "string", default: "" },
    /** Internal: run one size and mode in this process and print its result as JSON. */
    child: { type: "string" },
  },
});
const REPO = resolve(import.meta.dirname, "..");
const SESSIONS = resolve(REPO, "../shared/sessions");
const TURNS = Number(values.turns);
const WARM = Number(values.warm);

interface Result {
  mode: "pi" | "guard";
  entries: number;
  turns: number;
  mainCpuMs: number;
  guardMainMs: number;
  /** Of it, the passes' work (pipeline, pool, classifier client): the rest is the hooks' own. */
  guardPassMs: number;
  guardThreadsMs: number;
  contextP50: number;
  contextMax: number;
  contextCount: number;
  handlersMs: Record<string, number>;
  checkpoints: number[];
  peakRssMiB: number;
  heapMiB: number;
  loadStart: number;
  /** The guard's costliest functions on Pi's thread (innermost project frame), ms per turn. */
  top: Array<[string, number]>;
  /** The rest of Pi's thread by innermost frame (Pi, V8, the garbage collector), ms per turn. */
  rest: Array<[string, number]>;
}

/** The generated session of this size, kept under bench/out between runs. */
function sessionFile(entries: number): string {
  const file = join(REPO, `bench/out/slope-${entries}-${values.seed}.jsonl`);
  if (!existsSync(file)) {
    writeSessionFile(file, generateSession({ entries, seed: Number(values.seed) }), "/tmp", "bench/slope.ts");
  }
  return file;
}

/** CPU time of each thread of this process, ns (schedstat's first field). */
function threadTimes(): Map<string, number> {
  const out = new Map<string, number>();
  for (const tid of readdirSync("/proc/self/task")) {
    try {
      out.set(tid, Number(readFileSync(`/proc/self/task/${tid}/schedstat`, "utf8").split(" ")[0]));
    } catch {
      // The thread ended.
    }
  }
  return out;
}

/**
 * A frame of a pass's own work on Pi's thread (approximately: the pipeline, its validation and mirror, the
 * pool, the classifier's client), not of the hooks' (the footer's snapshot, the context hook, the boundary).
 */
const passFrame = (frame: string) =>
  /src\/(main\/pass\/(run-pass|pass-worker|pass-pipeline|classify-queue|worker-mirror|revalidate|validate)|main\/platform\/(pool|thread-fetch)|main\/session\/background-pass|core\/classifier|core\/distill)/.test(
    frame,
  );

function responses(files: number, turns: number): FauxResponse[] {
  return Array.from({ length: turns }, (_, i) => ({
    toolCalls: [{ name: "bash", arguments: { command: `cat out${i % files}.txt` } as JsonObject }],
  }));
}

async function child(mode: "pi" | "guard", entries: number): Promise<Result> {
  const loadStart = load1();
  const files = censusOutputs(SESSIONS);
  const agentDir = await mkdtemp(join(tmpdir(), "cg-slope-"));
  const configPath = join(agentDir, "guard.json");
  await writeFile(configPath, JSON.stringify({ timeoutMs: 30_000, telemetry: false, settleBudgetMs: 150 }));
  process.env.PI_CONTEXT_GUARD_CONFIG = configPath;
  mkdirSync(join(agentDir, "sessions"));
  const copy = join(agentDir, "sessions", "session.jsonl");
  copyFileSync(sessionFile(entries), copy);
  const classifier = await startLoopbackHost({
    latencyMs: Number(values.latency),
    keyword: "error|fail|TODO",
    flags: "i",
  });
  const before = threadTimes();
  const guard = timedExtension(contextGuard);
  const s = await createTestSession({
    agentDir,
    sessionFile: copy,
    sessionDir: join(agentDir, "sessions"),
    extensionFactories: mode === "guard" ? [guard.extension] : [],
    classifierBaseUrl: classifier.baseUrl,
    keepContexts: false,
    responses: [...responses(files.length, WARM), "Warm.", ...responses(files.length, TURNS), "Done."],
  });
  s.session.extensionRunner.setUIContext(capturingUi().ui, "tui");
  for (let i = 0; i < files.length; i++) await writeFile(join(s.cwd, `out${i}.txt`), files[i] as string);
  try {
    await s.session.prompt("Warm up");
    guard.recording = true;
    const profile = await startCpuProfile(REPO, 500);
    const cpu0 = process.threadCpuUsage();
    const threads0 = threadTimes();
    await s.session.prompt("Work through the outputs");
    const cpu = process.threadCpuUsage(cpu0);
    const threads1 = threadTimes();
    const samples = await profile.stop();
    guard.recording = false;
    const top = attribute(
      samples.filter((x) => x.ours),
      [{ start: 0, end: Number.POSITIVE_INFINITY }],
    )
      .slice(0, 12)
      .map((a): [string, number] => [a.own, Math.round((a.ms / TURNS) * 1000) / 1000]);
    const rest = attribute(
      samples.filter((x) => !x.ours),
      [{ start: 0, end: Number.POSITIVE_INFINITY }],
    )
      .slice(0, 12)
      .map((a): [string, number] => [a.own, Math.round((a.ms / TURNS) * 1000) / 1000]);
    const mainCpuMs = (cpu.user + cpu.system) / 1000;
    const all = samples.reduce((a, x) => a + x.ms, 0);
    const ours = samples.filter((x) => x.ours).reduce((a, x) => a + x.ms, 0);
    const pass = samples.filter((x) => x.ours && x.stack.some(passFrame)).reduce((a, x) => a + x.ms, 0);
    let guardThreadsNs = 0;
    for (const [tid, t] of threads1) {
      if (before.has(tid) || tid === String(process.pid)) continue;
      guardThreadsNs += t - (threads0.get(tid) ?? 0);
    }
    const context = guard.windows.get("context") ?? [];
    const handlersMs: Record<string, number> = {};
    for (const [event, ms] of guard.windows) handlersMs[event] = ms.reduce((a, b) => a + b, 0) / TURNS;
    const checkpoints: number[] = [];
    for (const e of s.session.sessionManager.getBranch() as Array<{ customType?: string; data?: unknown }>) {
      const d = e.data as { phase?: string; ms?: number } | undefined;
      if (e.customType === "context-guard" && d?.phase === "mid-run" && typeof d.ms === "number")
        checkpoints.push(d.ms);
    }
    return {
      mode,
      entries,
      turns: TURNS,
      mainCpuMs: mainCpuMs / TURNS,
      guardMainMs: all > 0 ? (mainCpuMs * ours) / all / TURNS : 0,
      guardPassMs: all > 0 ? (mainCpuMs * pass) / all / TURNS : 0,
      guardThreadsMs: guardThreadsNs / 1e6 / TURNS,
      contextP50: context.length ? median(context) : 0,
      contextMax: context.length ? Math.max(...context) : 0,
      contextCount: context.length,
      handlersMs,
      checkpoints,
      peakRssMiB: Math.round(process.resourceUsage().maxRSS / 1024),
      heapMiB: Math.round(process.memoryUsage().heapUsed / 1024 ** 2),
      loadStart,
      top,
      rest,
    };
  } finally {
    await s.dispose();
    await classifier.close();
  }
}

const f1 = (x: number) => (x >= 100 ? x.toFixed(0) : x.toFixed(1));
const f2 = (x: number) => (x >= 10 ? x.toFixed(1) : x.toFixed(2));

function table(rows: Result[]): string {
  const head = [
    "Entries",
    "Pi alone: Pi's thread CPU / turn",
    "Guard: Pi's thread CPU / turn",
    "… of it the guard's (its hooks / its passes)",
    "Guard's threads CPU / turn",
    "`context` per request p50 · max",
    "Guard's handlers / turn",
    "Checkpoint passes (ms)",
    "Peak RSS: Pi alone / guard",
  ];
  const lines = [`| ${head.join(" | ")} |`, `|${head.map(() => "---:").join("|")}|`];
  for (const entries of [...new Set(rows.map((r) => r.entries))]) {
    const pi = rows.find((r) => r.entries === entries && r.mode === "pi");
    const g = rows.find((r) => r.entries === entries && r.mode === "guard");
    const handlers = g ? Object.values(g.handlersMs).reduce((a, b) => a + b, 0) : undefined;
    lines.push(
      `| ${entries.toLocaleString("en")} | ${pi ? `${f1(pi.mainCpuMs)} ms` : "–"} | ${g ? `${f1(g.mainCpuMs)} ms` : "–"} | ${
        g ? `${f1(g.guardMainMs)} ms (${f1(g.guardMainMs - g.guardPassMs)} / ${f1(g.guardPassMs)})` : "–"
      } | ${g ? `${f1(g.guardThreadsMs)} ms` : "–"} | ${g ? `${f2(g.contextP50)} · ${f2(g.contextMax)} ms` : "–"} | ${
        handlers !== undefined ? `${f2(handlers)} ms` : "–"
      } | ${g?.checkpoints.length ? g.checkpoints.map((x) => x.toFixed(0)).join(", ") : "–"} | ${pi?.peakRssMiB ?? "–"} / ${
        g?.peakRssMiB ?? "–"
      } MiB |`,
    );
  }
  return lines.join("\n");
}

if (values.child) {
  const [mode, entries] = values.child.split(":");
  const result = await child(mode === "guard" ? "guard" : "pi", Number(entries));
  console.log(JSON.stringify(result));
  process.exit(0);
}

const m = machineInfo();
const rows: Result[] = [];
for (const entries of values.sizes.split(",").map(Number)) {
  sessionFile(entries);
  for (const mode of values.modes.split(",")) {
    const args = [...process.execArgv, import.meta.filename, "--child", `${mode}:${entries}`];
    for (const k of ["turns", "warm", "latency", "seed"] as const) args.push(`--${k}`, String(values[k]));
    const out = execFileSync(process.execPath, args, { cwd: REPO, encoding: "utf8", maxBuffer: 1 << 26 });
    const row = JSON.parse(out.trim().split("\n").at(-1) as string) as Result;
    rows.push(row);
    console.error(JSON.stringify(row));
  }
}
const text = [
  `Slope${values.label ? ` (${values.label})` : ""}, ${m.date}: generated sessions resumed, ${WARM} warm-up turns, then ${TURNS} census turns measured; classifier ${values.latency} ms; settleBudgetMs 150; ${m.cpuModel}, ${m.cores} cores, Node ${m.node}, load ${m.loadStart} at the start, ${load1()} at the end.`,
  "",
  table(rows),
  "",
].join("\n");
console.log(text);
if (values.out) await writeFile(values.out, text);
