/**
 * Runs every script in bench/ at its smallest size, one after the other, and fails if one fails. Its figures
 * mean nothing: this checks that each script still runs against today's code.
 *
 *   npm run bench:smoke
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { SMOKE } from "./lib/smoke-list.ts";

const here = import.meta.dirname;
const repo = resolve(here, "..");
const tmp = mkdtempSync(join(tmpdir(), "cg-bench-smoke-"));
const failed: string[] = [];
try {
  for (const { script, args } of SMOKE) {
    const argv = args.map((a) => a.replaceAll("{tmp}", tmp).replaceAll("{repo}", repo));
    const started = performance.now();
    process.stderr.write(`bench:smoke: ${script} ${argv.join(" ")}\n`);
    const run = spawnSync(process.execPath, [join(here, script), ...argv], { cwd: repo, stdio: "inherit" });
    const seconds = ((performance.now() - started) / 1000).toFixed(0);
    if (run.status !== 0) failed.push(`${script} (exit ${run.status ?? run.signal})`);
    process.stderr.write(`bench:smoke: ${script} ${run.status === 0 ? "ran" : "FAILED"} in ${seconds} s\n`);
  }
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
if (failed.length > 0) {
  process.stderr.write(`bench:smoke: ${failed.length} of ${SMOKE.length} failed: ${failed.join(", ")}\n`);
  process.exit(1);
}
process.stderr.write(`bench:smoke: all ${SMOKE.length} scripts ran\n`);
