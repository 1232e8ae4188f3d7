// Benchmark 2, the hang case: the classifier accepts every request and never answers. Settling must end
// at the pass deadline (timeoutMs) plus the pipeline's own time; every output is kept.
import type { TaskRunner } from "../../src/main/platform/pool.ts";
import { HookAdapter } from "../../test/kit/hook.ts";
import type { LoopbackHost } from "../../test/kit/loopback-host.ts";
import { settle } from "../../test/kit/stall.ts";
import type { BenchMode } from "../lib/mode.ts";
import { measurePass, type PassEnv, type PassSample } from "../lib/pass.ts";
import { appendedRun, baseSession, releaseWorkloads, SessionSim } from "../lib/workloads.ts";

export interface HangSample extends PassSample {
  size: number;
  pass: string;
  timeoutMs: number;
  /** ms − timeoutMs. */
  overTimeoutMs: number;
}

export async function runHang(
  mode: BenchMode,
  env: PassEnv,
  runner: TaskRunner,
  lb: LoopbackHost,
  log: (line: string) => void,
): Promise<HangSample[]> {
  const samples: HangSample[] = [];
  const hangEnv: PassEnv = { ...env, config: { ...env.config, timeoutMs: mode.hangTimeoutMs } };
  const step = mode.hangStep;
  try {
    for (const size of mode.hangSizes) {
      const base = baseSession(size);
      const appended = appendedRun(step, 2000 + step, `h${size}n${step}`, base.at(-1)?.id ?? null);
      for (let rep = 0; rep < mode.slowReps; rep++) {
        const session = new HookAdapter(runner);
        const sim = new SessionSim(base);
        await lb.set({ behaviour: "hang" });
        // Cold pass, then one steady pass after `step` new entries (nothing was edited: all timed out).
        for (const [label, extra] of [
          ["cold", undefined],
          [`+${step}`, appended],
        ] as const) {
          if (extra) sim.append(extra);
          const { sample, result } = await measurePass(session, sim.project(), hangEnv, "spin", rep);
          samples.push({
            ...sample,
            size,
            pass: label,
            timeoutMs: mode.hangTimeoutMs,
            overTimeoutMs: sample.ms - mode.hangTimeoutMs,
          });
          sim.applyPass(result.edits, result.record);
          await settle(50);
        }
        await lb.set({ behaviour: "answer" });
        log(`  hang ${size}: rep ${rep + 1}/${mode.slowReps}`);
      }
      releaseWorkloads();
    }
  } finally {
    await lb.set({ behaviour: "answer" });
  }
  return samples;
}
