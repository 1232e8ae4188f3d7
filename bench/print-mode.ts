/**
 * What a one-shot `pi -p` pays for the run end: the real CLI with a scripted main model that answers at
 * once (5 turns, each `cat`ting a 12 KB test log) and the loopback classifier at the stated latency, with
 * the run end handing over (the default `settleBudgetMs`) and with it waiting for the whole pass
 * (`settleBudgetMs` = `timeoutMs`). Then the same session resumed (`pi -c -p`, one more turn): what its run
 * end asks again.
 *
 *   node bench/print-mode.ts                 # classifier at 200 ms and 1,000 ms
 *   node bench/print-mode.ts --latency 500
 */
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { lastPrompt, startFakeOpenAI, type WireJson } from "../test/kit/fake-openai.ts";
import { keywordPolicy, startLoopbackClassifier } from "../test/kit/loopback-classifier.ts";
import { FAKE_MODEL, makeAgentDir, REPO_ROOT, runPiCli } from "../test/kit/pi-agent-dir.ts";
import { machineInfo } from "./lib/machine.ts";

const { values } = parseArgs({ options: { latency: { type: "string" } } });
const LATENCIES = values.latency ? [Number(values.latency)] : [200, 1000];
const EXTENSION = join(REPO_ROOT, "src/main/index.ts");
const TURNS = 5;

function testLog(n: number): string {
  const lines = Array.from({ length: 300 }, (_, i) =>
    i === 120 ? `FAIL src/case${n}_${i}.test.ts > broken_${n}_${i}` : `PASS src/case${n}_${i}.test.ts (${i} ms)`,
  );
  return `${lines.join("\n")}\n`;
}

/** The tool turns since the last user message, then a final answer. */
function script(messages: WireJson[]) {
  const { done } = lastPrompt(messages);
  const resumed = messages.filter((m: WireJson) => m.role === "user").length > 1;
  const turns = resumed ? 1 : TURNS;
  if (done >= turns) return { text: "done" };
  const n = resumed ? TURNS : done;
  return { toolCalls: [{ name: "bash", arguments: { command: `cat log${n}.txt` } }] };
}

interface Row {
  latencyMs: number;
  budget: string;
  firstMs: number;
  firstRequests: number;
  firstEdits: number;
  secondMs: number;
  secondRequests: number;
  askedAgain: number;
}

async function measure(latencyMs: number, settleBudgetMs: number | undefined): Promise<Row> {
  const asked: string[] = [];
  const keyword = keywordPolicy(/FAIL/);
  const classifier = await startLoopbackClassifier({
    latencyMs,
    policy: (body) => {
      asked.push(JSON.stringify(body.state));
      return keyword(body);
    },
  });
  const main = await startFakeOpenAI((req) => script(req.messages));
  try {
    const agentDir = await makeAgentDir({
      mainBaseUrl: main.baseUrl,
      classifierBaseUrl: classifier.baseUrl,
      guardConfig: {
        timeoutMs: 30_000,
        telemetry: false,
        midRun: false,
        ...(settleBudgetMs !== undefined ? { settleBudgetMs } : {}),
      },
    });
    const cwd = await mkdtemp(join(tmpdir(), "cg-print-"));
    for (let i = 0; i <= TURNS; i++) await writeFile(join(cwd, `log${i}.txt`), testLog(i));
    const env = { PI_CODING_AGENT_DIR: agentDir, PI_CONTEXT_GUARD_CONFIG: "", PI_CONTEXT_GUARD_SETTLE_BUDGET_MS: "" };
    const args = ["-ne", "--model", FAKE_MODEL, "-e", EXTENSION];
    const first = await runPiCli([...args, "-p", "find the failing tests"], env, { cwd, timeoutMs: 60_000 });
    const firstAsked = [...asked];
    const firstEdits = await editsIn(agentDir);
    const second = await runPiCli([...args, "-c", "-p", "and the last log?"], env, { cwd, timeoutMs: 60_000 });
    // Requests of the resumed run about the first run's logs.
    const again = asked
      .slice(firstAsked.length)
      .filter((s) => Array.from({ length: TURNS }, (_, n) => `broken_${n}_120`).some((k) => s.includes(k))).length;
    return {
      latencyMs,
      budget: settleBudgetMs === undefined ? "default (hand over)" : `${settleBudgetMs} ms (wait)`,
      firstMs: first.durationMs,
      firstRequests: firstAsked.length,
      firstEdits,
      secondMs: second.durationMs,
      secondRequests: asked.length - firstAsked.length,
      askedAgain: again,
    };
  } finally {
    await main.close();
    await classifier.close();
  }
}

/** The guard's edits written to the session files under the agent dir. */
async function editsIn(agentDir: string): Promise<number> {
  const { readdir, readFile } = await import("node:fs/promises");
  let n = 0;
  const walk = async (dir: string): Promise<void> => {
    for (const e of await readdir(dir, { withFileTypes: true })) {
      const path = join(dir, e.name);
      if (e.isDirectory()) await walk(path);
      else if (e.name.endsWith(".jsonl")) n += (await readFile(path, "utf8")).split('"type":"context_edit"').length - 1;
    }
  };
  await walk(join(agentDir, "sessions"));
  return n;
}

const m = machineInfo();
const rows: Row[] = [];
for (const latency of LATENCIES) {
  for (const budget of [undefined, 30_000]) rows.push(await measure(latency, budget));
}
const lines = [
  `\`pi -p\` and its resumption, ${m.date}: ${TURNS} turns of 12 KB logs, ${m.cpuModel}, ${m.cores} cores, load ${m.loadStart}.`,
  "",
  "| Classifier | Run end | `pi -p` wall time | Requests | Edits written | `pi -c -p` wall time | Its requests | Asked again |",
  "|---:|---|---:|---:|---:|---:|---:|---:|",
  ...rows.map(
    (r) =>
      `| ${r.latencyMs} ms | ${r.budget} | ${(r.firstMs / 1000).toFixed(2)} s | ${r.firstRequests} | ${r.firstEdits} | ${(r.secondMs / 1000).toFixed(2)} s | ${r.secondRequests} | ${r.askedAgain} |`,
  ),
];
console.log(lines.join("\n"));
process.exit(0);
