// Benchmarks 1–3 on heavy sessions: main-thread stall and settle latency of agent_before_settle for each
// backend (inline / piscina / tinypool, the same code behind one switch), on the first pass with a cold
// mirror (every entry sent) and on later passes after N new entries (the steady state of a session).
// Between passes the previous pass's edits are applied the way Pi applies them.
import type { PoolBackend, TaskRunner } from "../../src/main/platform/pool.ts";
import { HookAdapter } from "../../test/kit/hook.ts";
import type { ProbeMode } from "../../test/kit/stall.ts";
import { fullGc, settle } from "../../test/kit/stall.ts";
import type { BenchMode } from "../lib/mode.ts";
import { HTTP_ON_MAIN, measurePass, type PassEnv, type PassSample } from "../lib/pass.ts";
import { rotate } from "../lib/stats.ts";
import { appendedRun, baseSession, releaseWorkloads, SessionSim } from "../lib/workloads.ts";

export interface SessionSample extends PassSample {
  size: number;
  /** "cold" or "+N". */
  pass: string;
}

export interface SessionsResult {
  samples: SessionSample[];
  /** Entries of each appended run, by step. */
  steps: number[];
}

/** cold pass, then one pass after each step of new entries, on one session model. */
async function sequence(
  runner: TaskRunner,
  size: number,
  mode: BenchMode,
  env: PassEnv,
  probe: ProbeMode,
  rep: number,
  appended: Map<number, ReturnType<typeof appendedRun>>,
  out: SessionSample[] | undefined,
  /** Recorded under this backend name instead of the runner's (a variant of the same backend). */
  label?: string,
): Promise<void> {
  const session = new HookAdapter(runner);
  const sim = new SessionSim(baseSession(size));
  const passes: Array<[string, number | undefined]> = [
    ["cold", undefined],
    ...mode.steps.map((s): [string, number] => [`+${s}`, s]),
  ];
  const variant = label;
  for (const [label, step] of passes) {
    if (step !== undefined) sim.append(appended.get(step) ?? []);
    const context = sim.project();
    const { sample, result } = await measurePass(session, context, env, probe, rep);
    out?.push({ ...sample, size, pass: label, ...(variant ? { backend: variant } : {}) });
    sim.applyPass(result.edits, result.record);
    await settle();
  }
  await session.release();
}

export async function runSessions(
  mode: BenchMode,
  env: PassEnv,
  runners: ReadonlyMap<PoolBackend, TaskRunner>,
  log: (line: string) => void,
): Promise<SessionsResult> {
  const samples: SessionSample[] = [];
  const runner = (b: PoolBackend) => runners.get(b) as TaskRunner;
  for (const [i, size] of mode.sessionSizes.entries()) {
    const base = baseSession(size);
    const last = base.at(-1)?.id ?? null;
    const appended = new Map(mode.steps.map((s) => [s, appendedRun(s, 1000 + s, `s${size}n${s}`, last)]));
    // Warm-up: one unrecorded sequence per backend (JIT on both sides, sockets, the worker's store). The
    // quick suite warms up on the first size only, the full one on every size but the largest (20 s a pass).
    if (i === 0 || (mode.name === "full" && size < 10_000))
      for (const b of mode.backends) await sequence(runner(b), size, mode, env, "spin", -1, appended, undefined);
    for (let rep = 0; rep < mode.reps; rep++) {
      for (const b of rotate(mode.backends, rep)) {
        await sequence(runner(b), size, mode, env, "spin", rep, appended, samples);
      }
      // The product's backend once more without the spinning probe: main-thread CPU per pass. Then the same
      // with the classifier's HTTP on the main thread, the design the HTTP thread replaced: the two take
      // turns going first, and each starts from a collected heap, so that neither collects the garbage of
      // the passes before it (a Pi process between two runs has had time to collect its own).
      const quiet: Array<[PassEnv, string | undefined]> = [[env, undefined]];
      if (env.classifyInline) quiet.push([{ ...env, classify: env.classifyInline }, HTTP_ON_MAIN]);
      for (const [quietEnv, label] of rotate(quiet, rep)) {
        fullGc();
        await sequence(runner("piscina"), size, mode, quietEnv, "quiet", rep, appended, samples, label);
      }
      log(`  sessions ${size}: rep ${rep + 1}/${mode.reps}`);
    }
    // The next size runs with only its own session in memory.
    appended.clear();
    releaseWorkloads();
  }
  return { samples, steps: mode.steps };
}
