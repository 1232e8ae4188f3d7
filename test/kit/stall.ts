// Main-thread stall while an async function runs. Two probes, as the issue asks:
// - Node's event-loop delay histogram (perf_hooks.monitorEventLoopDelay, 1 ms timer);
// - a setImmediate gap probe that timestamps every loop iteration ("spin" mode): a gap is the time one
//   iteration took, so the longest gap is the longest stretch in which Pi's UI could not have drawn or
//   read a key. It keeps the loop spinning (one core busy), so a "quiet" mode replaces it with a 1 ms
//   interval probe; main-thread CPU time (process.threadCpuUsage) is only meaningful in quiet mode.
// Both probes also read the main thread's run-queue wait from /proc/thread-self/schedstat (Linux): a
// gap during which the thread was runnable but not running was the scheduler (other processes, or this
// process's other threads on too few cores), not the code. "own" stall = gap − run-queue wait.
import { closeSync, openSync, readSync } from "node:fs";
import {
  constants,
  createHistogram,
  monitorEventLoopDelay,
  type PerformanceEntry,
  PerformanceObserver,
} from "node:perf_hooks";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

const RESOLUTION_MS = 1;

export type ProbeMode = "spin" | "quiet";

export interface StallStats {
  /** Longest stall (wall clock), ms: the larger of the probe's longest gap and the event-loop delay. */
  maxMs: number;
  /** 99th percentile of the probe's gaps. */
  p99Ms: number;
  /** Longest stall with the main thread's run-queue wait taken out; undefined without schedstat. */
  ownMaxMs?: number;
  /** Total run-queue wait of the main thread while `fn` ran, ms. */
  runQueueMs?: number;
  /** monitorEventLoopDelay: longest delay beyond the 1 ms timer interval. */
  eldMaxMs: number;
  eldP99Ms: number;
  /** Longest probe gap (spin: between setImmediate callbacks; quiet: between 1 ms ticks, minus 1 ms). */
  gapMaxMs: number;
  /** Probe samples (loop iterations or ticks). */
  samples: number;
  /**
   * Garbage-collection pauses inside the longest own gap, ms by kind (minor, major, incremental, weak):
   * how much of the worst stall was the collector rather than the pass's own code.
   */
  worstGcMs?: Record<string, number>;
}

export interface Measured<T> {
  value: T;
  /** Wall time of `fn`, ms. */
  ms: number;
  stall: StallStats;
  /**
   * Main-thread CPU time (user + system) during `fn`, ms, the probe's own sampling cost taken out; only in
   * quiet mode (the probe spins otherwise).
   */
  cpuMs?: number;
}

const nsToMs = (ns: number) => ns / 1e6;

/** PerformanceObserver's gc entry kinds, by name. */
export const GC_KINDS: Record<number, string> = {
  [constants.NODE_PERFORMANCE_GC_MINOR]: "minor",
  [constants.NODE_PERFORMANCE_GC_MAJOR]: "major",
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: "incremental",
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: "weak",
};

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Run-queue wait of the calling thread, ns (Linux schedstat; 0 elsewhere). */
export class RunQueueClock {
  #fd: number | undefined;
  #buf = Buffer.alloc(96);
  readonly available: boolean;
  constructor() {
    try {
      this.#fd = openSync("/proc/thread-self/schedstat", "r");
      this.available = Number.isFinite(this.#read());
    } catch {
      this.available = false;
    }
  }
  #read(): number {
    const n = readSync(this.#fd as number, this.#buf, 0, this.#buf.length, 0);
    const text = this.#buf.toString("latin1", 0, n);
    const a = text.indexOf(" ");
    const b = text.indexOf(" ", a + 1);
    return Number(text.slice(a + 1, b));
  }
  waitNs(): number {
    return this.available && this.#fd !== undefined ? this.#read() : 0;
  }
  close(): void {
    if (this.#fd !== undefined) closeSync(this.#fd);
    this.#fd = undefined;
  }
}

let quietSampleCpuMs: number | undefined;

/**
 * Main-thread CPU the quiet probe costs per sample (a 1 ms timer wake-up and a schedstat read), measured
 * once per process on an idle loop. A hook's CPU is reported with samples × this taken out: otherwise a
 * hook that merely lasts longer (more classifier waves) would look more expensive. The least of five idle
 * windows: one window that caught a collection of the previous workload's garbage once made the cost
 * look larger than whole small passes, whose CPU then read as zero.
 */
async function quietProbeCost(): Promise<number> {
  if (quietSampleCpuMs !== undefined) return quietSampleCpuMs;
  quietSampleCpuMs = 0; // the calibration itself is measured uncorrected
  let least = Number.POSITIVE_INFINITY;
  for (let i = 0; i < 5; i++) {
    const idle = await measureStall(() => new Promise<void>((resolve) => setTimeout(resolve, 200)), "quiet");
    if (idle.stall.samples > 0) least = Math.min(least, (idle.cpuMs ?? 0) / idle.stall.samples);
  }
  quietSampleCpuMs = Number.isFinite(least) ? least : 0;
  return quietSampleCpuMs;
}

/** Runs `fn` and reports the longest main-thread stall while it ran. */
export async function measureStall<T>(fn: () => Promise<T> | T, mode: ProbeMode = "spin"): Promise<Measured<T>> {
  const perSample = mode === "quiet" ? await quietProbeCost() : 0;
  const eld = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  const gaps = createHistogram();
  const clock = new RunQueueClock();
  const expected = mode === "spin" ? 0 : RESOLUTION_MS;
  let recording = false;
  let last = 0;
  let lastWait = 0;
  let gapMax = 0;
  let ownMax = 0;
  let ownMaxAt: [number, number] = [0, 0];
  let samples = 0;
  const sample = () => {
    const now = performance.now();
    const wait = clock.waitNs();
    if (recording) {
      const gap = Math.max(0, now - last - expected);
      const own = Math.max(0, gap - nsToMs(wait - lastWait));
      gaps.record(Math.max(1, Math.round(gap * 1e6)));
      if (gap > gapMax) gapMax = gap;
      if (own > ownMax) {
        ownMax = own;
        ownMaxAt = [last, now];
      }
      samples++;
    }
    last = now;
    lastWait = wait;
  };
  let running = true;
  let stopped: () => void = () => {};
  const spinStopped = new Promise<void>((resolve) => {
    stopped = resolve;
  });
  const spin = () => {
    if (!running) {
      stopped();
      return;
    }
    sample();
    setImmediate(spin);
  };
  const interval = mode === "quiet" ? setInterval(sample, RESOLUTION_MS) : undefined;
  const gcs: Array<{ start: number; end: number; kind: string }> = [];
  const collect = (list: { getEntries(): PerformanceEntry[] }) => {
    for (const e of list.getEntries()) {
      const kind = (e as { detail?: { kind?: number } }).detail?.kind ?? 0;
      gcs.push({ start: e.startTime, end: e.startTime + e.duration, kind: GC_KINDS[kind] ?? "other" });
    }
  };
  const observer = new PerformanceObserver(collect);
  observer.observe({ entryTypes: ["gc"] });
  eld.enable();
  if (mode === "spin") setImmediate(spin);
  // Let the probes take their first samples before the work starts.
  await tick();
  await tick();
  eld.reset();
  sample();
  recording = true;
  const wait0 = clock.waitNs();
  const cpu0 = process.threadCpuUsage();
  const t0 = performance.now();
  let value: T;
  try {
    value = await fn();
  } finally {
    running = false;
  }
  const ms = performance.now() - t0;
  const cpu1 = process.threadCpuUsage();
  const wait1 = clock.waitNs();
  // One more sample so a block that ended with `fn` is recorded by every probe; the spin probe's last
  // callback has run before the clock closes.
  await new Promise((resolve) => setTimeout(resolve, RESOLUTION_MS + 1));
  if (mode === "spin") await spinStopped;
  sample();
  recording = false;
  if (interval) clearInterval(interval);
  eld.disable();
  clock.close();
  collect({ getEntries: () => observer.takeRecords() });
  observer.disconnect();
  const eldMax = eld.count > 0 ? Math.max(0, nsToMs(eld.max) - RESOLUTION_MS) : 0;
  const eldP99 = eld.count > 0 ? Math.max(0, nsToMs(eld.percentile(99)) - RESOLUTION_MS) : 0;
  const stall: StallStats = {
    maxMs: Math.max(gapMax, eldMax),
    p99Ms: gaps.count > 0 ? nsToMs(gaps.percentile(99)) : 0,
    eldMaxMs: eldMax,
    eldP99Ms: eldP99,
    gapMaxMs: gapMax,
    samples,
  };
  const [from, to] = ownMaxAt;
  const worstGc: Record<string, number> = {};
  for (const g of gcs) {
    const overlap = Math.min(g.end, to) - Math.max(g.start, from);
    if (overlap > 0) worstGc[g.kind] = (worstGc[g.kind] ?? 0) + overlap;
  }
  stall.worstGcMs = worstGc;
  if (clock.available) {
    stall.ownMaxMs = ownMax;
    stall.runQueueMs = nsToMs(wait1 - wait0);
  }
  const out: Measured<T> = { value, ms, stall };
  if (mode === "quiet") {
    const raw = (cpu1.user - cpu0.user + cpu1.system - cpu0.system) / 1000;
    out.cpuMs = Math.max(0, raw - samples * perSample);
  }
  return out;
}

/** The stall a verdict uses: with the scheduler's share taken out where it can be measured. */
export function ownStall(s: StallStats): number {
  return s.ownMaxMs ?? s.maxMs;
}

/** Times a synchronous function (the whole call is one main-thread block). */
export function timeSync<T>(fn: () => T): { value: T; ms: number } {
  const t0 = performance.now();
  const value = fn();
  return { value, ms: performance.now() - t0 };
}

/** Gives the loop a moment between measurements (lets GC and pending I/O settle). */
export async function settle(ms = 20): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, ms));
}

let gcFn: (() => void) | undefined;

/**
 * A full garbage collection, so that one scenario's garbage is not collected during the next. `npm run
 * bench` starts Node without --expose-gc, so the flag is set at run time and `gc` read from a new context.
 */
export function fullGc(): void {
  if (!gcFn) {
    setFlagsFromString("--expose-gc");
    gcFn = runInNewContext("gc") as () => void;
  }
  gcFn();
}
