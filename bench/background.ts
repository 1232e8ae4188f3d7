/**
 * Who waits for the classifier, in the real Pi SDK: a scripted main model that takes 2 s per turn reads
 * large test logs, with the guard off, with checkpoints awaited at turn_end (`midRunWait`) and with
 * background checkpoints, for a classifier 200 ms and 1 s away. Then the delay of a prompt sent 100 ms
 * into a run-end pass whose classifier takes 4 s.
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

const { values } = parseArgs({ options: { turns: { type: "string", default: "10" } } });
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
    const rs = records(s.session.sessionManager.getBranch() as never);
    return {
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

/** A follow-up sent 100 ms into a run-end pass whose classifier takes 4 s: when does its request start? */
async function promptDelay(held: boolean): Promise<{ delayMs: number; passMs: number; aborted: number }> {
  const classifier = await startLoopbackClassifier({ policy: keywordPolicy(/FAIL/), latencyMs: 4000 });
  const agentDir = await mkdtemp(join(tmpdir(), "cg-bench-bg-"));
  await guardConfig(agentDir, { midRun: false, timeoutMs: 30_000, concurrency: 1 });
  const calls: number[] = [];
  const timed =
    (reply: FauxReply): FauxResponse =>
    () => {
      calls.push(performance.now());
      return reply;
    };
  const s = await createTestSession({
    agentDir,
    extensionFactories: [guardFactory(held)],
    classifierBaseUrl: classifier.baseUrl,
    responses: [
      timed({ toolCalls: [{ name: "bash", arguments: { command: "cat log0.txt" } }] }),
      timed({ toolCalls: [{ name: "bash", arguments: { command: "cat log1.txt" } }] }),
      timed("Found them."),
      timed("Summary."),
    ],
  });
  try {
    for (let i = 0; i < 2; i++) await writeFile(join(s.cwd, `log${i}.txt`), testLog(i));
    const first = s.session.prompt("Find the failing tests");
    while (classifier.requests.length === 0) await sleep(5);
    await sleep(100);
    const sent = performance.now();
    await s.session.prompt("Now summarize", { streamingBehavior: "followUp" });
    await first;
    const rs = records(s.session.sessionManager.getBranch() as never);
    const runEnd = rs.find((r) => r.phase === "run-end");
    const aborted = runEnd?.results.filter((r) => r.reason.split(",").includes("aborted")).length ?? 0;
    return { delayMs: (calls[3] as number) - sent, passMs: runEnd?.ms ?? 0, aborted };
  } finally {
    await s.dispose();
    await classifier.close();
  }
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
const prompt = await promptDelay(false);
const held = await promptDelay(true);
for (const [name, p] of [
  ["hand-over", prompt],
  ["held", held],
] as const) {
  console.log(`${name}: prompt delay ${p.delayMs.toFixed(0)} ms; pass ${p.passMs} ms; aborted ${p.aborted}`);
}

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

**A prompt during the run-end pass.** A follow-up is sent 100 ms after the run-end pass's first request to a
classifier that takes 4 s (two 12 KB logs, \`concurrency\` 1); the delay is until its model request starts.

| Guard | Prompt delay | Pass's classifier time | Outputs left \`aborted\` |
|---|---:|---:|---:|
| with the hand-over | **${prompt.delayMs.toFixed(0)} ms** | ${prompt.passMs} ms | ${prompt.aborted} |
| held (its \`input\` hook left out, as before) | ${held.delayMs.toFixed(0)} ms | ${held.passMs} ms | ${held.aborted} |

The outputs left \`aborted\` are asked again at the next pass that covers them.
`;
await writeFile(resolve(import.meta.dirname, "BACKGROUND.md"), md);
console.log("wrote bench/BACKGROUND.md");
process.exit(0);
