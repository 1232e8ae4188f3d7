// Pool cold start, measured in a fresh Node process per sample (module caches and JIT are cold, as when
// Pi starts a session): importing the pool library and creating the pool (createTaskRunner), then the
// first task (ping: the worker thread boots and loads the task module), then a first real plan.
// Run as a child: `node bench/scenarios/pool-start.ts --child <backend>` prints one JSON line.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { PoolBackend } from "../../src/main/platform/pool.ts";
import type { StallStats } from "../../test/kit/stall.ts";
import type { BenchMode } from "../lib/mode.ts";
import { rotate } from "../lib/stats.ts";

export interface PoolStartSample {
  backend: PoolBackend;
  rep: number;
  /** createTaskRunner() resolved (includes the dynamic import of the pool library). */
  createMs: number;
  /** Then the first ping answered (thread boot + task module load). */
  firstTaskMs: number;
  /** createTaskRunner() → first ping answered. */
  coldStartMs: number;
  /** Then a first plan task over a 200-entry session (cold JIT in the worker). */
  firstPlanMs: number;
  /** Longest main-thread stall over create + first ping. */
  stall: StallStats;
}

async function child(backend: PoolBackend): Promise<void> {
  const { measureStall } = await import("../../test/kit/stall.ts");
  const { createTaskRunner } = await import("../../src/main/platform/pool.ts");
  const { SnapshotBuilder } = await import("../../src/main/pass/snapshot.ts");
  const { WorkerMirror } = await import("../../src/main/pass/worker-mirror.ts");
  const { generateSession, toProjection } = await import("../../test/kit/generate.ts");
  const { benchConfig } = await import("../../test/kit/hook.ts");
  const entries = new SnapshotBuilder().entries(toProjection(generateSession({ entries: 200, seed: 7 })));
  const sync = new WorkerMirror().prepare(entries);
  let createMs = 0;
  const m = await measureStall(async () => {
    const t0 = performance.now();
    const runner = await createTaskRunner({ backend, minThreads: 1, maxThreads: 1 });
    createMs = performance.now() - t0;
    await runner.run("ping", undefined);
    return runner;
  }, "spin");
  const runner = m.value;
  const t1 = performance.now();
  await runner.run("pass", { kind: "settings", version: 1, settings: benchConfig() });
  await runner.run("pass", { kind: "plan", sync, settings: 1, passId: "cold" });
  const firstPlanMs = performance.now() - t1;
  await runner.destroy();
  const out: Omit<PoolStartSample, "rep"> = {
    backend,
    createMs,
    firstTaskMs: m.ms - createMs,
    coldStartMs: m.ms,
    firstPlanMs,
    stall: m.stall,
  };
  process.stdout.write(`${JSON.stringify(out)}\n`);
}

function spawnChild(backend: PoolBackend): Promise<Omit<PoolStartSample, "rep">> {
  const script = fileURLToPath(import.meta.url);
  return new Promise((resolve, reject) => {
    const p = spawn(
      process.execPath,
      [...process.execArgv, "--disable-warning=ExperimentalWarning", script, "--child", backend],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    let stdout = "";
    let stderr = "";
    p.stdout.on("data", (d: Buffer) => {
      stdout += d.toString();
    });
    p.stderr.on("data", (d: Buffer) => {
      stderr += d.toString();
    });
    p.on("error", reject);
    p.on("close", (code) => {
      const line = stdout.trim().split("\n").at(-1) ?? "";
      if (code !== 0 || !line.startsWith("{")) reject(new Error(`pool-start child failed (${code}): ${stderr}`));
      else resolve(JSON.parse(line) as Omit<PoolStartSample, "rep">);
    });
  });
}

export async function runPoolStart(mode: BenchMode, log: (line: string) => void): Promise<PoolStartSample[]> {
  const samples: PoolStartSample[] = [];
  const backends = mode.backends.filter((b) => b !== "inline");
  for (let rep = 0; rep < mode.poolStartReps; rep++) {
    for (const b of rotate(backends, rep)) samples.push({ ...(await spawnChild(b)), rep });
  }
  log(`  pool start: ${samples.length} cold processes`);
  return samples;
}

if (process.argv[2] === "--child") {
  await child(process.argv[3] as PoolBackend);
}
