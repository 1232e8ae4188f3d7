// The probes' floor: the stall they report for a main thread that does nothing while 0, 1 or 2 worker
// threads burn CPU. On a 2-core machine the spinning setImmediate probe competes with busy workers for
// the cores, so a few milliseconds of "stall" are the scheduler, not the code under test.
import { Worker } from "node:worker_threads";
import { measureStall, type ProbeMode, type StallStats, settle } from "../../test/kit/stall.ts";
import type { BenchMode } from "../lib/mode.ts";

export interface FloorSample {
  busyWorkers: number;
  probe: ProbeMode;
  rep: number;
  stall: StallStats;
}

const BURN = `
const { parentPort, workerData } = require("node:worker_threads");
const end = Date.now() + workerData;
let x = 0;
while (Date.now() < end) x += Math.sqrt(x + 1);
parentPort.postMessage(x);
`;

function burn(ms: number): Promise<unknown> {
  const w = new Worker(BURN, { eval: true, workerData: ms });
  return new Promise((resolve) => w.once("message", resolve)).finally(() => w.terminate());
}

export async function runFloor(mode: BenchMode, log: (line: string) => void): Promise<FloorSample[]> {
  const samples: FloorSample[] = [];
  const windowMs = mode.floorWindowMs;
  for (let rep = 0; rep < mode.floorReps; rep++) {
    for (const busyWorkers of [0, 1, 2]) {
      for (const probe of ["spin", "quiet"] as const) {
        const burners = Array.from({ length: busyWorkers }, () => burn(windowMs + 150));
        await settle(busyWorkers > 0 ? 80 : 10); // the workers are up and burning
        const m = await measureStall(() => new Promise((resolve) => setTimeout(resolve, windowMs)), probe);
        samples.push({ busyWorkers, probe, rep, stall: m.stall });
        await Promise.all(burners);
      }
    }
  }
  log("  probe floor: done");
  return samples;
}
