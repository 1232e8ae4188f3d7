import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import type { JsonObject } from "@earendil-works/pi-ai";
import { HOOK_PROBE, hookProbeEnd } from "../test/kit/hook-probe.ts";
import { startLoopbackHost } from "../test/kit/loopback-host.ts";
import { createTestSession, type FauxResponse } from "../test/kit/sdk-session.ts";
import { censusOutputs } from "./lib/census-outputs.ts";
import { attribute, type Sample, stacksIn, startCpuProfile } from "./lib/cpu-profile.ts";
import { machineInfo } from "./lib/machine.ts";

const { values } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    runs: { type: "string" },
    out: { type: "string" },
    modes: { type: "string", default: "both" },
    "cpu-prof": { type: "boolean", default: false },
    /** settleBudgetMs for the guard (unset: the SDK's print mode waits for the run end). */
    settle: { type: "string" },
    /** Instead of waiting for quiet: two follow-up prompts, this many ms apart, after the run. */
    "follow-ups": { type: "string" },
  },
});
const followUpMs = values["follow-ups"] === undefined ? undefined : Number(values["follow-ups"]);
const REPO = resolve(import.meta.dirname, "..");
const EXTENSION = join(REPO, "src/main/index.ts");
const SESSIONS = resolve(REPO, "../shared/sessions");
/** A gap of the 1 ms probe longer than this is a block. */
const GAP_MS = 3;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Workload {
  turns: number;
  latencyMs: number;
}

function workloads(): Workload[] {
  const spec = values.runs ?? (values.quick ? "40:200" : "500:200,200:200,200:1000");
  return spec.split(",").map((w) => {
    const [turns, latency] = w.split(":").map(Number);
    if (!Number.isInteger(turns) || !Number.isInteger(latency)) throw new Error(`--runs: bad workload "${w}"`);
    return { turns: turns as number, latencyMs: latency as number };
  });
}

const outputs = () => censusOutputs(SESSIONS);

interface Window {
  event: string;
  start: number;
  end: number;
}

interface ProbeGlobal {
  __cgHookProbe?: (session: string, event: string, edge: "start" | "end") => void;
}

/** Records hook windows (between the probes loaded around the guard) and 1 ms probe gaps. */
function observe() {
  const windows: Window[] = [];
  const open = new Map<string, number>();
  (globalThis as ProbeGlobal).__cgHookProbe = (_session, event, edge) => {
    const now = performance.now();
    if (edge === "start") open.set(event, now);
    else {
      const start = open.get(event);
      if (start !== undefined) windows.push({ event, start, end: now });
      open.delete(event);
    }
  };
  const gaps: Array<{ start: number; end: number }> = [];
  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    if (now - last > GAP_MS) gaps.push({ start: last, end: now });
    last = now;
  }, 1);
  return {
    windows,
    gaps,
    stop() {
      clearInterval(timer);
      (globalThis as ProbeGlobal).__cgHookProbe = undefined;
    },
  };
}

interface Row {
  mode: "Pi alone" | "guard";
  workload: Workload;
  runMs: number;
  turnEndSumMs: number;
  turnEndMaxMs: number;
  settleMs: number;
  gapMaxMs: number;
  hookGapMaxMs: number;
  hookGapEvent: string;
  /**
   * The longest gap that overlaps a hook's window at all. A block that starts in the same event-loop turn
   * as the window (the handler's first synchronous stretch) begins before it, so only this counts it.
   */
  touchGapMs: number;
  checkpoints: number;
  editsInRun: number;
  editsAfterNext: number;
  nextSettleMs: number;
  nextTurnEndMaxMs: number;
  requests: number;
}

type Branch = Array<{ type: string; customType?: string; data?: { phase?: string } }>;

async function runOnce(mode: Row["mode"], workload: Workload, files: string[]): Promise<Row> {
  const agentDir = await mkdtemp(join(tmpdir(), "cg-census-"));
  const configPath = join(agentDir, "guard.json");
  const settle = values.settle === undefined ? {} : { settleBudgetMs: Number(values.settle) };
  await writeFile(configPath, JSON.stringify({ timeoutMs: 30_000, telemetry: false, ...settle }));
  process.env.PI_CONTEXT_GUARD_CONFIG = configPath;
  const classifier = await startLoopbackHost({ latencyMs: workload.latencyMs, keyword: "error|fail|TODO", flags: "i" });
  const responses: FauxResponse[] = [];
  for (let i = 0; i < workload.turns; i++) {
    responses.push({
      toolCalls: [{ name: "bash", arguments: { command: `cat out${i % files.length}.txt` } as JsonObject }],
    });
  }
  if (followUpMs !== undefined) responses.push("Done.", "Ok.");
  else responses.push("Done.");
  responses.push({ toolCalls: [{ name: "bash", arguments: { command: "echo ok" } }] }, "Thanks.");
  const s = await createTestSession({
    agentDir,
    extensionPaths: mode === "guard" ? [HOOK_PROBE, EXTENSION] : [HOOK_PROBE],
    extensionFactories: [hookProbeEnd],
    classifierBaseUrl: classifier.baseUrl,
    responses,
  });
  for (let i = 0; i < files.length; i++) await writeFile(join(s.cwd, `out${i}.txt`), files[i] as string);
  const branch = () => s.session.sessionManager.getBranch() as Branch;
  const edits = () => branch().filter((e) => e.type === "context_edit").length;
  try {
    const seen = observe();
    const profiler = values["cpu-prof"] && mode === "guard" ? await startCpuProfile(REPO) : undefined;
    const t0 = performance.now();
    await s.session.prompt("Work through the outputs");
    const t1 = performance.now();
    if (profiler) printProfile(await profiler.stop(), seen.windows, seen.gaps, t0, t1);
    const editsInRun = edits();
    const checkpoints = branch().filter((e) => e.customType === "context-guard" && e.data?.phase === "mid-run").length;
    const inRun = seen.windows.filter((w) => w.start >= t0 && w.end <= t1);
    const hookGaps = seen.gaps
      .filter((g) => g.start >= t0 && g.end <= t1)
      .flatMap((g) => {
        const w = inRun.find((x) => g.start >= x.start && g.end <= x.end);
        return w ? [{ ms: g.end - g.start, event: w.event }] : [];
      });
    const turnEnds = inRun.filter((w) => w.event === "turn_end").map((w) => w.end - w.start);
    const settle = inRun.filter((w) => w.event === "agent_before_settle").map((w) => w.end - w.start);
    const worstHookGap = hookGaps.reduce((a, b) => (b.ms > a.ms ? b : a), { ms: 0, event: "–" });
    const touchGapMs = Math.max(
      0,
      ...seen.gaps
        .filter((g) => g.start >= t0 && g.end <= t1 && inRun.some((w) => g.start < w.end && g.end > w.start))
        .map((g) => g.end - g.start),
    );
    const runGaps = seen.gaps.filter((g) => g.start >= t0 && g.end <= t1).map((g) => g.end - g.start);
    // The user reads the answer: the background work ends (no classifier request for a while), or
    // (--follow-ups) types a follow-up some seconds later, then the last prompt as long after that.
    let quiet = 0;
    let requests = await classifier.takeCount();
    if (followUpMs !== undefined) {
      await sleep(followUpMs);
      await s.session.prompt("Next");
      await sleep(followUpMs);
      quiet = Number.POSITIVE_INFINITY;
    }
    for (let i = 0; i < 600 && quiet < workload.latencyMs + 1500; i++) {
      await sleep(250);
      const n = await classifier.takeCount();
      requests += n;
      quiet = n > 0 ? 0 : quiet + 250;
    }
    const t2 = performance.now();
    await s.session.prompt("Thanks");
    const t3 = performance.now();
    seen.stop();
    const next = seen.windows.filter((w) => w.start >= t2 && w.end <= t3);
    requests += await classifier.takeCount();
    return {
      mode,
      workload,
      runMs: t1 - t0,
      turnEndSumMs: turnEnds.reduce((a, b) => a + b, 0),
      turnEndMaxMs: Math.max(0, ...turnEnds),
      settleMs: Math.max(0, ...settle),
      gapMaxMs: Math.max(0, ...runGaps),
      hookGapMaxMs: worstHookGap.ms,
      hookGapEvent: worstHookGap.event,
      touchGapMs,
      checkpoints,
      editsInRun,
      editsAfterNext: edits(),
      nextSettleMs: Math.max(0, ...next.filter((w) => w.event === "agent_before_settle").map((w) => w.end - w.start)),
      nextTurnEndMaxMs: Math.max(0, ...next.filter((w) => w.event === "turn_end").map((w) => w.end - w.start)),
      requests,
    };
  } finally {
    await s.dispose();
    await classifier.close();
  }
}

/** What Pi's thread ran inside the hook windows of the run, by hook, and in the longest gaps inside them. */
function printProfile(
  samples: Sample[],
  windows: Window[],
  gaps: Array<{ start: number; end: number }>,
  t0: number,
  t1: number,
): void {
  const inRun = windows.filter((w) => w.start >= t0 && w.end <= t1);
  for (const event of new Set(inRun.map((w) => w.event))) {
    const mine = inRun.filter((w) => w.event === event);
    const total = mine.reduce((a, w) => a + w.end - w.start, 0);
    console.error(`\n${event}: ${mine.length} windows, ${total.toFixed(0)} ms; CPU samples inside, by own frame:`);
    for (const a of attribute(samples, mine).slice(0, 16)) {
      console.error(`  ${a.ms.toFixed(1)} ms  ${a.own}  [leaf: ${a.leaf}]`);
    }
    for (const w of [...mine].sort((a, b) => b.end - b.start - (a.end - a.start)).slice(0, 3)) {
      console.error(` longest window ${(w.end - w.start).toFixed(1)} ms at +${(w.start - t0).toFixed(0)} ms:`);
      for (const line of stacksIn(samples, w.start, w.end)) console.error(`    ${line}`);
    }
  }
  const hookGaps = gaps
    .filter((g) => g.start >= t0 && g.end <= t1)
    .flatMap((g) => {
      const w = inRun.find((x) => g.start >= x.start && g.end <= x.end);
      return w ? [{ ...g, event: w.event }] : [];
    })
    .sort((a, b) => b.end - b.start - (a.end - a.start))
    .slice(0, 8);
  for (const g of hookGaps) {
    console.error(`\ngap ${(g.end - g.start).toFixed(1)} ms in ${g.event} at +${(g.start - t0).toFixed(0)} ms:`);
    for (const line of stacksIn(samples, g.start, g.end)) console.error(`  ${line}`);
  }
}

const ms = (x: number) =>
  x >= 10_000 ? `${(x / 1000).toFixed(1)} s` : x >= 1000 ? `${(x / 1000).toFixed(2)} s` : `${x.toFixed(0)} ms`;
const pct = (part: number, whole: number) => `${((100 * part) / Math.max(1, whole)).toFixed(1)}%`;

function table(rows: Row[]): string {
  const head = [
    "Workload",
    "Guard",
    "Run",
    "`turn_end` sum (share)",
    "Longest `turn_end`",
    "Run end (`agent_before_settle`)",
    "Longest gap in a hook",
    "Longest gap touching a hook",
    "Longest gap, whole run",
    "Checkpoints",
    "Edits in the run / after the next prompt",
    "Next prompt: longest `turn_end` / run end",
    "Classifier requests",
  ];
  const lines = [`| ${head.join(" | ")} |`, `|${head.map((_, i) => (i < 2 ? "---" : "---:")).join("|")}|`];
  for (const r of rows) {
    lines.push(
      `| ${r.workload.turns} turns, ${r.workload.latencyMs} ms | ${r.mode} | ${ms(r.runMs)} | ${ms(r.turnEndSumMs)} (${pct(r.turnEndSumMs, r.runMs)}) | ${ms(r.turnEndMaxMs)} | ${ms(r.settleMs)} | ${ms(r.hookGapMaxMs)} (${r.hookGapEvent}) | ${ms(r.touchGapMs)} | ${ms(r.gapMaxMs)} | ${r.checkpoints} | ${r.editsInRun} / ${r.editsAfterNext} | ${ms(r.nextTurnEndMaxMs)} / ${ms(r.nextSettleMs)} | ${r.requests} |`,
    );
  }
  return lines.join("\n");
}

const files = outputs();
const rows: Row[] = [];
const m = machineInfo();
for (const w of workloads()) {
  const modes =
    values.modes === "guard"
      ? (["guard"] as const)
      : values.modes === "pi"
        ? (["Pi alone"] as const)
        : (["Pi alone", "guard"] as const);
  for (const mode of modes) {
    const row = await runOnce(mode, w, files);
    rows.push(row);
    console.error(`${w.turns} turns, ${w.latencyMs} ms, ${mode}: run ${ms(row.runMs)}, settle ${ms(row.settleMs)}`);
  }
}
const text = [
  `Census, ${m.date}: ${files.length} real tool outputs of 8–45 KB, timeoutMs 30,000, settleBudgetMs ${values.settle ?? "unset (the SDK's print mode waits for the run end)"}, other settings default.`,
  followUpMs === undefined
    ? "After the run: quiet, then one more prompt."
    : `After the run: two follow-up prompts, ${followUpMs} ms apart (the last column counts edits after both).`,
  `${m.cpuModel}, ${m.cores} cores, Node ${m.node}, load ${m.loadStart} at the start.`,
  "",
  table(rows),
  "",
].join("\n");
console.log(text);
if (values.out) await writeFile(values.out, text);
process.exit(0);
