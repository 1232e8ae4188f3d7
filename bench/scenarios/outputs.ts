// Benchmark 1 for single huge outputs: one tool result of 50 KB … 20 MB (grep-style or a test log) at the
// end of a small run, judged by a pass whose mirror already holds the rest of the session (the output
// itself is the only new data, as in a real session).
import { serialize } from "node:v8";
import { chunkOutput } from "../../src/core/distill/chunk.ts";
import type { PoolBackend, TaskRunner } from "../../src/main/platform/pool.ts";
import { HookAdapter } from "../../test/kit/hook.ts";
import { type ProbeMode, settle, timeSync } from "../../test/kit/stall.ts";
import type { BenchMode } from "../lib/mode.ts";
import { measurePass, type PassEnv, type PassSample } from "../lib/pass.ts";
import { rotate } from "../lib/stats.ts";
import { baseSession, type OutputKind, output, outputRun, SessionSim, sizeLabel } from "../lib/workloads.ts";

export interface OutputSample extends PassSample {
  kind: OutputKind;
  bytes: number;
  label: string;
  chars: number;
  /** v8.serialize of the output as one message, timed apart from the pass: what a single clone would cost. */
  syncSerializeMs: number;
  /** v8.serialize of the largest message this pass actually posted (slices and pieces), and how many it posted. */
  largestMessageMs: number;
  messages: number;
  /** Chunks of the output and how many were too big for any request. */
  chunks: number;
}

const BASE_ENTRIES = 40;

const chunkCounts = new Map<string, number>();
function chunkCount(text: string): number {
  let n = chunkCounts.get(text);
  if (n === undefined) {
    n = chunkOutput(text).length;
    chunkCounts.set(text, n);
  }
  return n;
}

async function onePass(
  runner: TaskRunner,
  kind: OutputKind,
  bytes: number,
  env: PassEnv,
  rep: number,
  out: OutputSample[] | undefined,
  probe: ProbeMode = "spin",
): Promise<void> {
  const session = new HookAdapter(runner);
  const sim = new SessionSim(baseSession(BASE_ENTRIES));
  const text = output(kind, bytes);
  // The pass before the output arrived: fills the mirror (not measured).
  const before = await measurePass(session, sim.project(), env, "quiet", rep);
  sim.applyPass(before.result.edits, before.result.record);
  sim.append(outputRun(text, kind, `out-${kind}-${bytes}`, sim.lastId));
  const context = sim.project();
  await settle();
  const { sample } = await measurePass(session, context, env, probe, rep);
  const traffic = session.runner.traffic;
  const ser = timeSync(() => serialize({ fresh: [{ text }] }));
  let largestMessageMs = 0;
  for (const m of traffic.messages) largestMessageMs = Math.max(largestMessageMs, timeSync(() => serialize(m)).ms);
  out?.push({
    ...sample,
    kind,
    bytes,
    label: `${kind} ${sizeLabel(bytes)}`,
    chars: text.length,
    syncSerializeMs: ser.ms,
    largestMessageMs,
    messages: traffic.messages.length,
    chunks: chunkCount(text),
  });
  await session.release();
  await settle();
}

export async function runOutputs(
  mode: BenchMode,
  env: PassEnv,
  runners: ReadonlyMap<PoolBackend, TaskRunner>,
  log: (line: string) => void,
): Promise<OutputSample[]> {
  const samples: OutputSample[] = [];
  const runner = (b: PoolBackend) => runners.get(b) as TaskRunner;
  for (const { kind, bytes } of mode.outputs) {
    // The runners are warm from the session passes; the full suite also warms up on each output.
    if (mode.name === "full") for (const b of mode.backends) await onePass(runner(b), kind, bytes, env, -1, undefined);
    for (let rep = 0; rep < mode.reps; rep++) {
      for (const b of rotate(mode.backends, rep)) await onePass(runner(b), kind, bytes, env, rep, samples);
      // The product's backend once more with only the event-loop-delay probe.
      await onePass(runner("piscina"), kind, bytes, env, rep, samples, "quiet");
    }
    log(`  outputs ${kind} ${sizeLabel(bytes)}: done`);
  }
  return samples;
}
