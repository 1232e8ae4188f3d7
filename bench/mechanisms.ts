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
 * `--rev` names the commit the patches apply to (default HEAD); `--add` adds the rounds to the saved ones (the
 * same commit) instead of replacing them. The temporary worktrees are removed at the end.
 */
import { execFileSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
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

/** What a workload's pass does, from the bench's samples (the workloads are generated from fixed seeds). */
interface Facts {
  requests: number;
  sentEntries: number;
  sentChars: number;
}

interface Mechanism {
  name: string;
  title: string;
  /** Where it lives, and what its removal patch puts instead. */
  what: string;
  /**
   * Whether a workload's pass runs the mechanism's code at all. Where it does not, the patch changes
   * nothing, and the row shows what the machine alone makes of the same code (an in-run control).
   */
  runs?: (f: Facts) => boolean;
}

const anyRequest = (f: Facts) => f.requests > 0;

/** In the order they run; a mechanism with a patch file is measured with it, the HTTP thread by its rows. */
export const MECHANISMS: Mechanism[] = [
  {
    name: "next-turn",
    title: "Per-call event-loop turns",
    what: "`classifyAll` starts each classifier call in an event-loop turn of its own (`ownTurn`), and `localClassify` scores each request in one. Removed: calls start as the queue frees a slot.",
    runs: anyRequest,
  },
  {
    name: "packed-requests",
    title: "Packed request buffers",
    what: "Request windows cross from the worker as one `v8.serialize` buffer (`workers/pass/packed-values.ts`), read one request at a time. Removed: the worker returns the requests and the pool clones them.",
    runs: anyRequest,
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
    runs: (f) => f.sentChars + 1000 * f.sentEntries >= 500_000,
  },
  {
    name: "outcome-slices",
    title: "Outcome slices",
    what: "More than `OUTCOME_SLICE` classifier outcomes go to the worker in `outcomes` messages of 100 ahead of `finish`. Removed: they all go in the `finish` message.",
    runs: (f) => f.requests > 100,
  },
  {
    name: "control",
    title: "Control: no change",
    what: "Two clean worktrees of the same commit, compared as the patched ones are: what the machine alone makes of the same code.",
  },
  {
    name: "http-thread",
    title: "The HTTP thread",
    what: "The classifier's HTTP runs on a thread of its own (`main/platform/thread-fetch.ts`). Removed: the bench's `piscina, HTTP on main` passes, the same passes in the same runs with pi-ai's `fetch` on the main thread (no patch).",
    runs: anyRequest,
  },
];

/** The README reports the 2,000-entry passes; its limitations name huge outputs. The verdict reads these. */
const counted = (key: string) => key.startsWith("2000 entries") || key.startsWith("grep 5 MB");
const STALL_MS = 1;
const SETTLE_RATIO = 1.05;
/** Not significant and this small: noise. Not significant and larger: this run cannot tell. */
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
  /** Per workload key, from the clean worktree's last run. */
  facts?: Record<string, Facts>;
}

interface BenchSample extends Facts {
  probe: string;
  backend: string;
  size?: number;
  pass?: string;
  label?: string;
}

/** The facts of each workload in a results-quick.json, keyed as compare.ts keys them. */
function factsOf(file: string): Record<string, Facts> {
  if (!existsSync(file)) return {};
  const r = JSON.parse(readFileSync(file, "utf8")) as { sessions?: BenchSample[]; outputs?: BenchSample[] };
  const out: Record<string, Facts> = {};
  for (const s of [...(r.sessions ?? []), ...(r.outputs ?? [])]) {
    const key = `${s.label ?? `${s.size} entries, ${s.pass}`} · ${s.backend}`;
    out[key] = { requests: s.requests, sentEntries: s.sentEntries, sentChars: s.sentChars };
  }
  return out;
}

function git(args: string[], cwd = root): string {
  return execFileSync("git", args, { cwd, encoding: "utf8" }).trim();
}

/** Adds a later run's rounds to a saved one (same commit): more repetitions for a mechanism the first left unclear. */
function merged(old: Saved, next: Saved): Saved {
  if (old.rev !== next.rev) throw new Error(`--add: ${old.name} was measured on ${old.rev}, not ${next.rev}`);
  const arms = { ...next.compared.arms };
  for (const arm of ["base", "head"] as const) {
    const into: Record<string, Slot | string> = { ...old.compared.arms[arm] };
    for (const [key, slot] of slots(next.compared.arms[arm])) {
      const was = into[key];
      if (typeof was !== "object") into[key] = slot;
      else for (const k of ["stall", "settle", "roundStall", "roundSettle"] as const) was[k].push(...slot[k]);
    }
    arms[arm] = into as Compared["arms"]["base"];
  }
  return {
    ...old,
    seconds: old.seconds + next.seconds,
    load: [Math.min(...old.load, ...next.load), Math.max(...old.load, ...next.load)],
    compared: { ...old.compared, rounds: old.compared.rounds + next.compared.rounds, arms },
  };
}

function measure(names: string[], rev: string, rounds: number, add: boolean): void {
  // Resolved once: every worktree is of the same commit even if the branch moves meanwhile.
  rev = git(["rev-parse", rev]);
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
      // The control is a second clean worktree; the HTTP thread's rows are in every clean run.
      const head = existsSync(patch) || name === "control" ? worktree(name) : base;
      if (existsSync(patch)) git(["apply", patch], head);
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
        facts: factsOf(join(base, "bench/out/results-quick.json")),
      };
      const file = join(outDir, `${name}.json`);
      const kept = add && existsSync(file) ? merged(JSON.parse(readFileSync(file, "utf8")) as Saved, saved) : saved;
      writeFileSync(file, `${JSON.stringify(kept)}\n`);
      if (head !== base) {
        git(["worktree", "remove", "--force", head]);
        made.splice(made.indexOf(head), 1);
      }
    }
  } finally {
    for (const dir of made) git(["worktree", "remove", "--force", dir]);
    rmSync(temp, { recursive: true, force: true });
  }
}

type Row = {
  key: string;
  with: Slot;
  without: Slot;
  /** False where the pass never runs the mechanism's code. */
  runs: boolean;
};

type Call = "costs" | "unclear" | "noise" | "nothing";

/** Permutations of the pooled repetitions per test (seeded, so a re-render gives the same calls). */
const PERMUTATIONS = 4000;

/**
 * One-sided permutation test: how often relabelling the pooled repetitions at random gives a statistic at
 * least as large as the observed one. Both sides ran alternately in the same minutes, so under "the
 * mechanism changes nothing" the labels are exchangeable.
 */
function permutationP(a: number[], b: number[], stat: (x: number[], y: number[]) => number): number {
  const observed = stat(a, b);
  const pool = [...a, ...b];
  let seed = 0x9e3779b9;
  const random = () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  let hits = 0;
  for (let k = 0; k < PERMUTATIONS; k++) {
    for (let i = pool.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [pool[i], pool[j]] = [pool[j] as number, pool[i] as number];
    }
    if (stat(pool.slice(0, a.length), pool.slice(a.length)) >= observed) hits++;
  }
  return (hits + 1) / (PERMUTATIONS + 1);
}

const costOf = (withIt: number[], without: number[]) => median(without) - median(withIt);
const ratioOf = (withIt: number[], without: number[]) => median(without) / median(withIt);

interface Judged {
  dStall: number;
  ratio: number;
  pStall: number;
  pSettle: number;
  call: Call;
}

/**
 * Over the threshold and unlikely under relabelling (p < 0.05): a cost. Over it but not significant: noise
 * when small, else unclear (this run cannot tell).
 */
function judge(row: Row): Judged {
  const dStall = costOf(row.with.stall, row.without.stall);
  const ratio = ratioOf(row.with.settle, row.without.settle);
  const pStall = permutationP(row.with.stall, row.without.stall, costOf);
  const pSettle = permutationP(row.with.settle, row.without.settle, ratioOf);
  const stallOver = dStall > STALL_MS;
  const settleOver = ratio > SETTLE_RATIO;
  const out = { dStall, ratio, pStall, pSettle };
  if (!stallOver && !settleOver) return { ...out, call: "nothing" };
  if ((stallOver && pStall < 0.05) || (settleOver && pSettle < 0.05)) return { ...out, call: "costs" };
  const small = dStall <= SMALL_STALL_MS && ratio <= SMALL_SETTLE_RATIO;
  return { ...out, call: small ? "noise" : "unclear" };
}

const slots = (arm: Compared["arms"]["base"]) =>
  Object.entries(arm).filter((e): e is [string, Slot] => typeof e[1] === "object");

/** Workload facts: from the saved runs, else from this folder's last quick run (the same seeded workloads). */
function factsFor(all: Map<string, Saved>): Record<string, Facts> {
  for (const saved of all.values()) if (saved.facts && Object.keys(saved.facts).length > 0) return saved.facts;
  return factsOf(join(here, "out", "results-quick.json"));
}

/** With and without the mechanism, per workload. The HTTP thread's rows pool every clean run. */
function rowsOf(m: Mechanism, all: Map<string, Saved>): Row[] {
  const facts = factsFor(all);
  const runs = (key: string) => {
    const f = facts[key];
    return m.runs === undefined || f === undefined || m.runs(f);
  };
  if (m.name !== "http-thread") {
    const saved = all.get(m.name);
    if (!saved) return [];
    const head = new Map(slots(saved.compared.arms.head));
    return slots(saved.compared.arms.base)
      .filter(([key]) => key.endsWith("· piscina") && head.has(key))
      .map(([key, slot]) => ({ key, with: slot, without: head.get(key) as Slot, runs: runs(key) }));
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
    if (key.endsWith("· piscina") && onMain) rows.push({ key, with: slot, without: onMain, runs: runs(key) });
  }
  return rows;
}

const fmt = (n: number) => (Math.abs(n) >= 100 ? n.toFixed(0) : Math.abs(n) >= 10 ? n.toFixed(1) : n.toFixed(2));
const signed = (n: number) => `${n >= 0 ? "+" : ""}${fmt(n)}`;
const spread = (xs: number[]) => `${fmt(Math.min(...xs))}–${fmt(Math.max(...xs))}`;
const pOf = (p: number) => (p < 0.001 ? "<0.001" : p.toFixed(3));
const workload = (key: string) => key.replace(" · piscina", "");

type Verdict = "keep" | "delete" | "unresolved";

/** Keep: a counted workload shows a cost. Delete: every counted workload shows nothing or noise. */
function verdictOf(judged: Array<Judged & { row: Row }>): Verdict {
  const mine = judged.filter((j) => counted(j.row.key) && j.row.runs);
  if (mine.some((j) => j.call === "costs")) return "keep";
  return mine.some((j) => j.call === "unclear") ? "unresolved" : "delete";
}

const VERDICT_TEXT: Record<Verdict, string> = {
  keep: "**keep**",
  delete: "**delete**",
  unresolved: "**unresolved at this load** (kept)",
};

function render(): void {
  const all = new Map<string, Saved>();
  if (existsSync(outDir)) {
    for (const file of readdirSync(outDir).filter((f) => /^[a-z-]+\.json$/.test(f))) {
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
    "A stall mechanism stays only if removing it costs more than 1 ms of own stall or 5% of settle time on a",
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
    "- **Noise:** the spread is the range of the per-round medians of each side; *p* is a one-sided permutation",
    `  test over the pooled repetitions (${PERMUTATIONS} relabellings). A cost over the threshold counts only when`,
    "  p < 0.05. One that does not is *noise* when it is also small (at most " +
      `${SMALL_STALL_MS} ms of stall and ${Math.round((SMALL_SETTLE_RATIO - 1) * 100)}% of settle),`,
    "  else *unclear*: this run cannot tell, and the mechanism is kept until a quieter run can.",
  ];
  lines.push(
    all.has("control")
      ? "- **Control:** the same comparison between two clean worktrees (no patch) shows the differences the machine alone produces."
      : "- **Control:** the rows where a pass never runs a mechanism's code (`--only control` adds a clean-vs-clean compare).",
  );
  if (runs.length > 0) {
    const first = runs.reduce((a, b) => (a.started < b.started ? a : b));
    const loads = runs.flatMap((r) => r.load);
    lines.push(
      `- **Commit measured:** ${first.rev} (the patches apply to it). **Rounds:** ${runs.map((r) => `${r.name} ${r.compared.rounds}`).join(", ")}.`,
      `- **Run:** ${runs.length} compares from ${first.started}, ${Math.round(runs.reduce((n, r) => n + r.seconds, 0) / 60)} min in all. **Load:** 1-minute load average ${fmt(Math.min(...loads))}–${fmt(Math.max(...loads))} at the compares' starts and ends, on 2 cores shared with other work (other test suites ran at the same time).`,
    );
  }
  lines.push(
    "",
    "| mechanism | largest counted stall cost | largest counted settle ratio | verdict |",
    "|---|---|---|---|",
  );
  const details: string[] = [];
  /** Calls on rows where nothing changed: how often the machine alone passes for a cost. */
  const controls: Call[] = [];
  for (const m of MECHANISMS) {
    const rows = rowsOf(m, all);
    if (rows.length === 0) {
      if (m.name !== "control") lines.push(`| ${m.title} | not measured | | — |`);
      continue;
    }
    const judged = rows.map((r) => ({ row: r, ...judge(r) }));
    const mine = judged.filter((j) => counted(j.row.key) && j.row.runs);
    for (const j of judged) if (!j.row.runs || m.name === "control") controls.push(j.call);
    const worst = mine.reduce((a, b) => (b.dStall > a.dStall ? b : a), mine[0] as (typeof mine)[0]);
    const worstSettle = mine.reduce((a, b) => (b.ratio > a.ratio ? b : a), mine[0] as (typeof mine)[0]);
    const verdict = m.name === "control" ? undefined : verdictOf(judged);
    const costing = mine.filter((j) => j.call === "costs").length;
    lines.push(
      `| ${m.title} | ${signed(worst.dStall)} ms, p ${pOf(worst.pStall)} (${workload(worst.row.key)}) | ${worstSettle.ratio.toFixed(2)}×, p ${pOf(worstSettle.pSettle)} (${workload(worstSettle.row.key)}) | ${verdict ? `${VERDICT_TEXT[verdict]}, ${costing} of ${mine.length} rows cost` : "(no change: the noise)"} |`,
    );
    details.push(
      "",
      `## ${m.title} (\`${m.name}\`)${verdict ? `: ${verdict}` : ""}`,
      "",
      m.what,
      "",
      "| workload | stall with (ms) | without | cost (ms) | p | round medians with / without | settle with (ms) | without | ratio | p | round medians with / without | call |",
      "|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---|---|",
    );
    for (const j of judged) {
      const r = j.row;
      const call = !r.runs ? `not run (${j.call})` : counted(r.key) ? j.call : `(${j.call})`;
      details.push(
        `| ${workload(r.key)} | ${fmt(median(r.with.stall))} | ${fmt(median(r.without.stall))} | ${signed(j.dStall)} | ${pOf(j.pStall)} | ${spread(r.with.roundStall)} / ${spread(r.without.roundStall)} | ${fmt(median(r.with.settle))} | ${fmt(median(r.without.settle))} | ${j.ratio.toFixed(2)}× | ${pOf(j.pSettle)} | ${spread(r.with.roundSettle)} / ${spread(r.without.roundSettle)} | ${call} |`,
      );
    }
  }
  lines.push(
    "",
    "Calls: *costs* = over the threshold with p < 0.05; *noise* = over it, not significant, and small;",
    "*unclear* = over it, not significant, and not small; *nothing* = under it. Parenthesised calls are on",
    "workloads the verdict does not read; *not run* marks a workload whose pass never runs the mechanism's",
    "code (too few requests or too small a sync), where the patch changes nothing: those rows and the",
    "control's are the run's own measure of its noise.",
    "",
    `**Noise in this run:** of the ${controls.length} rows where nothing changed, ${controls.filter((c) => c === "costs").length} came out as *costs*, ` +
      `${controls.filter((c) => c === "unclear").length} as *unclear*, ${controls.filter((c) => c === "noise").length} as *noise* and ${controls.filter((c) => c === "nothing").length} as *nothing*. ` +
      "A verdict resting on one row near p = 0.05 is therefore weak; one resting on several rows, or on a p far below it, is not.",
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
    /** Adds the rounds to the saved ones instead of replacing them. */
    add: { type: "boolean", default: false },
  },
});
if (!values.render) {
  const names = values.only ? values.only.split(",") : MECHANISMS.map((m) => m.name);
  for (const name of names) {
    if (!MECHANISMS.some((m) => m.name === name)) throw new Error(`no mechanism ${name}`);
  }
  // The HTTP thread's rows come from the other compares' clean runs: it needs a run of its own only alone.
  const run = names.length > 1 ? names.filter((n) => n !== "http-thread") : names;
  measure(run, values.rev, Number(values.rounds), values.add);
}
render();
