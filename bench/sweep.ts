/**
 * The money sweep behind the break-even defaults (issue 19): settings × sessions → dollars, guard off and on,
 * through `context-guard replay --model local/lexical` (the same pass as the extension, priced by the replay's
 * cache model). Sessions: the real ones in ../shared/sessions/, bench/sample, and a generated long one.
 *
 *   node bench/sweep.ts                 # writes bench/SWEEP.md and bench/out/sweep.json
 *   node bench/sweep.ts --only base,m2  # some settings only (written to bench/out/)
 *   node bench/sweep.ts --only margin-2 --sessions session   # and some sessions (file names without .jsonl)
 */
import { execFile, execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, join, resolve } from "node:path";
import { parseArgs, promisify } from "node:util";
import { generateSession, writeSessionFile } from "../test/kit/generate.ts";

const here = import.meta.dirname;
const repo = resolve(here, "..");
const shared = resolve(repo, "../shared/sessions");

/** Each setting changes a few keys from the defaults. */
export const SETTINGS: Record<string, Record<string, unknown>> = {
  "margin-1.4": { breakEvenMargin: 1.4 },
  "margin-2": { breakEvenMargin: 2 },
  "margin-3": { breakEvenMargin: 3 },
  "margin-2 batch-100k": { breakEvenMargin: 2, midRunBatchChars: 100_000, midRunBatchCharsOpenAI: 100_000 },
  "margin-2 exchange-16k": { breakEvenMargin: 2, exchangeMinSavingChars: 16_000 },
  "break-even-off": { midRunBreakEven: false, exchangeBreakEven: false },
};

interface Cell {
  off: number;
  on: number;
  classifier: number;
  checkpoints: number;
}

const { values } = parseArgs({ options: { only: { type: "string" }, sessions: { type: "string" } } });
const only = values.only ? new Set(values.only.split(",")) : undefined;
const names = Object.keys(SETTINGS).filter((n) => only === undefined || only.has(n));

async function sessions(dir: string): Promise<string[]> {
  const real = [
    "badlogic__pi-mono__large-session.jsonl",
    "castai__kimchi-dev__session.jsonl",
    "rycerzes__trl__session.jsonl",
  ]
    .map((f) => join(shared, f))
    .filter((f) => existsSync(f));
  const generated = [1].map((seed) => {
    const path = join(dir, `generated-${seed}.jsonl`);
    writeSessionFile(path, generateSession({ entries: 1500, seed, bigOutputs: true }));
    return path;
  });
  const all = [...real, join(repo, "bench/sample/session.jsonl"), ...generated];
  const wanted = values.sessions?.split(",");
  return wanted ? all.filter((f) => wanted.includes(basename(f, ".jsonl"))) : all;
}

async function replay(file: string, settings: Record<string, unknown>, dir: string): Promise<Cell> {
  const tag = `${basename(file, ".jsonl")}-${Math.random().toString(36).slice(2)}`;
  const config = join(dir, `${tag}.config.json`);
  const json = join(dir, `${tag}.json`);
  writeFileSync(config, JSON.stringify(settings));
  const args = [join(repo, "src/cli.ts"), "replay", file, "--model", "local/lexical", "--config", config];
  args.push("--json", json, "--out", join(dir, `${tag}.html`), "--agent-dir", join(dir, "agent"), "--no-progress");
  await promisify(execFile)(process.execPath, args, { cwd: dir, maxBuffer: 1 << 26 });
  const s = JSON.parse(readFileSync(json, "utf8")).sessions[0];
  const passes = (s.passes ?? []) as Array<{ phase: string; status: string }>;
  return {
    off: s.dollars.off,
    on: s.dollars.on,
    classifier: s.dollars.classifier,
    checkpoints: passes.filter((p) => p.phase === "mid-run" && p.status === "done").length,
  };
}

const dir = await mkdtemp(join(tmpdir(), "cg-sweep-"));
mkdirSync(join(dir, "agent"));
const files = await sessions(dir);
const results: Record<string, Record<string, Cell>> = {};
for (const name of names) {
  results[name] = {};
  for (const file of files) {
    const cell = await replay(file, SETTINGS[name] as Record<string, unknown>, dir);
    (results[name] as Record<string, Cell>)[basename(file, ".jsonl")] = cell;
    process.stderr.write(`${name} ${basename(file)}: ${JSON.stringify(cell)}\n`);
  }
}

const usd = (x: number) => `$${x.toFixed(2)}`;
const pct = (c: Cell) => ((c.on + c.classifier - c.off) / c.off) * 100;
const sessionNames = files.map((f) => basename(f, ".jsonl"));
// bench/sample/session.jsonl and generated-* are generated sessions, not recorded ones.
const isGenerated = (s: string) => s === "session" || s.startsWith("generated");
const label = (s: string) =>
  s === "session" ? "bench/sample (generated)" : s.replace(/__session$|__large-session$/, "");
const commit = execFileSync("git", ["log", "-1", "--format=%h"], { cwd: here, encoding: "utf8" }).trim();
const lines = [
  "# Break-even sweep",
  "",
  "`node bench/sweep.ts`: each cell is guard on (main model + classifier) against guard off, as the change in",
  "dollars, from `context-guard replay --model local/lexical`; `cp` is the number of checkpoints that ran.",
  "The generated session is `test/kit/generate.ts` with 1,500 entries, seed 1. Reasons for the",
  "defaults: [docs/edits-that-pay.md](../docs/edits-that-pay.md).",
  "",
  `Run on ${new Date().toISOString().slice(0, 10)} at commit ${commit}: a lab note; today's figures are in docs/replay.md.`,
  "",
  `| setting | ${sessionNames.map(label).join(" | ")} | saved: real sessions · all |`,
  `|---|${sessionNames.map(() => "---|").join("")}---|`,
];
for (const name of names) {
  const row = results[name] as Record<string, Cell>;
  const cells = sessionNames.map((s) => {
    const c = row[s] as Cell;
    return `${pct(c) >= 0 ? "+" : ""}${pct(c).toFixed(1)}% (${usd(c.off)}→${usd(c.on + c.classifier)}, cp ${c.checkpoints})`;
  });
  const saved = (keys: string[]) =>
    keys.reduce((n, k) => n + (row[k] as Cell).off - (row[k] as Cell).on - (row[k] as Cell).classifier, 0);
  const real = sessionNames.filter((k) => !isGenerated(k));
  const all = `${usd(saved(real))} real · ${usd(saved(sessionNames))} all`;
  lines.push(`| \`${name}\` ${JSON.stringify(SETTINGS[name])} | ${cells.join(" | ")} | ${all} |`);
}
mkdirSync(join(here, "out"), { recursive: true });
writeFileSync(join(here, "out/sweep.json"), JSON.stringify(results, null, 1));
writeFileSync(join(here, only || values.sessions ? "out/SWEEP.md" : "SWEEP.md"), `${lines.join("\n")}\n`);
process.stdout.write(`${lines.join("\n")}\n`);
