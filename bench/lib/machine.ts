// The machine a run was measured on, for the report.
import { availableParallelism, cpus, loadavg, totalmem, type } from "node:os";
import { serialize } from "node:v8";
import { median } from "./stats.ts";

export interface MachineInfo {
  cpuModel: string;
  cores: number;
  totalMemGiB: number;
  os: string;
  node: string;
  v8: string;
  date: string;
  /** 1-minute load average when the run started and ended (other processes share the cores). */
  loadStart: number;
  loadEnd?: number;
  /**
   * The same fixed work timed at the start and the end of the run. A shared machine's speed changes from
   * hour to hour (other guests on the host), which the load average does not show: runs are comparable
   * only when these are.
   */
  speedStart?: ReferenceTimes;
  speedEnd?: ReferenceTimes;
}

export interface ReferenceTimes {
  /** JSON.stringify then JSON.parse of the same entries, ms (median of 7). */
  jsonMs: number;
  /** v8.serialize of 2,000 snapshot-like entries (about 4 MB of text), ms (median of 7). */
  serializeMs: number;
}

export const load1 = () => Math.round((loadavg()[0] ?? 0) * 100) / 100;

export function machineInfo(): MachineInfo {
  const cpu = cpus()[0];
  return {
    cpuModel: cpu?.model.trim() || "unknown",
    cores: availableParallelism(),
    totalMemGiB: Math.round((totalmem() / 1024 ** 3) * 10) / 10,
    os: `${type()} ${process.arch}`,
    node: process.version,
    v8: process.versions.v8,
    date: new Date().toISOString(),
    loadStart: load1(),
  };
}

/** Times the reference work (see MachineInfo.speedStart). */
export function referenceTimes(): ReferenceTimes {
  const line = "node_modules/example/lib/index.js:42:  return items.filter((item) => item.enabled);\n";
  const entries = Array.from({ length: 2000 }, (_, i) => ({
    id: `e${i}`,
    type: "message",
    role: i % 2 ? "toolResult" : "assistant",
    text: line.repeat(1 + (i % 60)),
    images: 0,
  }));
  const time = (f: () => unknown): number => {
    const t = performance.now();
    f();
    return performance.now() - t;
  };
  // Warm-up: flattens the repeated strings and compiles what the timed calls run.
  JSON.parse(JSON.stringify(entries));
  serialize(entries);
  const json: number[] = [];
  const sers: number[] = [];
  for (let i = 0; i < 7; i++) {
    json.push(time(() => JSON.parse(JSON.stringify(entries))));
    sers.push(time(() => serialize(entries)));
  }
  const round = (ms: number) => Math.round(ms * 100) / 100;
  return { jsonMs: round(median(json)), serializeMs: round(median(sers)) };
}
