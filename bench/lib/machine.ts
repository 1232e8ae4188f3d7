// The machine a run was measured on, for the report.
import { availableParallelism, cpus, loadavg, totalmem, type } from "node:os";

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
