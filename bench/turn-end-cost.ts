import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import type { JsonObject } from "@earendil-works/pi-ai";
import { startLoopbackHost } from "../test/kit/loopback-host.ts";
import { createTestSession, type FauxResponse } from "../test/kit/sdk-session.ts";
import { censusOutputs } from "./lib/census-outputs.ts";
import { machineInfo } from "./lib/machine.ts";
import { median } from "./lib/stats.ts";

const { values } = parseArgs({
  options: {
    turns: { type: "string", default: "200" },
    latency: { type: "string", default: "200" },
    rounds: { type: "string", default: "3" },
    base: { type: "string" },
  },
});
const REPO = resolve(import.meta.dirname, "..");
const SESSIONS = resolve(REPO, "../shared/sessions");
const TURNS = Number(values.turns);
const LATENCY = Number(values.latency);
const ROUNDS = Number(values.rounds);

interface Mode {
  name: string;
  extension?: string;
}

const MODES: Mode[] = [
  { name: "Pi alone" },
  { name: "guard (this checkout)", extension: join(REPO, "src/main/index.ts") },
  ...(values.base
    ? [{ name: `guard (${values.base})`, extension: join(resolve(values.base), "src/main/index.ts") }]
    : []),
];

const outputs = () => censusOutputs(SESSIONS);

interface Row {
  mode: string;
  runMs: number;
  /** Each turn's `finishTurn`, ms. */
  turnEnds: number[];
  /** Boundary contexts Pi built for turn_end. */
  builds: number;
  /** Turn ends at which some extension listened. */
  listened: number;
  edits: number;
  /** Classifier requests during the run. */
  requests: number;
}

interface PiInternals {
  agent: { finishTurn?: (turn: unknown, signal?: AbortSignal) => Promise<unknown> };
  _extensionRunner: { hasHandlers(event: string): boolean };
  _buildBoundaryContext: (entries: unknown, boundary: string) => unknown;
}

async function runOnce(mode: Mode, files: string[]): Promise<Row> {
  const agentDir = await mkdtemp(join(tmpdir(), "cg-turn-end-"));
  const configPath = join(agentDir, "guard.json");
  await writeFile(configPath, JSON.stringify({ timeoutMs: 30_000, telemetry: false }));
  process.env.PI_CONTEXT_GUARD_CONFIG = configPath;
  const classifier = await startLoopbackHost({ latencyMs: LATENCY, keyword: "error|fail|TODO", flags: "i" });
  const responses: FauxResponse[] = [];
  for (let i = 0; i < TURNS; i++) {
    responses.push({
      toolCalls: [{ name: "bash", arguments: { command: `cat out${i % files.length}.txt` } as JsonObject }],
    });
  }
  responses.push("Done.");
  const s = await createTestSession({
    agentDir,
    extensionPaths: mode.extension ? [mode.extension] : [],
    classifierBaseUrl: classifier.baseUrl,
    responses,
  });
  for (let i = 0; i < files.length; i++) await writeFile(join(s.cwd, `out${i}.txt`), files[i] as string);
  const pi = s.session as unknown as PiInternals;
  const turnEnds: number[] = [];
  let builds = 0;
  let listened = 0;
  const build = pi._buildBoundaryContext.bind(pi);
  pi._buildBoundaryContext = (entries, boundary) => {
    if (boundary === "turn_end") builds++;
    return build(entries, boundary);
  };
  const finish = pi.agent.finishTurn;
  if (!finish) throw new Error("Pi's agent has no finishTurn: this Pi version is not the one measured");
  pi.agent.finishTurn = async (turn, signal) => {
    if (pi._extensionRunner.hasHandlers("turn_end")) listened++;
    const t = performance.now();
    try {
      return await finish(turn, signal);
    } finally {
      turnEnds.push(performance.now() - t);
    }
  };
  try {
    const t0 = performance.now();
    await s.session.prompt("Work through the outputs");
    const runMs = performance.now() - t0;
    const edits = s.session.sessionManager.getBranch().filter((e) => e.type === "context_edit").length;
    const requests = await classifier.takeCount();
    return { mode: mode.name, runMs, turnEnds, builds, listened, edits, requests };
  } finally {
    await s.dispose();
    await classifier.close();
  }
}

const ms = (x: number) => (x >= 1000 ? `${(x / 1000).toFixed(2)} s` : `${x.toFixed(x < 10 ? 2 : 0)} ms`);
const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

const files = outputs();
const m = machineInfo();
const rows: Row[] = [];
for (let round = 0; round < ROUNDS; round++) {
  // Alternate which mode goes first, so a change in the machine's load falls on every mode alike.
  const order = round % 2 === 0 ? MODES : [...MODES].reverse();
  for (const mode of order) {
    const row = await runOnce(mode, files);
    rows.push(row);
    console.error(
      `round ${round + 1}, ${mode.name}: run ${ms(row.runMs)}, turn ends ${ms(sum(row.turnEnds))}, ${row.builds} builds, ${row.edits} edits, ${row.requests} requests`,
    );
  }
}
const head = [
  "Mode",
  "Runs",
  "`finishTurn` sum (share of the run)",
  "Median turn end",
  "Longest turn end",
  "Turn ends listened to",
  "Contexts built",
  "Edits in the run",
  "Classifier requests in the run",
];
const lines = [
  `Turn-end cost, ${m.date}: ${TURNS} turns, classifier ${LATENCY} ms, ${files.length} real outputs of 8–45 KB.`,
  `${m.cpuModel}, ${m.cores} cores, Node ${m.node}, load ${m.loadStart} at the start. Medians of ${ROUNDS} runs (range).`,
  "",
  `| ${head.join(" | ")} |`,
  `|${head.map((_, i) => (i === 0 ? "---" : "---:")).join("|")}|`,
];
const range = (xs: number[], f: (x: number) => string) =>
  `${f(median(xs))} (${f(Math.min(...xs))}–${f(Math.max(...xs))})`;
for (const mode of MODES) {
  const mine = rows.filter((r) => r.mode === mode.name);
  const sums = mine.map((r) => sum(r.turnEnds));
  const shares = mine.map((r) => (100 * sum(r.turnEnds)) / r.runMs);
  lines.push(
    `| ${mode.name} | ${mine.length} | ${range(sums, ms)} (${median(shares).toFixed(2)}%) | ${range(
      mine.map((r) => median(r.turnEnds)),
      ms,
    )} | ${range(
      mine.map((r) => Math.max(...r.turnEnds)),
      ms,
    )} | ${median(mine.map((r) => r.listened))} / ${TURNS + 1} | ${median(mine.map((r) => r.builds))} | ${range(
      mine.map((r) => r.edits),
      String,
    )} | ${range(
      mine.map((r) => r.requests),
      String,
    )} |`,
  );
}
console.log(lines.join("\n"));
process.exit(0);
