// Benchmark 5: recall with a catastrophic pattern. In a worker, the vm timeout stops the regex and the main
// thread stays free; inline (the same task code on the main thread) blocks for the whole time limit.
import type { PoolBackend, TaskRunner } from "../../src/main/platform/pool.ts";
import { createTaskRunner } from "../../src/main/platform/pool.ts";
import { measureStall, type ProbeMode, type StallStats, settle } from "../../test/kit/stall.ts";
import type { BenchMode } from "../lib/mode.ts";
import { rotate } from "../lib/stats.ts";

export interface RecallSample {
  backend: PoolBackend;
  /** "spin": setImmediate gap + event-loop delay; "quiet": event-loop delay only (no probe on the cores). */
  probe: ProbeMode;
  rep: number;
  timeoutMs: number;
  /** Call → error result, ms. */
  ms: number;
  stall: StallStats;
  ok: boolean;
  error?: string;
  /** A plain recall right after, on the same runner: the worker survived. */
  nextMs: number;
  nextOk: boolean;
}

export const CATASTROPHIC_PATTERN = "(a+)+$";

/** 400 lines: log-like text with a 40×"a" + "!" line every 20 lines (each one alone defeats the regex). */
export function catastrophicText(): string {
  const lines: string[] = [];
  for (let i = 0; i < 400; i++) {
    lines.push(i % 20 === 7 ? `${"a".repeat(40)}!` : `line ${i}: request handled in ${(i * 37) % 500} ms`);
  }
  return `${lines.join("\n")}\n`;
}

export async function runRecall(mode: BenchMode, log: (line: string) => void): Promise<RecallSample[]> {
  const samples: RecallSample[] = [];
  const text = catastrophicText();
  const runners = new Map<PoolBackend, TaskRunner>();
  for (const b of mode.recallBackends) {
    const r = await createTaskRunner({ backend: b, minThreads: 1, maxThreads: 1 });
    await r.run("recall", { text, pattern: "handled", timeoutMs: mode.recallTimeoutMs });
    runners.set(b, r);
  }
  try {
    for (let rep = 0; rep < mode.slowReps; rep++) {
      const plan = rotate(mode.recallBackends, rep).flatMap(
        (b): Array<[PoolBackend, ProbeMode]> =>
          b === "inline"
            ? [[b, "spin"]]
            : [
                [b, "spin"],
                [b, "quiet"],
              ],
      );
      for (const [b, probe] of plan) {
        const runner = runners.get(b) as TaskRunner;
        const m = await measureStall(
          () => runner.run("recall", { text, pattern: CATASTROPHIC_PATTERN, timeoutMs: mode.recallTimeoutMs }),
          probe,
        );
        const t0 = performance.now();
        const next = await runner.run("recall", { text, pattern: "handled in 1\\d\\d ms", timeoutMs: 1000 });
        const nextMs = performance.now() - t0;
        const sample: RecallSample = {
          backend: b,
          probe,
          rep,
          timeoutMs: mode.recallTimeoutMs,
          ms: m.ms,
          stall: m.stall,
          ok: m.value.ok,
          nextMs,
          nextOk: next.ok,
        };
        if (!m.value.ok) sample.error = m.value.error;
        samples.push(sample);
        await settle(50);
      }
      log(`  recall: rep ${rep + 1}/${mode.slowReps}`);
    }
  } finally {
    for (const r of runners.values()) await r.destroy();
  }
  return samples;
}
