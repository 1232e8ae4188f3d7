/**
 * Each mechanism added for the stall targets, measured by removing it. For every patch in
 * bench/mechanisms/ (the simplest straight-line code without the mechanism), this makes a worktree of the
 * commit with the patch applied and runs bench/compare.ts between a clean worktree of the same commit and
 * it (alternating rounds, so both see the same machine), then writes bench/MECHANISMS.md with a verdict per
 * mechanism. The HTTP thread needs no patch: the bench already runs the same passes with the classifier's
 * HTTP on the main thread ("piscina, HTTP on main"), side by side in every clean run.
 *
 *   npm run bench:mechanisms                              # every patch, 3 rounds (about 10 min each)
 *   npm run bench:mechanisms -- --only paced,next-turn    # some of them
 *   npm run bench:mechanisms -- --render                  # rewrite MECHANISMS.md from bench/out/mechanisms/
 *
 * `--rev` names the commit the patches apply to (default HEAD). The temporary worktrees are removed at the end.
 */
import { execFileSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { median } from "./lib/stats.ts";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..");
const outDir = join(here, "out", "mechanisms");

interface Mechanism {
  name: string;
  title: string;
  /** Where it lives, and what its removal patch puts instead. */
  what: string;
}

/** In the order they run; a mechanism with a patch file is measured with it, the HTTP thread by its rows. */
export const MECHANISMS: Mechanism[] = [
  {
    name: "next-turn",
    title: "Per-call event-loop turns",
    what: "`classifyAll` starts each classifier call in an event-loop turn of its own (`ownTurn`), and `localClassify` scores each request in one. Removed: calls start as the queue frees a slot.",
  },
  {
    name: "packed-requests",
    title: "Packed request buffers",
    what: "Request windows cross from the worker as one `v8.serialize` buffer (`workers/pass/packed-values.ts`), read one request at a time. Removed: the worker returns the requests and the pool clones them.",
  },
  {
    name: "paced",
    title: "Paced generators",
    what: "`paced` (`main/platform/pace.ts`) runs the snapshot build, the mirror diff and validation, yielding every 2 ms. Removed: `paced` drains the same steps straight through.",
  },
  {
    name: "sliced-sync",
    title: "Sliced syncs",
    what: "A sync of `SYNC_SLICE_CHARS` or more goes ahead of the plan in messages of about 500,000 characters, a larger text in pieces (`PassWorker.#sendAhead`). Removed: the whole sync goes in the plan's message (the warm-up's in one message).",
  },
  {
    name: "outcome-slices",
    title: "Outcome slices",
    what: "More than `OUTCOME_SLICE` classifier outcomes go to the worker in `outcomes` messages of 100 ahead of `finish`. Removed: they all go in the `finish` message.",
  },
  {
    name: "http-thread",
    title: "The HTTP thread",
    what: "The classifier's HTTP runs on a thread of its own (`main/platform/thread-fetch.ts`). Removed: the bench's `piscina, HTTP on main` passes, the same passes in the same runs with pi-ai's `fetch` on the main thread (no patch).",
  },
];

/** The README reports the 2,000-entry passes; its limitations name huge outputs. The verdict reads these. */
const counted = (key: string) => key.startsWith("2000 entries") || key.startsWith("grep 5 MB");
const STALL_MS = 1;
const SETTLE_RATIO = 1.05;
/** Within the spread, a cost this small is noise; a larger one cannot be told from it and keeps the mechanism. */
const SMALL_STALL_MS = 2;
const SMALL_SETTLE_RATIO = 1.1;

interface Slot {
  stall: number[];
  settle: number[];
  roundStall: number[];
  roundSettle: number[];
}
interface Compared {
  rounds: number;
  only: string;
  arms: Record<"base" | "head", { commit: string } & Record<string, Slot | string>>;
}
interface Saved {
  name: string;
  rev: string;
  started: string;
  seconds: number;
  load: [number, number];
  compared: Compared;
}

function git(args: string[], cwd = root): string {
  return execFileSync("git", args, { cwd, encoding: "utf8" }).trim();
}

function measure(names: string[], rev: string, rounds: number): void {
  mkdirSync(outDir, { recursive: true });
  const temp = mkdtempSync(join(tmpdir(), "cg-mechanisms-"));
  const modules = realpathSync(join(root, "node_modules"));
  const made: string[] = [];
  const worktree = (name: string) => {
    const dir = join(temp, name);
    git(["worktree", "add", "--detach", dir, rev]);
    made.push(dir);
    symlinkSync(modules, join(dir, "node_modules"));
    return dir;
  };
  try {
    const base = worktree("base");
    for (const name of names) {
      const patch = join(here, "mechanisms", `${name}.patch`);
      // The HTTP thread's rows are in every clean run: a compare of the clean tree with itself measures them.
      const head = existsSync(patch) ? worktree(name) : base;
      if (head !== base) git(["apply", patch], head);
      const started = new Date();
      const load1 = loadavg()[0] as number;
      const json = join(outDir, `${name}.compare.json`);
      process.stderr.write(`${name}: ${rounds} rounds, load ${load1.toFixed(2)}\n`);
      execFileSync(
        process.execPath,
        [
          join(here, "compare.ts"),
          ...["--base", base, "--head", head, "--rounds", String(rounds)],
          ...["--out", join(outDir, `${name}.md`), "--json", json],
        ],
        { cwd: root, stdio: ["ignore", "ignore", "inherit"] },
      );
      const saved: Saved = {
        name,
        rev: git(["log", "-1", "--format=%h %s", rev]),
        started: started.toISOString(),
        seconds: Math.round((Date.now() - started.getTime()) / 1000),
        load: [load1, loadavg()[0] as number],
        compared: JSON.parse(readFileSync(json, "utf8")) as Compared,
      };
      writeFileSync(join(outDir, `${name}.json`), `${JSON.stringify(saved)}\n`);
      if (head !== base) {
        git(["worktree", "remove", "--force", head]);
        made.splice(made.indexOf(head), 1);
      }
    }
  } finally {
    for (const dir of made) git(["worktree", "remove", "--force", dir]);
  }
}

type Row = {
  key: string;
  with: Slot;
  without: Slot;
};

type Call = "costs" | "unclear" | "noise" | "nothing";

function judge(row: Row): { dStall: number; ratio: number; call: Call } {
  const dStall = median(row.without.stall) - median(row.with.stall);
  const ratio = median(row.without.settle) / median(row.with.settle);
  const overlap = (a: number[], b: number[]) => Math.min(...a) <= Math.max(...b) && Math.min(...b) <= Math.max(...a);
  const stallCost = dStall > STALL_MS;
  const settleCost = ratio > SETTLE_RATIO;
  if (!stallCost && !settleCost) return { dStall, ratio, call: "nothing" };
  const clear =
    (stallCost && !overlap(row.with.roundStall, row.without.roundStall)) ||
    (settleCost && !overlap(row.with.roundSettle, row.without.roundSettle));
  if (clear) return { dStall, ratio, call: "costs" };
  const small = dStall <= SMALL_STALL_MS && ratio <= SMALL_SETTLE_RATIO;
  return { dStall, ratio, call: small ? "noise" : "unclear" };
}

const slots = (arm: Compared["arms"]["base"]) =>
  Object.entries(arm).filter((e): e is [string, Slot] => typeof e[1] === "object");

/** With and without the mechanism, per workload. The HTTP thread's rows pool every clean run. */
function rowsOf(m: Mechanism, all: Map<string, Saved>): Row[] {
  if (m.name !== "http-thread") {
    const saved = all.get(m.name);
    if (!saved) return [];
    const head = new Map(slots(saved.compared.arms.head));
    return slots(saved.compared.arms.base)
      .filter(([key]) => key.endsWith("· piscina") && head.has(key))
      .map(([key, slot]) => ({ key, with: slot, without: head.get(key) as Slot }));
  }
  const pooled = new Map<string, Slot>();
  for (const saved of all.values()) {
    for (const [key, slot] of slots(saved.compared.arms.base)) {
      const into = pooled.get(key) ?? { stall: [], settle: [], roundStall: [], roundSettle: [] };
      for (const k of ["stall", "settle", "roundStall", "roundSettle"] as const) into[k].push(...slot[k]);
      pooled.set(key, into);
    }
  }
  const rows: Row[] = [];
  for (const [key, slot] of pooled) {
    const onMain = pooled.get(key.replace(/· piscina$/, "· piscina, HTTP on main"));
    if (key.endsWith("· piscina") && onMain) rows.push({ key, with: slot, without: onMain });
  }
  return rows;
}

const fmt = (n: number) => (Math.abs(n) >= 100 ? n.toFixed(0) : Math.abs(n) >= 10 ? n.toFixed(1) : n.toFixed(2));
const spread = (xs: number[]) => `${fmt(Math.min(...xs))}–${fmt(Math.max(...xs))}`;

function render(): void {
  const all = new Map<string, Saved>();
  if (existsSync(outDir)) {
    for (const file of readdirSync(outDir).filter((f) => /^[a-z-]+\.json$/.test(f) && !f.includes(".compare"))) {
      const saved = JSON.parse(readFileSync(join(outDir, file), "utf8")) as Saved;
      all.set(saved.name, saved);
    }
  }
  const runs = [...all.values()];
  const lines = [
    "# Each mechanism, measured by removing it",
    "",
    "Generated by `npm run bench:mechanisms` (`bench/mechanisms.ts`). Do not edit by hand: rerun it.",
    "",
    "Each stall mechanism stays only if removing it costs more than 1 ms of own stall or 5% of settle time on a",
    "workload the README reports. For each one, `bench/mechanisms/<name>.patch` replaces it with the simplest",
    "straight-line code; `bench/compare.ts` then runs `bench/run.ts --quick --only sessions,outputs` from a clean",
    "worktree of the commit and from a patched one, alternating which goes first, so both see the same machine.",
    "Figures are medians over every repetition of every round (quiet probe, piscina pool; own stall = the",
    "longest block of Pi's thread with its run-queue wait taken out, as in RESULTS.md). Quick mode: 3",
    "repetitions a round, a classifier 10 ms away, concurrency 6.",
    "",
    "- **Counted workloads:** the 2,000-entry passes (the README's table) and the 5 MB grep output (its",
    "  limitations name huge outputs). The 10,000-entry session is in the full suite only and was not run here.",
    "  The 200-entry and 50 KB rows are shown for information.",
    "- **Noise:** the spread is the range of the per-round medians of each side. A cost over the threshold whose",
    `  ranges overlap is taken as noise only when it is also small (at most ${SMALL_STALL_MS} ms of stall and`,
    `  ${Math.round((SMALL_SETTLE_RATIO - 1) * 100)}% of settle); a larger one is *unclear* and keeps the mechanism.`,
  ];
  if (runs.length > 0) {
    const first = runs.reduce((a, b) => (a.started < b.started ? a : b));
    const loads = runs.flatMap((r) => r.load);
    lines.push(
      `- **Commit measured:** ${first.rev} (the patches apply to it). **Rounds:** ${first.compared.rounds} per mechanism.`,
      `- **Run:** ${runs.length} compares from ${first.started}, ${Math.round(runs.reduce((n, r) => n + r.seconds, 0) / 60)} min in all. **Load:** 1-minute load average ${fmt(Math.min(...loads))}–${fmt(Math.max(...loads))} at the compares' starts and ends, on 2 cores shared with other work (other test suites ran at the same time).`,
    );
  }
  lines.push("", "| mechanism | worst counted workload: stall cost · settle ratio | verdict |", "|---|---|---|");
  const details: string[] = [];
  for (const m of MECHANISMS) {
    const rows = rowsOf(m, all);
    if (rows.length === 0) {
      lines.push(`| ${m.title} | not measured | — |`);
      continue;
    }
    const judged = rows.map((r) => ({ row: r, ...judge(r) }));
    const mine = judged.filter((j) => counted(j.row.key));
    const keep = mine.some((j) => j.call === "costs" || j.call === "unclear");
    const worst = mine.reduce((a, b) => (b.dStall > a.dStall ? b : a), mine[0] as (typeof mine)[0]);
    const worstSettle = mine.reduce((a, b) => (b.ratio > a.ratio ? b : a), mine[0] as (typeof mine)[0]);
    lines.push(
      `| ${m.title} | ${worst.dStall >= 0 ? "+" : ""}${fmt(worst.dStall)} ms (${worst.row.key.replace(" · piscina", "")}) · ${worstSettle.ratio.toFixed(2)}× (${worstSettle.row.key.replace(" · piscina", "")}) | ${keep ? "**keep**" : "**delete**"} |`,
    );
    details.push(
      "",
      `## ${m.title} (\`${m.name}\`): ${keep ? "keep" : "delete"}`,
      "",
      m.what,
      "",
      "| workload | stall with (ms) | stall without | cost (ms) | round medians with / without | settle with (ms) | settle without | without / with | round medians with / without | call |",
      "|---|---:|---:|---:|---|---:|---:|---:|---|---|",
    );
    for (const j of judged) {
      const r = j.row;
      const call = counted(r.key) ? j.call : `(${j.call})`;
      details.push(
        `| ${r.key.replace(" · piscina", "")} | ${fmt(median(r.with.stall))} | ${fmt(median(r.without.stall))} | ${j.dStall >= 0 ? "+" : ""}${fmt(j.dStall)} | ${spread(r.with.roundStall)} / ${spread(r.without.roundStall)} | ${fmt(median(r.with.settle))} | ${fmt(median(r.without.settle))} | ${j.ratio.toFixed(2)}× | ${spread(r.with.roundSettle)} / ${spread(r.without.roundSettle)} | ${call} |`,
      );
    }
  }
  lines.push(
    "",
    "Calls: *costs* = over the threshold and outside the spread; *unclear* = over it, within the spread, and",
    "not small; *noise* = over it, within the spread, and small; *nothing* = under it. Parenthesised calls",
    "are on workloads the verdict does not read.",
    ...details,
  );
  writeFileSync(join(here, "MECHANISMS.md"), `${lines.join("\n")}\n`);
  process.stdout.write(`${lines.join("\n")}\n`);
}

const { values } = parseArgs({
  options: {
    only: { type: "string" },
    rev: { type: "string", default: "HEAD" },
    rounds: { type: "string", default: "3" },
    render: { type: "boolean", default: false },
  },
});
if (!values.render) {
  const names = values.only ? values.only.split(",") : MECHANISMS.map((m) => m.name);
  for (const name of names) {
    if (!MECHANISMS.some((m) => m.name === name)) throw new Error(`no mechanism ${name}`);
  }
  // The HTTP thread's rows come from the other compares' clean runs: it needs a run of its own only alone.
  const run = names.length > 1 ? names.filter((n) => n !== "http-thread") : names;
  measure(run, values.rev, Number(values.rounds));
}
render();
