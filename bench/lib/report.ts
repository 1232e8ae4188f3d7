// Turns the raw samples into the tables (stdout and bench/RESULTS.md), the target verdicts and a short
// "where the time goes" reading computed from the same numbers.

import { ownStall, type StallStats } from "../../test/kit/stall.ts";
import type { BreakdownSample } from "../scenarios/breakdown.ts";
import type { ChunkSample } from "../scenarios/chunking.ts";
import type { ClientSample } from "../scenarios/client.ts";
import type { FloorSample } from "../scenarios/floor.ts";
import type { HangSample } from "../scenarios/hang.ts";
import type { OutputSample } from "../scenarios/outputs.ts";
import type { PoolStartSample } from "../scenarios/pool-start.ts";
import type { RecallSample } from "../scenarios/recall.ts";
import type { SerializationSample } from "../scenarios/serialization.ts";
import type { SessionSample } from "../scenarios/sessions.ts";
import type { MachineInfo } from "./machine.ts";
import { HTTP_ON_MAIN } from "./pass.ts";
import {
  fmt,
  fmtRatio,
  fmtSummary,
  markdownTable,
  max,
  mb,
  median,
  type Summary,
  summarize,
  type Table,
  textTable,
} from "./stats.ts";

export interface BenchResults {
  mode: "quick" | "full";
  machine: MachineInfo;
  settings: {
    reps: number;
    slowReps: number;
    latencyMs: number;
    concurrency: number;
    timeoutMs: number;
    hangTimeoutMs: number;
    recallTimeoutMs: number;
    keepKeyword: string;
    steps: number[];
  };
  floor?: FloorSample[];
  poolStart?: PoolStartSample[];
  chunking?: ChunkSample[];
  serialization?: SerializationSample[];
  sessions?: SessionSample[];
  outputs?: OutputSample[];
  hang?: HangSample[];
  breakdown?: BreakdownSample[];
  client?: ClientSample[];
  recall?: RecallSample[];
  seconds?: number;
}

const BACKENDS = ["inline", "piscina", "tinypool"] as const;

/** The stall verdicts read: the probe's longest gap minus the main thread's run-queue wait. */
const own = (x: { stall: StallStats }) => ownStall(x.stall);
/** Main-thread CPU of a pass measured with the quiet probe (NaN for the spinning one). */
const mainCpu = (x: { cpuMs?: number }) => x.cpuMs ?? Number.NaN;
/**
 * The pipeline's own main-thread steps of a pass, timed one by one: snapshot, mirror diff, sync, plan
 * summary, finish transport, validation. The classifier requests' JSON is apart (`requestSteps`): it
 * follows the questions the pass asks, not the pipeline.
 */
const ownSteps = (x: BreakdownSample) =>
  x.snapshotMs +
  x.prepareMs +
  x.syncSerializeMs +
  x.planDeserializeMs +
  x.finishSerializeMs +
  x.finishDeserializeMs +
  x.validateMs;
/** pi-ai's JSON.stringify of the pass's classifier request bodies on the main thread. */
const requestSteps = (x: BreakdownSample) => x.stringifyTotalMs;
/** Median of one measure over samples. */
const med = <T>(xs: readonly T[], g: (x: T) => number): number => median(xs.map(g));
const wall = (x: { stall: StallStats }) => x.stall.maxMs;

/** `own median / own max (wall median)`. */
function fmtStall(xs: ReadonlyArray<{ stall: StallStats }>): string {
  if (xs.length === 0) return "–";
  return `${fmtSummary(sum(xs, own))} (${fmt(median(xs.map(wall)))})`;
}
const int = (n: number) => (Number.isFinite(n) ? Math.round(n).toLocaleString("en-US") : "–");
const uniq = <T>(xs: T[]) => [...new Set(xs)];
const ok = (met: boolean | undefined) => (met === undefined ? "–" : met ? "met" : "**missed**");

function pick<T>(xs: readonly T[] | undefined, pred: (x: T) => boolean): T[] {
  return (xs ?? []).filter(pred);
}

function sum<T>(xs: readonly T[], f: (x: T) => number): Summary {
  return summarize(xs.map(f));
}

// ------------------------------------------------------------------------------------------------------------
// Session passes

const passOrder = (p: string) => (p === "cold" ? -1 : Number.parseInt(p.slice(1), 10));

function sessionKeys(r: BenchResults): Array<{ size: number; pass: string }> {
  const s = r.sessions ?? [];
  const keys: Array<{ size: number; pass: string }> = [];
  for (const size of uniq(s.map((x) => x.size)).sort((a, b) => a - b))
    for (const pass of uniq(s.filter((x) => x.size === size).map((x) => x.pass)).sort(
      (a, b) => passOrder(a) - passOrder(b),
    ))
      keys.push({ size, pass });
  return keys;
}

function passSamples(r: BenchResults, size: number, pass: string, backend: string, probe = "spin"): SessionSample[] {
  return pick(r.sessions, (x) => x.size === size && x.pass === pass && x.backend === backend && x.probe === probe);
}

function passName(pass: string): string {
  if (pass === "cold") return "cold (all sent)";
  if (pass === "+2") return "+2 (sends cold's edits)";
  return pass;
}

const passLabel = (size: number, pass: string) => `${int(size)} ${passName(pass)}`;

function stallTable(r: BenchResults): Table {
  const rows = sessionKeys(r).map(({ size, pass }) => {
    const p = passSamples(r, size, pass, "piscina");
    const quiet = passSamples(r, size, pass, "piscina", "quiet");
    const any = p[0] ?? quiet[0];
    return [
      passLabel(size, pass),
      int(any?.contextEntries ?? Number.NaN),
      `${int(median(p.map((x) => x.sentEntries)))} (${int(median(p.map((x) => x.sentEdited)))} edited), ${mb(median(p.map((x) => x.sentChars)))}`,
      ...BACKENDS.map((b) => fmtStall(passSamples(r, size, pass, b))),
      fmtStall(quiet),
      fmt(median(quiet.map((x) => x.stall.runQueueMs ?? Number.NaN))),
      fmtSummary(sum(quiet, mainCpu)),
    ];
  });
  return {
    title: "Main-thread stall during agent_before_settle (ms, median / max)",
    head: [
      "session, pass",
      "entries",
      "sent to worker",
      "inline",
      "piscina",
      "tinypool",
      "piscina, no spin probe",
      "run-queue wait",
      "piscina main-thread CPU",
    ],
    rows,
    note:
      "Cells: own stall median / max (wall-clock stall median). Wall = the longest main-thread block while the " +
      "hook ran: the larger of the longest probe gap and the longest event-loop delay (monitorEventLoopDelay, " +
      "1 ms timer, interval subtracted). Own = the same gap minus the time the main thread sat in the run queue " +
      "(runnable, not running: other processes or this benchmark's other threads had the cores; from " +
      "/proc/thread-self/schedstat). Inline, piscina and tinypool use the spinning setImmediate probe; “no spin " +
      "probe” repeats the piscina passes with a 1 ms interval probe instead, which is also when main-thread CPU " +
      "(process.threadCpuUsage) and the total run-queue wait are measured. “sent to worker”: entries in the plan " +
      "task's sync payload (new, or under a context_edit) and their characters.",
  };
}

function settleTable(r: BenchResults): Table {
  const L = r.settings.latencyMs;
  const rows = sessionKeys(r).map(({ size, pass }) => {
    const q = passSamples(r, size, pass, "piscina", "quiet");
    const requests = median(q.map((x) => x.requests));
    const waves = median(q.map((x) => x.waves));
    return [
      passLabel(size, pass),
      int(requests),
      int(waves),
      int(L * waves),
      fmtSummary(sum(q, (x) => x.ms)),
      fmtSummary(sum(q, (x) => x.overheadMs)),
      fmtSummary(sum(q, (x) => x.pipelineMs)),
      fmtSummary(sum(q, (x) => x.ms - x.pipelineMs - L * x.waves)),
      ...BACKENDS.map((b) => fmt(median(passSamples(r, size, pass, b).map((x) => x.overheadMs)))),
    ];
  });
  return {
    title: `Settle latency (ms, median / max; classifier latency ${L} ms, concurrency ${r.settings.concurrency})`,
    head: [
      "session, pass",
      "requests",
      "waves",
      "latency × waves",
      "hook",
      "overhead",
      "non-classifier",
      "classifier queue − latency × waves",
      "overhead, spin probe: inline",
      "piscina",
      "tinypool",
    ],
    rows,
    note:
      "piscina passes without the spinning probe (the first seven columns), then the overhead of every backend " +
      "on the passes measured with it (medians; the probe takes a core, so these run slower). hook = " +
      "agent_before_settle start → return. overhead = hook − latency × waves, waves = ceil(requests / " +
      "concurrency): the pipeline's own share. non-classifier = hook − the classifier queue's time (snapshot, " +
      "sync, plan, finish, validate); the queue's time beyond latency × waves is the HTTP client (pi-ai, fetch) " +
      "and the loopback server. The pass deadline is raised to " +
      `${int(r.settings.timeoutMs)} ms here so every request is answered.`,
  };
}

function clientTable(r: BenchResults): Table {
  const c = r.client ?? [];
  const rows = uniq(c.map((x) => x.client)).map((client) => {
    const xs = c.filter((x) => x.client === client);
    return [
      client,
      fmtSummary(sum(xs, (x) => x.cpuPerRequestMs)),
      fmtSummary(sum(xs, (x) => x.wallPerRequestMs)),
      `${fmtSummary(sum(xs, (x) => x.burstStallMs))} (${fmt(median(xs.map((x) => x.burstWallMs)))})`,
    ];
  });
  const first = c[0];
  return {
    title: `Classifier client, main-thread cost: ${first?.requests ?? 0} requests of ~${int(first?.bodyChars ?? 0)} characters (ms, median / max)`,
    head: ["client", "CPU per request", "wall per request", `stall, bursts of ${first?.burst ?? "?"}: own (wall)`],
    rows,
    note:
      "Loopback server without latency. *pi-ai classify, HTTP thread* is how the extension sends every request " +
      "of a pass: pi-ai's client builds the request and checks the answer on the main thread, and its `fetch` " +
      "(src/main/platform/thread-fetch.ts) hands the connection to a worker thread. *pi-ai classify* is the same client " +
      "with its HTTP on the main thread; fetch and node:http send the same bodies from the main thread. A burst " +
      "= `concurrency` requests started together and answered together, as a wave of the queue is.",
  };
}

function floorTable(r: BenchResults): Table {
  const f = r.floor ?? [];
  const rows = [0, 1, 2].map((n) => {
    const of = (probe: string) => f.filter((x) => x.busyWorkers === n && x.probe === probe);
    return [
      `${n} busy worker${n === 1 ? "" : "s"}`,
      fmtSummary(sum(of("spin"), (x) => x.stall.maxMs)),
      fmtSummary(sum(of("spin"), own)),
      fmtSummary(sum(of("quiet"), (x) => x.stall.maxMs)),
      fmtSummary(sum(of("quiet"), own)),
    ];
  });
  return {
    title: "Probe floor: an idle main thread while worker threads burn CPU (ms, median / max)",
    head: ["workers", "spin probe: wall", "own", "no spin probe: wall", "own"],
    rows,
    note:
      "What the probes report when the main thread does nothing. On 2 cores the spinning probe competes with " +
      "busy workers (and anything else running), and the scheduler's time slices show up as wall-clock stall; " +
      "“own” takes the main thread's run-queue wait out.",
  };
}

function httpThreadTable(r: BenchResults): Table | undefined {
  const L = r.settings.latencyMs;
  const keys = sessionKeys(r).filter(({ size, pass }) => passSamples(r, size, pass, HTTP_ON_MAIN, "quiet").length);
  if (keys.length === 0) return undefined;
  const rows = keys.map(({ size, pass }) => {
    const thread = passSamples(r, size, pass, "piscina", "quiet");
    const main = passSamples(r, size, pass, HTTP_ON_MAIN, "quiet");
    const queue = (x: SessionSample) => x.ms - x.pipelineMs - L * x.waves;
    return [
      passLabel(size, pass),
      int(med(thread, (x) => x.requests)),
      fmtSummary(sum(thread, own)),
      fmtSummary(sum(main, own)),
      `${fmt(med(thread, mainCpu))} / ${fmt(med(main, mainCpu))}`,
      `${fmt(med(thread, (x) => x.overheadMs))} / ${fmt(med(main, (x) => x.overheadMs))}`,
      `${fmt(med(thread, queue))} / ${fmt(med(main, queue))}`,
      fmtRatio(med(main, own) / med(thread, own)),
      fmtRatio(med(main, mainCpu) / med(thread, mainCpu)),
    ];
  });
  return {
    title: "The classifier's HTTP on its own thread vs on the main thread (piscina, no spin probe; ms, same run)",
    head: [
      "session, pass",
      "requests",
      "own stall, HTTP thread (median / max)",
      "own stall, HTTP on main (median / max)",
      "main-thread CPU: thread / main",
      "settle overhead: thread / main",
      "queue − latency × waves: thread / main",
      "stall main ÷ thread",
      "CPU main ÷ thread",
    ],
    rows,
    note:
      "The same passes, one sequence after the other in each repetition, taking turns to go first and each " +
      "starting from a collected heap: the extension's way (pi-ai's client with its " +
      "`fetch` on the HTTP thread of src/main/platform/thread-fetch.ts) and the same client sending from the main thread. " +
      "Overhead = hook − latency × waves; the queue column is the classifier queue's time beyond the latency.",
  };
}

function ratioTable(r: BenchResults): Table {
  const rows = sessionKeys(r).map(({ size, pass }) => {
    const s = (b: string) => median(passSamples(r, size, pass, b).map(own));
    const nc = (b: string) => median(passSamples(r, size, pass, b).map((x) => x.pipelineMs));
    return [
      passLabel(size, pass),
      fmtRatio(s("inline") / s("piscina")),
      fmtRatio(s("tinypool") / s("piscina")),
      fmtRatio(nc("inline") / nc("piscina")),
      fmtRatio(nc("tinypool") / nc("piscina")),
    ];
  });
  return {
    title: "Backends compared on the same passes (ratios of medians, same run)",
    head: [
      "session, pass",
      "stall inline ÷ piscina",
      "stall tinypool ÷ piscina",
      "non-classifier inline ÷ piscina",
      "non-classifier tinypool ÷ piscina",
    ],
    rows,
  };
}

function curveTable(r: BenchResults): Table {
  const sizes = uniq((r.sessions ?? []).map((x) => x.size)).sort((a, b) => a - b);
  const passes = uniq((r.sessions ?? []).map((x) => x.pass)).sort((a, b) => passOrder(a) - passOrder(b));
  const rows = passes.map((pass) => [
    pass === "cold" || pass === "+2" ? passName(pass) : `${pass} new entries`,
    ...sizes.map((size) => {
      const q = passSamples(r, size, pass, "piscina", "quiet");
      const bd = (r.breakdown ?? []).filter((x) => x.size === size && x.pass === pass);
      const questions = med(bd, (x) => x.questions ?? Number.NaN);
      const asked = Number.isFinite(questions) ? ` (${int(questions)} q)` : "";
      return `${fmt(med(bd, ownSteps))} · ${fmt(med(bd, requestSteps))}${asked} · ${fmt(median(q.map(own)))} · ${int(median(q.map((x) => x.sentEntries)))}`;
    }),
  ]);
  return {
    title:
      "Per-pass main-thread cost over session size (pipeline steps ms · classifier request JSON ms (questions asked) · longest stall ms, piscina without the spin probe · entries sent; medians)",
    head: ["pass", ...sizes.map((s) => `${int(s)} entries`)],
    rows,
    note:
      "A steady pass (“+N”) follows the previous pass on the same session, mirror and worker, after N new entries " +
      "and the previous pass's context_edit entries and record. If the per-pass cost follows the new entries, a row " +
      "stays flat from left to right. Pipeline steps: snapshot, mirror diff, serializing for the worker, the plan's " +
      "summary, finish transport and validation, timed one by one (see “Step by step”). Request JSON: pi-ai's " +
      "JSON.stringify of the pass's classifier requests, which follows the questions the pass asks (a new run " +
      "asks again about every old exchange it may omit, so a longer session asks more); the classifier client's " +
      "other work per request is apart (see its section).",
  };
}

function outputsTable(r: BenchResults): Table {
  const o = r.outputs ?? [];
  const labels = uniq(o.map((x) => x.label));
  const rows = labels.map((label) => {
    const of = (b: string, probe = "spin") =>
      o.filter((x) => x.label === label && x.backend === b && x.probe === probe);
    const p = of("piscina");
    const first = p[0] ?? o.find((x) => x.label === label);
    const outcome =
      first?.status === "skipped" ? `skip: ${first.reason}` : `${int(median(p.map((x) => x.requests)))} req`;
    return [
      label,
      mb(first?.chars ?? 0),
      `${int(first?.chunks ?? Number.NaN)} / ${outcome}`,
      ...BACKENDS.map((b) => fmtStall(of(b))),
      fmtStall(of("piscina", "quiet")),
      fmtSummary(sum(p, (x) => x.syncSerializeMs)),
      `${fmtSummary(sum(p, (x) => x.largestMessageMs ?? Number.NaN))} (${int(median(p.map((x) => x.messages ?? Number.NaN)))})`,
      fmtSummary(sum(of("piscina", "quiet"), (x) => x.pipelineMs)),
    ];
  });
  return {
    title: "One huge tool output at the end of a small run (ms, median / max)",
    head: [
      "output",
      "size",
      "chunks / classifier",
      "stall: inline",
      "piscina",
      "tinypool",
      "piscina, no spin probe",
      "as one message (v8)",
      "largest message sent (messages)",
      "non-classifier (piscina)",
    ],
    rows,
    note:
      "Stall cells: own median / max (wall median), as in the session table. The mirror already holds the rest of " +
      "the session, so the output is the only data sent. “serialize sync”: " +
      "v8.serialize of the same plan input, timed apart from the pass (the structured clone's share of the stall).",
  };
}

function hangTable(r: BenchResults): Table {
  const h = r.hang ?? [];
  const keys = uniq(h.map((x) => `${x.size}|${x.pass}`));
  const rows = keys.map((k) => {
    const [size, pass] = k.split("|") as [string, string];
    const xs = h.filter((x) => `${x.size}|${x.pass}` === k);
    return [
      passLabel(Number(size), pass),
      int(xs[0]?.timeoutMs ?? Number.NaN),
      fmtSummary(sum(xs, (x) => x.ms)),
      fmtSummary(sum(xs, (x) => x.overTimeoutMs)),
      fmtSummary(sum(xs, (x) => x.pipelineMs)),
      fmtStall(xs),
      xs.every((x) => x.timedOut) ? "yes" : "no",
    ];
  });
  return {
    title: "Hang case: the classifier never answers (piscina, ms, median / max)",
    head: [
      "session, pass",
      "timeoutMs",
      "hook",
      "hook − timeoutMs",
      "non-classifier",
      "stall: own (wall)",
      "timed out, all kept",
    ],
    rows,
  };
}

function poolStartTable(r: BenchResults): Table {
  const ps = r.poolStart ?? [];
  const rows = uniq(ps.map((x) => x.backend)).map((b) => {
    const xs = ps.filter((x) => x.backend === b);
    return [
      b,
      fmtSummary(sum(xs, (x) => x.createMs)),
      fmtSummary(sum(xs, (x) => x.firstTaskMs)),
      fmtSummary(sum(xs, (x) => x.coldStartMs)),
      fmtStall(xs),
      fmtSummary(sum(xs, (x) => x.firstPlanMs)),
    ];
  });
  return {
    title: "Pool cold start in a fresh process (ms, median / max)",
    head: [
      "backend",
      "createTaskRunner",
      "→ first ping",
      "cold start",
      "stall: own (wall)",
      "first plan (200 entries)",
    ],
    rows,
    note:
      "createTaskRunner includes the dynamic import of the pool library; the first ping boots the thread and " +
      "loads the task module. Paid once per session at session_start, not by a pass.",
  };
}

function serializationTable(r: BenchResults): Table {
  const s = r.serialization ?? [];
  const rows = uniq(s.map((x) => x.size)).map((size) => {
    const xs = s.filter((x) => x.size === size);
    const f = (g: (x: SerializationSample) => number) => fmtSummary(sum(xs, g));
    return [
      `${int(size)} entries`,
      `${mb(xs[0]?.jsonChars ?? 0)} JSON`,
      f((x) => x.postCloneMs),
      f((x) => x.postMsgpackMs),
      fmtRatio(median(xs.map((x) => x.postMsgpackMs)) / median(xs.map((x) => x.postCloneMs))),
      f((x) => x.v8SerializeMs),
      f((x) => x.packMs),
      f((x) => x.v8DeserializeMs),
      f((x) => x.workerDecodeMsgpackMs),
      f((x) => x.structuredCloneMs),
    ];
  });
  return {
    title: "Sending the snapshot (SnapEntry[]) to a worker: structured clone vs msgpackr (ms, median / max)",
    head: [
      "snapshot",
      "size",
      "postMessage, clone (main)",
      "pack + postMessage (main)",
      "msgpackr ÷ clone",
      "v8.serialize",
      "msgpackr pack",
      "v8.deserialize",
      "worker: unpack",
      "structuredClone()",
    ],
    rows,
    note:
      "Main-thread columns are what Pi's UI waits for. pack + postMessage = msgpackr.pack, a copy out of its " +
      "shared buffer, and postMessage with the bytes transferred. v8.serialize / v8.deserialize are the two " +
      "halves of a structured clone (the worker decodes a clone before its handler runs, so its side is shown " +
      "as v8.deserialize).",
  };
}

function chunkTable(r: BenchResults): Table {
  const c = r.chunking ?? [];
  const rows = uniq(c.map((x) => x.label)).map((label) => {
    const xs = c.filter((x) => x.label === label);
    const chars = xs[0]?.chars ?? 0;
    const chunkMBs = chars / 1e6 / (median(xs.map((x) => x.chunkMs)) / 1000);
    const scanMBs = chars / 1e6 / (median(xs.map((x) => x.scanMs)) / 1000);
    return [
      label,
      mb(chars),
      `${int(xs[0]?.chunks ?? 0)}${xs[0]?.grep ? " (grep)" : ""}`,
      fmtSummary(sum(xs, (x) => x.chunkMs)),
      int(chunkMBs),
      fmtSummary(sum(xs, (x) => x.scanMs)),
      int(scanMBs),
      fmtRatio(scanMBs / chunkMBs),
    ];
  });
  return {
    title: "Chunking throughput vs a plain newline scan (same text)",
    head: ["output", "size", "chunks", "chunkOutput ms", "MB/s", "indexOf('\\n') scan ms", "MB/s", "scan ÷ chunk"],
    rows,
    note: "ms columns: median / max. MB = 10^6 characters.",
  };
}

function recallTable(r: BenchResults): Table {
  const rc = r.recall ?? [];
  const keys = uniq(rc.map((x) => `${x.backend}|${x.probe}`));
  const rows = keys.map((k) => {
    const [b, probe] = k.split("|") as [string, string];
    const xs = rc.filter((x) => x.backend === b && x.probe === probe);
    return [
      `${b}${probe === "quiet" ? ", no spin probe" : ""}`,
      int(xs[0]?.timeoutMs ?? Number.NaN),
      fmtSummary(sum(xs, (x) => x.ms)),
      fmtSummary(sum(xs, (x) => x.ms - x.timeoutMs)),
      fmtStall(xs),
      xs.every((x) => !x.ok) ? "yes" : "no",
      fmtSummary(sum(xs, (x) => x.nextMs)),
    ];
  });
  return {
    title: "recall with pattern (a+)+$ over 400 lines (ms, median / max)",
    head: ["backend", "time limit", "→ error", "− time limit", "stall: own (wall)", "error returned", "next recall"],
    rows,
    note: `Error text: “${rc.find((x) => x.error)?.error ?? "–"}”.`,
  };
}

function breakdownTable(r: BenchResults): Table {
  const bd = r.breakdown ?? [];
  const keys = uniq(bd.map((x) => `${x.size}|${x.pass}`));
  const rows = keys.map((k) => {
    const [size, pass] = k.split("|") as [string, string];
    const xs = bd.filter((x) => `${x.size}|${x.pass}` === k);
    const m = (g: (x: BreakdownSample) => number) => fmt(median(xs.map(g)));
    return [
      passLabel(Number(size), pass),
      m((x) => x.snapshotMs),
      m((x) => x.prepareMs),
      `${m((x) => x.syncSerializeMs)} / ${m((x) => x.syncMaxSerializeMs ?? Number.NaN)} (${mb(median(xs.map((x) => x.syncBytes)))})`,
      m((x) => x.firstBlockMs),
      `${m((x) => x.planDeserializeMs)} (${mb(median(xs.map((x) => x.planBytes)))})`,
      `${m((x) => x.stringifyTotalMs)} / ${m((x) => x.stringifyMaxMs)}`,
      `${m((x) => x.finishSerializeMs + x.finishDeserializeMs)} / ${m((x) => x.finishMaxDeserializeMs ?? Number.NaN)}`,
      m((x) => x.validateMs),
      `${m((x) => x.planTaskMs)} / ${m((x) => x.finishTaskMs)}`,
    ];
  });
  return {
    title: "Where a pass spends main-thread time, step by step (ms, medians)",
    head: [
      "session, pass",
      "snapshot",
      "mirror diff",
      "serialize sync total / largest message",
      "CPU before the plan",
      "deserialize plan",
      "request JSON total / max",
      "finish transport total / largest part",
      "validate",
      "worker: plan / finish",
    ],
    rows,
    note:
      "CPU before the plan = snapshot + mirror diff + serialize sync, timed here straight through; in the hook " +
      "these steps hand the event loop back every 2 ms and the sync goes in messages of about 500,000 characters, " +
      "so the largest message is the block that counts. Transport is timed as v8.serialize / v8.deserialize of " +
      "the same values; the tasks run inline here, so the last column is the worker's share.",
  };
}

// ------------------------------------------------------------------------------------------------------------
// Targets and reading

interface Target {
  goal: string;
  value: string;
  met?: boolean;
}

function worstPass(r: BenchResults, size: number, probe: string) {
  let worst: { pass: string; med: number; max: number } | undefined;
  for (const { pass } of sessionKeys(r).filter((k) => k.size === size)) {
    const xs = passSamples(r, size, pass, "piscina", probe);
    const med = median(xs.map(own));
    if (!worst || med > worst.med) worst = { pass, med, max: max(xs.map(own)) };
  }
  return worst;
}

function targets(r: BenchResults): Target[] {
  const out: Target[] = [];
  const stallOf = (xs: SessionSample[]) => median(xs.map(own));
  for (const [size, goal] of [
    [2000, 5],
    [10000, 10],
  ] as const) {
    const w = worstPass(r, size, "quiet");
    const ws = worstPass(r, size, "spin");
    if (!w || !ws) continue;
    const steady = sessionKeys(r)
      .filter((k) => k.size === size && k.pass !== "cold")
      .map((k) => `${k.pass} ${fmt(stallOf(passSamples(r, size, k.pass, "piscina", "quiet")))}`);
    out.push({
      goal: `longest main-thread stall during a hook ≤ ${goal} ms at ${int(size)} entries (piscina)`,
      value:
        `worst pass ${w.pass}: ${fmt(w.med)} ms median, ${fmt(w.max)} max (wall ${fmt(median(passSamples(r, size, w.pass, "piscina", "quiet").map(wall)))}; spin probe: ${ws.pass} ${fmt(ws.med)}); ` +
        `others: ${steady.join(", ")} ms`,
      met: w.med <= goal,
    });
  }
  for (const o of uniq(pick(r.outputs, (x) => x.bytes >= 20 * 1024 * 1024).map((x) => x.label))) {
    const q = sum(
      pick(r.outputs, (x) => x.label === o && x.backend === "piscina" && x.probe === "quiet"),
      own,
    );
    const sp = sum(
      pick(r.outputs, (x) => x.label === o && x.backend === "piscina" && x.probe === "spin"),
      own,
    );
    out.push({
      goal: `a pass over the ${o} output stalls ≤ 5 ms`,
      value: `${fmtSummary(q)} ms (spin probe: ${fmtSummary(sp)})`,
      met: q.median <= 5,
    });
  }
  for (const { size, pass } of sessionKeys(r).filter((k) => k.size === 2000)) {
    const xs = passSamples(r, size, pass, "piscina", "quiet");
    const s = sum(xs, (x) => x.overheadMs);
    out.push({
      goal: `settle ≤ classifier latency + 30 ms at 2,000 entries, ${pass} pass`,
      value: `overhead ${fmtSummary(s)} ms over ${int(median(xs.map((x) => x.waves)))} wave(s)`,
      met: s.median <= 30,
    });
  }
  for (const k of uniq((r.hang ?? []).map((x) => `${x.size}|${x.pass}`))) {
    const xs = pick(r.hang, (x) => `${x.size}|${x.pass}` === k);
    const s = sum(xs, (x) => x.overTimeoutMs);
    const [size, pass] = k.split("|");
    out.push({
      goal: `hang case ≤ timeoutMs + 50 ms (${int(Number(size))} entries, ${pass})`,
      value: `${fmtSummary(s)} ms after timeoutMs (negative: before it)`,
      met: s.max <= 50,
    });
  }
  const rq = pick(r.recall, (x) => x.backend === "piscina" && x.probe === "quiet");
  const rs = pick(r.recall, (x) => x.backend === "piscina" && x.probe === "spin");
  if (rq.length > 0) {
    const st = sum(rq, own);
    const over = sum([...rq, ...rs], (x) => x.ms - x.timeoutMs);
    out.push({
      goal: "catastrophic recall (piscina): stall ≤ 5 ms, error within the time limit (+50 ms)",
      value: `stall ${fmtSummary(st)} ms (spin probe: ${fmtSummary(sum(rs, own))}); error at limit + ${fmtSummary(over)} ms`,
      met: st.median <= 5 && over.max <= 50 && [...rq, ...rs].every((x) => !x.ok),
    });
  }
  // Per-pass cost over session size, from the step-by-step replay: each of the pipeline's main-thread steps
  // timed straight through, without a probe. (The quiet probe's CPU reading, once its own sampling cost is
  // taken out, is too noisy for passes of a few milliseconds: it read 0 for some.)
  const bd = r.breakdown ?? [];
  const steps = uniq(bd.map((x) => x.pass)).filter((p) => p !== "cold" && p !== "+2");
  const sizes = uniq(bd.map((x) => x.size)).sort((a, b) => a - b);
  if (steps.length > 0 && sizes.length > 1) {
    const first = sizes[0] as number;
    const last = sizes.at(-1) as number;
    const parts: string[] = [];
    let flat = true;
    for (const pass of steps) {
      const of = (size: number) => bd.filter((x) => x.size === size && x.pass === pass);
      const a = med(of(first), ownSteps);
      const b = med(of(last), ownSteps);
      const n = (size: number) => med(of(size), (x) => x.contextEntries);
      const ra = med(of(first), requestSteps);
      const rb = med(of(last), requestSteps);
      const qa = med(of(first), (x) => x.exchangeQuestions ?? Number.NaN);
      const qb = med(of(last), (x) => x.exchangeQuestions ?? Number.NaN);
      const exchanges =
        Number.isFinite(qa) && Number.isFinite(qb) ? `, ${int(qa)} → ${int(qb)} old exchanges asked about` : "";
      parts.push(
        `${pass}: ${fmt(a)} → ${fmt(b)} ms (${fmtRatio(b / a)}; ${int(n(first))} → ${int(n(last))} entries; ` +
          `request JSON apart: ${fmt(ra)} → ${fmt(rb)} ms${exchanges})`,
      );
      // Flat enough: less than a quarter of the session's growth shows in the per-pass cost.
      if (b / a > Math.max(2, (n(last) / n(first)) ** 0.25)) flat = false;
    }
    out.push({
      goal: `per-pass main-thread pipeline cost follows new entries, not session size (${int(first)} → ${int(last)} entries)`,
      value: parts.join("; "),
      met: flat,
    });
  }
  return out;
}

function targetsTable(r: BenchResults): Table {
  return {
    title: "Targets (goals, not assertions)",
    head: ["goal", "measured", "verdict"],
    rows: targets(r).map((t) => [t.goal, t.value, ok(t.met)]),
    note:
      "Stall verdicts use the piscina passes measured without the spinning probe (it competes for the cores; see " +
      "the probe floor) and the own stall (run-queue wait taken out; wall shown alongside), as medians over the " +
      "repetitions with maxima alongside; the hang and recall time " +
      "limits use the maximum. The worst pass is the pass type with the highest median. Per-pass cost: the " +
      "steady passes' pipeline steps on the main thread, timed one by one (“Step by step”), at the smallest vs the " +
      "largest session; “met” if the ratio stays under max(2, (size ratio)^¼). The classifier requests' JSON is " +
      "shown apart: it follows the questions asked, and a new run asks again about every old exchange it may omit.",
  };
}

// ------------------------------------------------------------------------------------------------------------
// Rendering

function allTables(r: BenchResults): Table[] {
  const t: Table[] = [targetsTable(r)];
  if (r.floor?.length) t.push(floorTable(r));
  if (r.sessions?.length) t.push(stallTable(r), settleTable(r), ratioTable(r), curveTable(r));
  const httpT = r.sessions?.length ? httpThreadTable(r) : undefined;
  if (httpT) t.push(httpT);
  if (r.breakdown?.length) t.push(breakdownTable(r));
  if (r.client?.length) t.push(clientTable(r));
  if (r.outputs?.length) t.push(outputsTable(r));
  if (r.hang?.length) t.push(hangTable(r));
  if (r.recall?.length) t.push(recallTable(r));
  if (r.serialization?.length) t.push(serializationTable(r));
  if (r.chunking?.length) t.push(chunkTable(r));
  if (r.poolStart?.length) t.push(poolStartTable(r));
  return t;
}

export function renderText(r: BenchResults): string {
  const m = r.machine;
  const speed = m.speedStart
    ? ` · reference serialize ${fmt(m.speedStart.serializeMs)} → ${m.speedEnd ? fmt(m.speedEnd.serializeMs) : "?"} ms`
    : "";
  const head = `context-guard bench --${r.mode} · ${m.cpuModel} × ${m.cores} · ${m.totalMemGiB} GiB · Node ${m.node} · ${m.date} · load ${m.loadStart} → ${m.loadEnd ?? "?"}${speed}`;
  return [head, ...allTables(r).map(textTable)].join("\n\n");
}

/** The tables as Markdown under a dated header naming the machine: the reading goes in docs/performance.md. */
export function renderMarkdown(r: BenchResults): string {
  const m = r.machine;
  const s = r.settings;
  const out: string[] = [
    "# context-guard benchmarks",
    "",
    `Generated by \`npm run bench:full\` (${r.mode} suite, ${r.seconds ?? "?"} s) on ${m.date}: tables only, read in ` +
      "docs/performance.md. Do not edit by hand: rerun it.",
    "",
    `- **Machine:** ${m.cpuModel}, ${m.cores} cores, ${m.totalMemGiB} GiB RAM, ${m.os}; Node ${m.node} (V8 ${m.v8}); ` +
      `load ${m.loadStart} → ${m.loadEnd ?? "?"}`,
    `- **Settings:** ${s.reps} repetitions (hang and recall: ${s.slowReps}), classifier ${s.latencyMs} ms away, ` +
      `concurrency ${s.concurrency}, deadline ${int(s.timeoutMs)} ms; tables give median / maximum.`,
    "",
  ];
  for (const t of allTables(r)) out.push(`## ${t.title}`, "", markdownTable(t), "");
  return `${out.join("\n").trimEnd()}\n`;
}
