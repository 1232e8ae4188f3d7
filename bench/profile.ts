/**
 * A timeline of one pass's main-thread blocks, for finding what stalls (not a benchmark: no verdicts).
 *
 *   npm exec -- node bench/profile.ts [--entries 2000] [--steps 20,20] [--output grep:20] [--latency 100] [--quiet]
 *                                     [--http thread|main] [--classifier pi-ai|fake] [--colds 1]
 *
 * Runs the cold pass and then each steady step on a generated session, printing every loop gap over
 * 1.5 ms with the task or classifier events around it. The probe spins on setImmediate by default;
 * `--quiet` samples on a 1 ms interval instead, as the benchmark's verdicts do (the spinning probe
 * allocates on every loop turn, so it brings garbage collections of its own). `--classifier fake` answers
 * after the latency without pi-ai or HTTP, which leaves what the pass itself costs Pi's thread.
 */
import { PerformanceObserver } from "node:perf_hooks";
import { parseArgs } from "node:util";
import type { ClassifyFn } from "../src/main/pass/classify-queue.ts";
import {
  benchConfig,
  HookAdapter,
  loopbackClassify,
  passRunner,
  runHook,
  startedThreadFetch,
} from "../test/kit/hook.ts";
import { startLoopbackHost } from "../test/kit/loopback-host.ts";
import { fullGc, GC_KINDS, RunQueueClock } from "../test/kit/stall.ts";
import { appendedRun, baseSession, type OutputKind, output, outputRun, SessionSim } from "./lib/workloads.ts";

const { values } = parseArgs({
  options: {
    entries: { type: "string", default: "2000" },
    steps: { type: "string", default: "2,20,20" },
    output: { type: "string" },
    latency: { type: "string", default: "100" },
    quiet: { type: "boolean", default: false },
    http: { type: "string", default: "thread" },
    classifier: { type: "string", default: "pi-ai" },
    colds: { type: "string", default: "1" },
  },
});
if (values.http !== "thread" && values.http !== "main") throw new Error("--http is thread or main");
if (values.classifier !== "pi-ai" && values.classifier !== "fake") throw new Error("--classifier is pi-ai or fake");

const KEEP = "\\b(error|fail(ed|ure|s)?|throw)\\b";
const host = await startLoopbackHost({ latencyMs: Number(values.latency), keyword: KEEP, flags: "i" });
const runner = await passRunner("piscina");
let session = new HookAdapter(runner);
const events: Array<{ t: number; what: string }> = [];
const inner = session.runner.inner;
const origRun = inner.run.bind(inner);
inner.run = ((name, input, options) => {
  const t0 = performance.now();
  events.push({ t: t0, what: `task ${name} start` });
  const p = origRun(name, input, options);
  events.push({ t: performance.now(), what: `task ${name} posted (${(performance.now() - t0).toFixed(2)} ms)` });
  p.then(() => events.push({ t: performance.now(), what: `task ${name} done` })).catch(() => {});
  return p;
}) as typeof inner.run;
// The classifier as the extension calls it: pi-ai's client with its HTTP on the extension's HTTP thread
// (`--http main`: from the main thread, as before it existed).
const http = values.http === "thread" && values.classifier === "pi-ai" ? await startedThreadFetch() : undefined;
// `--classifier fake` answers "keep everything" after the latency without pi-ai or HTTP: what the pass
// itself costs the main thread, apart from the client.
const fake: ClassifyFn = (_req, opts) =>
  new Promise((resolve) => {
    const timer = setTimeout(() => resolve({ status: "error", error: "fake" }), Number(values.latency));
    opts.signal.addEventListener("abort", () => clearTimeout(timer), { once: true });
  });
const base = values.classifier === "fake" ? fake : loopbackClassify(host.baseUrl, http?.fetch);
const classify: typeof base = async (req, opts) => {
  events.push({ t: performance.now(), what: "classify start" });
  const out = await base(req, opts);
  events.push({ t: performance.now(), what: "classify done" });
  return out;
};
/** Collections during the current timeline, by kind. */
const gcByKind = new Map<string, { n: number; ms: number; max: number }>();
// Garbage collections show up in the timeline too: a pause on the main thread is a stall like any other.
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    const t = e.startTime;
    const kind = GC_KINDS[(e as { detail?: { kind?: number } }).detail?.kind ?? 0];
    events.push({ t, what: `gc ${kind ?? "?"} ${e.duration.toFixed(1)} ms` });
    events.push({ t: t + e.duration, what: `gc ${kind ?? "?"} ${e.duration.toFixed(1)} ms` });
    const sum = gcByKind.get(kind ?? "?") ?? { n: 0, ms: 0, max: 0 };
    gcByKind.set(kind ?? "?", { n: sum.n + 1, ms: sum.ms + e.duration, max: Math.max(sum.max, e.duration) });
  }
}).observe({ entryTypes: ["gc"] });
const config = benchConfig({ timeoutMs: 600_000, concurrency: 6 });

async function timeline<T>(label: string, run: () => Promise<T>): Promise<T> {
  events.length = 0;
  gcByKind.clear();
  // Gaps are own time: the run-queue wait (another thread had the core) is taken out.
  const gaps: Array<{ t: number; ms: number; wall: number }> = [];
  const clock = new RunQueueClock();
  let last = performance.now();
  let lastWait = clock.waitNs();
  let spinning = true;
  const expected = values.quiet ? 1 : 0;
  const sample = () => {
    const now = performance.now();
    const wait = clock.waitNs();
    const own = now - last - expected - (wait - lastWait) / 1e6;
    if (own > 1.5) gaps.push({ t: last, ms: own, wall: now - last - expected });
    last = now;
    lastWait = wait;
  };
  const spin = () => {
    sample();
    if (spinning) setImmediate(spin);
  };
  const interval = values.quiet ? setInterval(sample, 1) : undefined;
  if (!values.quiet) setImmediate(spin);
  const heapBefore = process.memoryUsage().heapUsed;
  const cpuBefore = process.threadCpuUsage();
  const t0 = performance.now();
  const out = await run();
  const cpu = process.threadCpuUsage(cpuBefore);
  const heapAfter = process.memoryUsage().heapUsed;
  spinning = false;
  clearInterval(interval);
  const total = performance.now() - t0;
  const worst = gaps.reduce((m, g) => Math.max(m, g.ms), 0);
  clock.close();
  console.log(`\n== ${label}: ${total.toFixed(1)} ms, worst own gap ${worst.toFixed(2)} ms, ${gaps.length} > 1.5 ms`);
  const gcs = [...gcByKind].map(([k, g]) => `${k} ${g.n}× ${g.ms.toFixed(0)} ms (max ${g.max.toFixed(1)})`);
  console.log(`  collections: ${gcs.join(", ") || "none"}`);
  // Garbage promoted to the old generation stays counted here until a full collection: a heap that grows
  // by far more than the pass keeps is young garbage that outlived its collections.
  const mib = (n: number) => (n / 2 ** 20).toFixed(0);
  console.log(
    `  heap used: ${mib(heapBefore)} → ${mib(heapAfter)} MiB; main-thread CPU ${((cpu.user + cpu.system) / 1000).toFixed(0)} ms`,
  );
  for (const g of gaps.sort((a, b) => b.ms - a.ms).slice(0, 8)) {
    const near = events.filter((e) => e.t >= g.t - 0.5 && e.t <= g.t + g.ms + 0.5).map((e) => e.what);
    const counts = new Map<string, number>();
    for (const n of new Set(near.filter((x) => x.startsWith("gc")))) counts.set(n, 0);
    for (const n of near) if (!n.startsWith("gc")) counts.set(n, (counts.get(n) ?? 0) + 1);
    const desc = [...counts].map(([k, n]) => (n > 1 ? `${k} ×${n}` : k)).join(", ");
    // (a GC is listed once, with its own duration)
    console.log(`  +${(g.t - t0).toFixed(1)} ms: ${g.ms.toFixed(2)} ms (wall ${g.wall.toFixed(2)})  [${desc}]`);
  }
  return out;
}

// Warm up pi-ai's client and the JIT as a running Pi would be (not shown).
{
  const warm = new HookAdapter(runner);
  await runHook(warm, new SessionSim(baseSession(200)).project(), classify, config);
  events.length = 0;
}
const newSim = () => {
  const s = new SessionSim(baseSession(Number(values.entries)));
  if (values.output) {
    const [kind, mb] = values.output.split(":") as [OutputKind, string];
    s.append(outputRun(output(kind, Number(mb) * 1024 * 1024), kind, "out", s.lastId));
  }
  return s;
};
let sim = newSim();
const pass = async (label: string) => {
  const context = sim.project();
  const r = await timeline(label, () => runHook(session, context, classify, config));
  console.log(`  ${r.status} ${r.reason ?? ""} requests ${r.requests}, edits ${r.edits.length}`);
  sim.applyPass(r.edits, r.record);
};
await pass("cold");
// `--colds N`: more first passes, each on a fresh session model and mirror from a collected heap, as the
// benchmark repeats them (the previous ones' session is garbage by then).
for (let i = 1; i < Number(values.colds); i++) {
  session = new HookAdapter(runner);
  sim = newSim();
  fullGc();
  await pass(`cold ${i + 1}`);
}
let seed = 100;
for (const n of (values.steps ?? "").split(",").filter(Boolean).map(Number)) {
  sim.append(appendedRun(n, seed++, `run${seed}`, sim.lastId));
  await pass(`+${n}`);
}
await runner.destroy();
await http?.close();
await host.close();
