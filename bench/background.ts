/**
 * Who waits for the classifier, in the real Pi SDK: a scripted main model that takes 2 s per turn reads
 * large test logs, with the guard off, with checkpoints awaited at turn_end (`midRunWait`) and with
 * background checkpoints, for a classifier 200 ms and 1 s away: wall time, edits, and how many turns
 * later each edit lands in the background. Then a prompt sent during a slow run-end pass: its delay,
 * and when the rest of the handed-over pass lands in the prompt's run.
 *
 *   node bench/background.ts           # 10 turns per run; writes bench/BACKGROUND.md
 *   node bench/background.ts --turns 6 # shorter
 */
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import type { JsonObject } from "@earendil-works/pi-ai";
import type { ExtensionFactory } from "@earendil-works/pi-coding-agent";
import type { GuardRecord } from "../src/core/shared/types.ts";
import contextGuard from "../src/main/index.ts";
import { keywordPolicy, startLoopbackClassifier } from "../test/kit/loopback-classifier.ts";
import { createTestSession, type FauxReply, type FauxResponse } from "../test/kit/sdk-session.ts";
import { machineInfo } from "./lib/machine.ts";

const { values } = parseArgs({
  options: {
    turns: { type: "string", default: "10" },
    out: { type: "string", default: resolve(import.meta.dirname, "BACKGROUND.md") },
  },
});
const TURNS = Number(values.turns);
const TURN_MS = 2000;
const EXTENSION = resolve(import.meta.dirname, "../src/main/index.ts");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A test log of about 12 KB: passing lines and one failure. */
function testLog(n: number): string {
  const lines = Array.from({ length: 300 }, (_, i) =>
    i === 120 ? `FAIL src/case${n}_${i}.test.ts > broken_${n}_${i}` : `PASS src/case${n}_${i}.test.ts (${i} ms)`,
  );
  return `${lines.join("\n")}\n`;
}

type Mode = "off" | "awaited" | "background";

interface RunResult {
  wallMs: number;
  /** From the prompt to the final answer's model request: the run without its run-end pass. */
  beforeRunEndMs: number;
  /** Items the mid-run checkpoints edited, and the run end. */
  midRunEdits: number;
  runEndEdits: number;
  classifierRequests: number;
  /** The turn at which each edited item's edit landed (assistant messages before its record). */
  landedAt: Map<string, number>;
}

async function guardConfig(agentDir: string, config: Record<string, unknown>): Promise<void> {
  const path = join(agentDir, "guard.json");
  await writeFile(path, JSON.stringify(config));
  process.env.PI_CONTEXT_GUARD_CONFIG = path;
}

function records(branch: Array<{ type: string; customType?: string; data?: unknown }>): GuardRecord[] {
  return branch
    .filter((e) => e.type === "custom" && e.customType === "context-guard")
    .map((e) => e.data as GuardRecord);
}

const edited = (rs: GuardRecord[], phase: GuardRecord["phase"]) =>
  rs.filter((r) => r.phase === phase).reduce((n, r) => n + r.results.filter((x) => x.outcome !== "kept").length, 0);

type BranchEntry = { type: string; customType?: string; data?: unknown; message?: { role?: string } };

/** For each item a record of the branch edited, by label: the number of assistant messages before that record. */
function landingTurns(branch: BranchEntry[], from = 0): Map<string, number> {
  const out = new Map<string, number>();
  let turns = 0;
  for (const e of branch.slice(from)) {
    if (e.type === "message" && e.message?.role === "assistant") turns++;
    if (e.type !== "custom" || e.customType !== "context-guard") continue;
    // By label (the command): entry ids differ from one session to the next.
    for (const r of (e.data as GuardRecord).results) if (r.outcome !== "kept") out.set(r.label, turns);
  }
  return out;
}

async function run(mode: Mode, classifierMs: number): Promise<RunResult> {
  const classifier = await startLoopbackClassifier({ policy: keywordPolicy(/FAIL/), latencyMs: classifierMs });
  const agentDir = await mkdtemp(join(tmpdir(), "cg-bench-bg-"));
  await guardConfig(agentDir, {
    enabled: mode !== "off",
    midRunWait: mode === "awaited",
    midRunBatchChars: 20_000,
    midRunMinAgeTurns: 3,
    midRunBreakEven: false,
  });
  const responses: FauxResponse[] = [];
  for (let i = 0; i < TURNS; i++) {
    responses.push(async (): Promise<FauxReply> => {
      await sleep(TURN_MS);
      return { toolCalls: [{ name: "bash", arguments: { command: `cat log${i}.txt` } as JsonObject }] };
    });
  }
  let finalAt = 0;
  responses.push(async () => {
    finalAt = performance.now();
    await sleep(TURN_MS);
    return "The failures are listed above.";
  });
  const s = await createTestSession({
    agentDir,
    extensionPaths: [EXTENSION],
    classifierBaseUrl: classifier.baseUrl,
    responses,
  });
  try {
    for (let i = 0; i < TURNS; i++) await writeFile(join(s.cwd, `log${i}.txt`), testLog(i));
    const started = performance.now();
    await s.session.prompt("Find the failing tests");
    const wallMs = performance.now() - started;
    const branch = s.session.sessionManager.getBranch() as never as BranchEntry[];
    const rs = records(branch);
    return {
      landedAt: landingTurns(branch),
      wallMs,
      beforeRunEndMs: finalAt - started,
      midRunEdits: edited(rs, "mid-run"),
      runEndEdits: edited(rs, "run-end"),
      classifierRequests: classifier.requests.length,
    };
  } finally {
    await s.dispose();
    await classifier.close();
  }
}

/**
 * The guard as an inline extension; `held` leaves out its `input` hook, which is how a prompt waited for
 * the run-end pass before the hand-over (the hook did nothing else in this setup).
 */
function guardFactory(held: boolean): ExtensionFactory {
  return (pi) =>
    contextGuard(
      new Proxy(pi, {
        get(target, key) {
          if (key === "on" && held) {
            return (event: string, handler: never) =>
              event === "input" ? () => undefined : target.on(event as never, handler);
          }
          const value = Reflect.get(target, key);
          return typeof value === "function" ? value.bind(target) : value;
        },
      }),
    );
}

interface PromptResult {
  delayMs: number;
  /** Outputs edited by what landed at the hand-over, and by the rest. */
  atOnce: number;
  rest: number;
  /** The follow-up's turn at whose end the rest landed (undefined: nothing landed later). */
  restTurn: number | undefined;
  /** Classifier requests about the run's outputs, and the outputs. */
  requests: number;
  outputs: number;
  /** Records that left an output `aborted` and no later record answered it. */
  unanswered: number;
}

const PROMPT_LOGS = 3;
const FOLLOW_UP_TURNS = 6;

/**
 * A follow-up sent during a run-end pass over three logs (`concurrency` 1): the first answer takes 200 ms,
 * each later one 4 s, and the prompt is sent 100 ms after the second request went out. When does its
 * model request start, and when does the rest of the pass land in the follow-up's run of 2 s turns?
 */
async function promptDelay(held: boolean): Promise<PromptResult> {
  const keyword = keywordPolicy(/FAIL/);
  let seen = 0;
  const classifier = await startLoopbackClassifier({
    policy: (body) => {
      classifier.set({ latencyMs: seen++ === 0 ? 200 : 4000 });
      return keyword(body);
    },
  });
  const agentDir = await mkdtemp(join(tmpdir(), "cg-bench-bg-"));
  await guardConfig(agentDir, { midRun: false, timeoutMs: 30_000, concurrency: 1, exchangeBreakEven: false });
  const calls: number[] = [];
  const timed =
    (reply: FauxReply, ms = 0): FauxResponse =>
    async () => {
      calls.push(performance.now());
      await sleep(ms);
      return reply;
    };
  const bash = (command: string): FauxReply => ({ toolCalls: [{ name: "bash", arguments: { command } }] });
  const s = await createTestSession({
    agentDir,
    extensionFactories: [guardFactory(held)],
    classifierBaseUrl: classifier.baseUrl,
    responses: [
      ...Array.from({ length: PROMPT_LOGS }, (_, i) => timed(bash(`cat log${i}.txt`))),
      timed("Found them."),
      ...Array.from({ length: FOLLOW_UP_TURNS }, (_, i) => timed(bash(`echo ${i}`), TURN_MS)),
      timed("Summary.", TURN_MS),
    ],
  });
  try {
    for (let i = 0; i < PROMPT_LOGS; i++) await writeFile(join(s.cwd, `log${i}.txt`), testLog(i));
    const first = s.session.prompt("Find the failing tests");
    while (classifier.requests.length < 2) await sleep(5);
    await sleep(100);
    const sent = performance.now();
    const followUpAt = s.session.sessionManager.getBranch().length;
    await s.session.prompt("Now summarize", { streamingBehavior: "followUp" });
    await first;
    const branch = s.session.sessionManager.getBranch() as never as BranchEntry[];
    const landed = landingTurns(branch, followUpAt);
    // The first record is what landed when the prompt came; later ones landed in the follow-up's run.
    const rs = records(branch);
    const atOnce = rs[0]?.results.filter((r) => r.outcome !== "kept").length ?? 0;
    const later = rs.slice(1).flatMap((r) => r.results.filter((x) => x.outcome !== "kept"));
    const turns = later.map((r) => landed.get(r.label)).filter((t): t is number => t !== undefined);
    const latest = new Map<string, boolean>();
    for (const r of rs) for (const x of r.results) latest.set(x.entryId, x.reason.split(",").includes("aborted"));
    const about = classifier.requests.filter((b) => /broken_\d+_120/.test(JSON.stringify(b)));
    return {
      delayMs: (calls[PROMPT_LOGS + 1] as number) - sent,
      atOnce,
      rest: later.length,
      restTurn: turns.length > 0 ? Math.max(...turns) : undefined,
      requests: about.length,
      outputs: PROMPT_LOGS,
      unanswered: [...latest.values()].filter(Boolean).length,
    };
  } finally {
    await s.dispose();
    await classifier.close();
  }
}

/** How many turns later each item's edit landed in `late` than in `early`, over the items both edited. */
function lateness(early: RunResult, late: RunResult): { both: number; only: number; mean: number; max: number } {
  const diffs: number[] = [];
  let only = 0;
  for (const [id, turn] of early.landedAt) {
    const t = late.landedAt.get(id);
    if (t === undefined) only++;
    else diffs.push(t - turn);
  }
  for (const id of late.landedAt.keys()) if (!early.landedAt.has(id)) only++;
  const mean = diffs.length > 0 ? diffs.reduce((a, b) => a + b, 0) / diffs.length : 0;
  return { both: diffs.length, only, mean, max: diffs.length > 0 ? Math.max(...diffs) : 0 };
}

const machine = machineInfo();
const machineLine = () =>
  `${machine.cpuModel}, ${machine.cores} cores, Node ${machine.node}, load ${machine.loadStart.toFixed(1)} at the start (shared with other work), ${machine.date}.`;
const rows: string[] = [];
const results: Record<string, RunResult> = {};
const off = await run("off", 200);
results.off = off;
console.log(
  `off: ${(off.wallMs / 1000).toFixed(2)} s, ${(off.beforeRunEndMs / 1000).toFixed(2)} s to the final request`,
);
const pct = (a: number, b: number) => {
  const p = ((a - b) / b) * 100;
  return `${p >= 0 ? "+" : ""}${p.toFixed(1)}%`;
};
for (const classifierMs of [200, 1000]) {
  for (const mode of ["awaited", "background"] as const) {
    const r = await run(mode, classifierMs);
    results[`${mode}-${classifierMs}`] = r;
    const line =
      `| ${classifierMs} ms | ${mode} | ${(r.beforeRunEndMs / 1000).toFixed(2)} s | ${pct(r.beforeRunEndMs, off.beforeRunEndMs)} | ` +
      `${(r.wallMs / 1000).toFixed(2)} s | ${pct(r.wallMs, off.wallMs)} | ` +
      `${r.midRunEdits} | ${r.runEndEdits} | ${r.classifierRequests} |`;
    rows.push(line);
    console.log(line);
  }
}
const late = [200, 1000].map((ms) => {
  const l = lateness(results[`awaited-${ms}`] as RunResult, results[`background-${ms}`] as RunResult);
  const line = `| ${ms} ms | ${l.both} | ${l.only} | ${l.mean.toFixed(2)} | ${l.max} |`;
  console.log(line);
  return line;
});
const prompt = await promptDelay(false);
const held = await promptDelay(true);
const promptRow = (name: string, p: PromptResult) => {
  const line =
    `| ${name} | ${p === prompt ? `**${p.delayMs.toFixed(0)} ms**` : `${p.delayMs.toFixed(0)} ms`} | ${p.atOnce} | ${p.rest} | ` +
    `${p.restTurn === undefined ? "–" : `turn ${p.restTurn} of ${FOLLOW_UP_TURNS + 1}`} | ${p.requests} for ${p.outputs} | ${p.unanswered} |`;
  console.log(line);
  return line;
};
const promptRows = [promptRow("with the hand-over", prompt), promptRow("held (its `input` hook left out)", held)];

const md = `# Background checkpoints and the prompt hand-over

\`node bench/background.ts --turns ${TURNS}\`, the real Pi SDK (\`createAgentSession\`) with the guard loaded as
an extension. The main model is pi-ai's faux provider taking ${TURN_MS / 1000} s per turn; it reads ${TURNS} test logs
of about 12 KB (one \`cat\` per turn), then answers. The classifier is the loopback System One server at the
stated latency. Checkpoint settings: \`midRunBatchChars\` 20,000, \`midRunMinAgeTurns\` 3, \`midRunBreakEven\` off.
One run per row, all in the same process. ${machineLine()}

Guard off: **${(off.beforeRunEndMs / 1000).toFixed(2)} s** to the final answer's request, **${(off.wallMs / 1000).toFixed(2)} s** for the whole run.

| Classifier | Checkpoints | To the final request | vs off | Whole run | vs off | Mid-run edits | Run-end edits | Classifier requests |
|---|---|---:|---:|---:|---:|---:|---:|---:|
${rows.join("\n")}

"To the final request" is the run up to the request of its final answer: the turns and their \`turn_end\`
hooks, where checkpoints run. "Whole run" adds the final answer and the run-end pass
(\`agent_before_settle\`), which every mode waits for (it is the user waiting, not the agent).

**How late background edits land.** For each output both modes edited, the turn its edit landed at (the
assistant messages before its record) with background checkpoints minus the turn with awaited ones. An edit
made at run end in both modes counts 0.

| Classifier | Edited in both | Edited in one only | Mean lateness (turns) | Most (turns) |
|---|---:|---:|---:|---:|
${late.join("\n")}

**A prompt during the run-end pass.** Three 12 KB logs, \`concurrency\` 1; the classifier answers the first
request in 200 ms and each later one in 4 s. A follow-up is sent 100 ms after the second request went out;
its run has ${FOLLOW_UP_TURNS} tool turns and a final answer, ${TURN_MS / 1000} s each. The delay is until the
follow-up's first model request starts. "At once" are the outputs edited by the drafts the run-end hook
returned; "rest" those edited by the handed-over rest, landed at the end of the stated turn of the follow-up's
run (its edits are in every later request). Requests are those about the three logs.

| Guard | Prompt delay | Edited at once | Edited by the rest | Rest landed | Classifier requests | Left unanswered |
|---|---:|---:|---:|---|---:|---:|
${promptRows.join("\n")}

Before the rest went on in the background (commit 2bd7e52, two logs at 4 s each, the prompt 100 ms after
the first request): the prompt started after 13 ms, the two outputs whose answers had not come were recorded
\`aborted\`, the request in flight was cancelled, and both were asked again at the next run end.
`;
await writeFile(values.out, md);
console.log(`wrote ${values.out}`);
process.exit(0);
