/**
 * Where should pi-ai's classifier client run? The same classifier requests (a 2,000-entry session's first
 * pass, three times over) through pi-ai's System One client, six in flight, against the loopback
 * classifier: once on the main thread, as the extension runs them today, and once in a worker thread that
 * the main thread only hands requests to. Reports Pi's main thread in both: longest own stall (quiet
 * probe), CPU, and garbage-collection pauses. An input for a design decision, not part of the suite.
 *
 *   npm exec -- node bench/client-in-worker.ts [--latency 20] [--reps 3]
 */
import { PerformanceObserver } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { Worker } from "node:worker_threads";
import { planRunEnd } from "../src/core/distill/plan.ts";
import type { ClassifierOutcome, ClassifierRequest } from "../src/core/shared/types.ts";
import { SnapshotBuilder } from "../src/main/pass/snapshot.ts";
import { nextTurn } from "../src/main/platform/pace.ts";
import { toProjection } from "../test/kit/generate.ts";
import { benchConfig, loopbackClassify, startedThreadFetch } from "../test/kit/hook.ts";
import { startLoopbackHost } from "../test/kit/loopback-host.ts";
import { fullGc, measureStall, ownStall } from "../test/kit/stall.ts";
import { summarize } from "./lib/stats.ts";
import { baseSession } from "./lib/workloads.ts";

const { values } = parseArgs({
  options: { latency: { type: "string", default: "20" }, reps: { type: "string", default: "3" } },
});
const concurrency = benchConfig().concurrency;
const host = await startLoopbackHost({ latencyMs: Number(values.latency), keyword: "error", flags: "i" });
const plan = planRunEnd(new SnapshotBuilder().entries(toProjection(baseSession(2000))), benchConfig());
if (plan.status !== "run") throw new Error("the workload planned no requests");
const requests: ClassifierRequest[] = [...plan.requests, ...plan.requests, ...plan.requests];

const onMain = loopbackClassify(host.baseUrl);
const worker = new Worker(new URL("./lib/client-worker.ts", import.meta.url), {
  workerData: { baseUrl: host.baseUrl },
});
const threadFetch = await startedThreadFetch();
const viaThreadFetch = loopbackClassify(host.baseUrl, threadFetch.fetch);
const waiting = new Map<number, (outcome: ClassifierOutcome) => void>();
worker.on("message", (m: { id: number; outcome: ClassifierOutcome }) => {
  waiting.get(m.id)?.(m.outcome);
  waiting.delete(m.id);
});
let ids = 0;
const clients: Record<string, (r: ClassifierRequest) => Promise<ClassifierOutcome>> = {
  "main thread": (r) => onMain(r, { signal: new AbortController().signal, timeoutMs: 60_000 }),
  "main thread, HTTP in a worker (thread-fetch)": (r) =>
    viaThreadFetch(r, { signal: new AbortController().signal, timeoutMs: 60_000 }),
  "worker thread": (r) =>
    new Promise((resolve) => {
      const id = ids++;
      waiting.set(id, resolve);
      worker.postMessage({ id, request: r });
    }),
};

let gcMs = 0;
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) gcMs += e.duration;
}).observe({ entryTypes: ["gc"] });

const rows: Record<string, { stall: number[]; cpu: number[]; gc: number[]; wall: number[] }> = {};
for (let rep = 0; rep < Number(values.reps); rep++) {
  for (const [name, call] of Object.entries(clients)) {
    fullGc();
    gcMs = 0;
    const m = await measureStall(async () => {
      let next = 0;
      // Like the queue: `concurrency` slots, each call started in an event-loop turn of its own.
      const slot = async () => {
        while (next < requests.length) {
          const r = requests[next++] as ClassifierRequest;
          await nextTurn();
          const outcome = await call(r);
          if (outcome.status !== "stop") throw new Error(`classifier: ${outcome.error}`);
        }
      };
      await Promise.all(Array.from({ length: concurrency }, slot));
    }, "quiet");
    const row = rows[name] ?? { stall: [], cpu: [], gc: [], wall: [] };
    rows[name] = row;
    row.stall.push(ownStall(m.stall));
    row.cpu.push(m.cpuMs ?? Number.NaN);
    row.gc.push(gcMs);
    row.wall.push(m.ms);
  }
}
await worker.terminate();
await threadFetch.close();
await host.close();

const cell = (xs: number[]) => {
  const s = summarize(xs);
  return `${s.median.toFixed(1)} / ${s.max.toFixed(1)}`;
};
console.log(
  `${requests.length} requests of a 2,000-entry first pass, ${concurrency} in flight, loopback ${values.latency} ms; ` +
    `Pi's main thread, ms, median / max of ${values.reps}`,
);
console.log("| client runs on | longest own stall | main-thread CPU | GC pauses on main | wall |");
console.log("|---|---:|---:|---:|---:|");
for (const [name, r] of Object.entries(rows)) {
  console.log(`| ${name} | ${cell(r.stall)} | ${cell(r.cpu)} | ${cell(r.gc)} | ${cell(r.wall)} |`);
}
