/**
 * Two builds of context-guard side by side: the same quick scenarios run from two folders (a commit checked
 * out in a second folder, and this one), alternating which goes first, so both see the same machine.
 *
 *   node bench/compare.ts --base ../wt-base --rounds 3          # prints the table
 *   node bench/compare.ts --base ../wt-base --out COMPARISON.md # and writes it
 *
 * Each round runs `bench/run.ts --quick --only sessions,outputs` in each folder and reads the JSON it
 * writes. The table gives, per workload, the medians over rounds of the piscina passes measured with the
 * quiet probe: the longest own stall of Pi's thread, and the settle time.
 */
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { summarize } from "./lib/stats.ts";

const here = dirname(fileURLToPath(import.meta.url));
const { values } = parseArgs({
  options: {
    base: { type: "string" },
    head: { type: "string", default: join(here, "..") },
    rounds: { type: "string", default: "3" },
    only: { type: "string", default: "sessions,outputs" },
    out: { type: "string" },
  },
});
if (!values.base) throw new Error("--base <folder> is required (a checkout of the commit to compare with)");
const folders = { base: resolve(values.base), head: resolve(values.head) };
const rounds = Number(values.rounds);

interface Sample {
  backend: string;
  probe: string;
  ms: number;
  stall: { ownMaxMs: number; maxMs: number };
  size?: number;
  pass?: string;
  label?: string;
}

type Arm = keyof typeof folders;
/** Every repetition's figures. */
interface Slot {
  stall: number[];
  settle: number[];
}
const samples: Record<Arm, Map<string, Slot>> = { base: new Map(), head: new Map() };

function git(folder: string): string {
  try {
    return execFileSync("git", ["-C", folder, "log", "-1", "--format=%h %s"], { encoding: "utf8" }).trim();
  } catch {
    return basename(folder);
  }
}

function runOnce(arm: Arm): void {
  const folder = folders[arm];
  execFileSync(process.execPath, [join(folder, "bench/run.ts"), "--quick", "--only", values.only], {
    cwd: folder,
    stdio: ["ignore", "ignore", "inherit"],
  });
  const r = JSON.parse(readFileSync(join(folder, "bench/out/results-quick.json"), "utf8")) as {
    sessions?: Sample[];
    outputs?: Sample[];
  };
  for (const s of [...(r.sessions ?? []), ...(r.outputs ?? [])]) {
    if (s.probe !== "quiet") continue;
    const key = `${s.label ?? `${s.size} entries, ${s.pass}`} · ${s.backend}`;
    const slot = samples[arm].get(key) ?? { stall: [], settle: [] };
    slot.stall.push(s.stall.ownMaxMs);
    slot.settle.push(s.ms);
    samples[arm].set(key, slot);
  }
}

for (let round = 0; round < rounds; round++) {
  const order: Arm[] = round % 2 === 0 ? ["base", "head"] : ["head", "base"];
  for (const arm of order) {
    process.stderr.write(`round ${round + 1}/${rounds}: ${arm}\n`);
    runOnce(arm);
  }
}

const fmt = (n: number) => (n >= 100 ? n.toFixed(0) : n >= 10 ? n.toFixed(1) : n.toFixed(2));
const med = (xs: number[] | undefined) => (xs && xs.length > 0 ? summarize(xs).median : Number.NaN);
const lines = [
  `# Two builds side by side, ${new Date().toISOString()}: ${rounds} rounds of --only ${values.only}, medians`,
  "",
  `- **base:** ${git(folders.base)}`,
  `- **head:** ${git(folders.head)}`,
  "",
  "| workload · pool | stall base (ms) | stall head (ms) | head / base | settle base (ms) | settle head (ms) | head / base |",
  "|---|---:|---:|---:|---:|---:|---:|",
];
for (const [key, head] of samples.head) {
  const base = samples.base.get(key);
  const sb = med(base?.stall);
  const sh = med(head.stall);
  const tb = med(base?.settle);
  const th = med(head.settle);
  lines.push(
    `| ${key} | ${fmt(sb)} | ${fmt(sh)} | ${(sh / sb).toFixed(2)}× | ${fmt(tb)} | ${fmt(th)} | ${(th / tb).toFixed(2)}× |`,
  );
}
if (values.out) writeFileSync(values.out, `${lines.join("\n")}\n`);
process.stdout.write(`${lines.join("\n")}\n`);
