/**
 * Time and memory of `context-guard replay` on a long session, with the guard and without it (no pass
 * runs: the replay of the session as recorded), side by side per 1,000 entries.
 *
 *   npm exec -- node bench/generate-sample.ts --entries 10000 --out /tmp/s10k.jsonl
 *   npm exec -- node bench/replay-scale.ts /tmp/s10k.jsonl [--only guard|off]
 *
 * Each arm runs in a child process of its own (both at once), so each peak RSS is its own:
 * RSS and V8 heap are sampled every 1,000 entries, the peak is the process's maxRSS.
 */
import { execFile } from "node:child_process";
import { parseArgs, promisify } from "node:util";
import { DEFAULT_CONFIG } from "../src/core/shared/config.ts";
import { localClassify } from "../src/main/pass/classifier.ts";
import { createTaskRunner } from "../src/main/platform/pool.ts";
import { replaySession } from "../src/main/replay/driver.ts";
import { loadPriceBook } from "../src/main/replay/prices.ts";
import { readSessionFile } from "../src/main/replay/reader.ts";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { only: { type: "string" }, arm: { type: "string" } },
});
const file = positionals[0];
if (!file) throw new Error("usage: replay-scale.ts <session.jsonl> [--only guard|off]");

interface ArmResult {
  arm: string;
  entries: number;
  readMs: number;
  replayMs: number;
  maxRssMb: number;
  /** CPU seconds of the process, its worker threads included. */
  cpuS: number;
  samples: Array<{ entries: number; rssMb: number; heapMb: number }>;
}

const mb = (bytes: number) => Math.round(bytes / (1024 * 1024));

async function runArm(arm: "guard" | "off"): Promise<ArmResult> {
  const t0 = performance.now();
  const session = await readSessionFile(file as string);
  const readMs = performance.now() - t0;
  const samples: ArmResult["samples"] = [];
  const runner = await createTaskRunner({ backend: "piscina", minThreads: 1, maxThreads: 1 });
  const t1 = performance.now();
  try {
    await replaySession(session, {
      runner,
      classify: localClassify(),
      modelRef: "local/lexical",
      config: { ...DEFAULT_CONFIG, enabled: true, model: "local/lexical" },
      prices: await loadPriceBook(),
      guard: arm === "guard",
      onProgress: (done) => {
        if (done % 1000 !== 0) return;
        const m = process.memoryUsage();
        samples.push({ entries: done, rssMb: mb(m.rss), heapMb: mb(m.heapUsed) });
        // On stderr as it goes, so a run stopped early still says how far it got and at what size.
        process.stderr.write(
          `${arm} ${done} entries · ${((performance.now() - t1) / 60_000).toFixed(2)} min · RSS ${mb(m.rss)} MB · heap ${mb(m.heapUsed)} MB\n`,
        );
      },
    });
  } finally {
    await runner.destroy();
  }
  return {
    arm,
    entries: session.branch.length,
    readMs,
    replayMs: performance.now() - t1,
    maxRssMb: mb(process.resourceUsage().maxRSS * 1024),
    cpuS: Math.round((process.cpuUsage().user + process.cpuUsage().system) / 1e6),
    samples,
  };
}

if (values.arm === "guard" || values.arm === "off") {
  process.stdout.write(`${JSON.stringify(await runArm(values.arm))}\n`);
} else {
  const arms = values.only ? [values.only] : ["guard", "off"];
  // The arms run at once, each in its own process: their memory is their own, their times share the CPU.
  const results: ArmResult[] = await Promise.all(
    arms.map(async (arm) => {
      const child = promisify(execFile)(process.execPath, [import.meta.filename, file, "--arm", arm], {
        encoding: "utf8",
        maxBuffer: 64 << 20,
      });
      child.child.stderr?.pipe(process.stderr);
      const { stdout } = await child;
      return JSON.parse(stdout.trim().split("\n").at(-1) as string) as ArmResult;
    }),
  );
  for (const r of results) {
    const per10k = r.entries > 0 ? ((r.readMs + r.replayMs) / 60_000 / (r.entries / 10_000)).toFixed(2) : "?";
    console.log(
      `${r.arm}: ${r.entries} entries · read ${(r.readMs / 1000).toFixed(1)} s · replay ${(r.replayMs / 60_000).toFixed(2)} min (${per10k} min per 10k) · CPU ${r.cpuS} s · peak RSS ${r.maxRssMb} MB`,
    );
  }
  console.log(`\n| entries | ${results.map((r) => `RSS ${r.arm} (MB) | heap ${r.arm} (MB)`).join(" | ")} |`);
  console.log(`|---|${results.map(() => "---|---").join("|")}|`);
  const first = results[0];
  for (let i = 0; i < (first?.samples.length ?? 0); i++) {
    const row = results.map((r) => `${r.samples[i]?.rssMb ?? ""} | ${r.samples[i]?.heapMb ?? ""}`);
    console.log(`| ${first?.samples[i]?.entries} | ${row.join(" | ")} |`);
  }
}
