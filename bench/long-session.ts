/**
 * A long session in the real Pi (issue 44, break 1): a generated session of `--entries` entries with
 * `--compactions` compactions (after runs, so its last long run stays whole; `--compact-at turns`: between
 * turns) is resumed and one run of `--turns` tool turns (8–45 KB outputs) is made
 * against a scripted main model and a loopback classifier. Each arm runs it on its own copy:
 *
 * - rpc: `pi --mode rpc`, where the footer prices the branch in dollars;
 * - print: `pi -p`, where there is no footer;
 * - off: `pi --mode rpc` with `"enabled": false` (memory beside Pi alone).
 *
 * Both guard arms wait for the run end's pass (settleBudgetMs = timeoutMs), so they are comparable. Printed
 * per arm: the guard's records by phase, the classifier requests, how long after the run the footer first
 * showed dollars, and the Pi process's peak memory.
 *
 *   node bench/long-session.ts [--entries 20000] [--compactions 29] [--compact-at runs] [--turns 8] [--latency 200]
 *                              [--arms rpc,print,off] [--out FILE]
 */
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { type FakeOpenAI, lastPrompt, startFakeOpenAI } from "../test/kit/fake-openai.ts";
import { generateOutput, generateSession, withCompactions, writeSessionFile } from "../test/kit/generate.ts";
import { type LoopbackClassifier, startLoopbackClassifier } from "../test/kit/loopback-classifier.ts";
import { FAKE_MODEL, makeAgentDir, REPO_ROOT, runPiCli } from "../test/kit/pi-agent-dir.ts";
import { type RpcPi, startRpcPi } from "../test/kit/rpc-pi.ts";
import { machineInfo } from "./lib/machine.ts";

const { values } = parseArgs({
  options: {
    entries: { type: "string", default: "20000" },
    compactions: { type: "string", default: "29" },
    turns: { type: "string", default: "8" },
    latency: { type: "string", default: "200" },
    arms: { type: "string", default: "rpc,print,off" },
    seed: { type: "string", default: "5" },
    "compact-at": { type: "string", default: "runs" },
    out: { type: "string" },
  },
});
const ENTRIES = Number(values.entries);
const TURNS = Number(values.turns);
const EXTENSION = join(REPO_ROOT, "src/main/index.ts");
const PROMPT = "Run the next steps of the migration and report";

/** The session, generated once per size and kept under bench/out. */
function sessionFile(): string {
  const at = values["compact-at"] === "turns" ? "turns" : "runs";
  const file = join(REPO_ROOT, `bench/out/long-${ENTRIES}-${values.compactions}-${at}-${values.seed}.jsonl`);
  if (existsSync(file)) return file;
  const entries = withCompactions(
    generateSession({ entries: ENTRIES, seed: Number(values.seed) }),
    Number(values.compactions),
    at,
  );
  writeSessionFile(file, entries, "/tmp", `bench/long-session.ts --entries ${ENTRIES}`);
  return file;
}

interface ArmResult {
  arm: string;
  settledMs: number;
  records: Record<string, number>;
  timedOut: number;
  classifierRequests: number;
  dollarsAfterMs?: number;
  peakMiB?: number;
  errors: string[];
}

/** Peak resident memory of a process so far (VmHWM), in MiB. */
function peakMiB(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const kb = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1]);
    return Number.isFinite(kb) ? Math.round(kb / 1024) : undefined;
  } catch {
    return undefined;
  }
}

/** The guard's records in a session file, by phase (and how many ran out of time). */
function recordsOf(file: string): { records: Record<string, number>; timedOut: number } {
  const records: Record<string, number> = {};
  let timedOut = 0;
  for (const line of readFileSync(file, "utf8").split("\n")) {
    if (!line.includes('"context-guard"')) continue;
    const e = JSON.parse(line) as { customType?: string; data?: { phase?: string; timedOut?: boolean } };
    if (e.customType !== "context-guard") continue;
    const phase = e.data?.phase ?? "?";
    records[phase] = (records[phase] ?? 0) + 1;
    if (e.data?.timedOut) timedOut++;
  }
  return { records, timedOut };
}

async function arm(
  name: string,
  source: string,
  main: FakeOpenAI,
  classifier: LoopbackClassifier,
  cwd: string,
): Promise<ArmResult> {
  const enabled = name !== "off";
  const agentDir = await makeAgentDir({
    mainBaseUrl: main.baseUrl,
    classifierBaseUrl: classifier.baseUrl,
    guardConfig: { enabled, telemetry: false, settleBudgetMs: 8000, timeoutMs: 8000 },
    // Priced like a mid-range hosted model, so the footer shows dollars.
    extraProviders: {
      fake: {
        baseUrl: main.baseUrl,
        api: "openai-completions",
        apiKey: "fake-key",
        models: [
          {
            id: "fake-model",
            name: "Fake",
            contextWindow: 1_000_000,
            maxTokens: 4096,
            cost: { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 0 },
          },
        ],
      },
    },
  });
  // Not in the agent dir itself: Pi moves a session file found there into its sessions folder at start.
  mkdirSync(join(agentDir, "resumed"));
  const copy = join(agentDir, "resumed", "session.jsonl");
  copyFileSync(source, copy);
  const asked = classifier.requests.length;
  const started = performance.now();
  const errors: string[] = [];
  if (name === "print") {
    const out = await runPiCli(
      ["-p", "--session", copy, "--model", FAKE_MODEL, "-e", EXTENSION, PROMPT],
      { PI_CODING_AGENT_DIR: agentDir, PI_CONTEXT_GUARD_SETTLE_BUDGET_MS: "" },
      { cwd, timeoutMs: 900_000 },
    );
    if (out.code !== 0) errors.push(`exit ${out.code}: ${out.stderr.slice(-300)}`);
    return {
      arm: name,
      settledMs: Math.round(performance.now() - started),
      ...recordsOf(copy),
      classifierRequests: classifier.requests.length - asked,
      errors,
    };
  }
  const pi: RpcPi = startRpcPi({
    agentDir,
    cwd,
    extensions: [EXTENSION],
    args: ["--session", copy],
    env: { PI_CONTEXT_GUARD_SETTLE_BUDGET_MS: "" },
    killAfterMs: 900_000,
  });
  let peak: number | undefined;
  const sample = setInterval(() => {
    peak = Math.max(peak ?? 0, peakMiB(pi.child.pid) ?? 0);
  }, 200);
  try {
    const from = pi.records.length;
    pi.send({ type: "prompt", message: PROMPT });
    const settled = await pi.waitFor((r) => r.type === "agent_settled", { from, timeoutMs: 900_000 });
    const settledMs = Math.round(settled.at - started);
    let dollarsAfterMs: number | undefined;
    if (enabled) {
      const dollars = await pi
        .waitFor(
          (r) => r.method === "setStatus" && r.statusKey === "context-guard" && /\$/.test(String(r.statusText)),
          {
            from,
            timeoutMs: 240_000,
          },
        )
        .catch(() => undefined);
      if (dollars) dollarsAfterMs = Math.max(0, Math.round(dollars.at - settled.at));
    }
    for (const r of pi.records) if (r.type === "extension_error") errors.push(String(r.error).slice(0, 200));
    await pi.close();
    peak = Math.max(peak ?? 0, peakMiB(pi.child.pid) ?? 0);
    return {
      arm: name,
      settledMs,
      ...recordsOf(copy),
      classifierRequests: classifier.requests.length - asked,
      ...(dollarsAfterMs !== undefined ? { dollarsAfterMs } : {}),
      ...(peak ? { peakMiB: peak } : {}),
      errors,
    };
  } finally {
    clearInterval(sample);
    await pi.close();
  }
}

const source = sessionFile();
const cwd = await mkdtemp(join(tmpdir(), "cg-long-"));
for (let i = 0; i < TURNS; i++) {
  writeFileSync(
    join(cwd, `out${i}.txt`),
    generateOutput(i % 2 ? "log" : "grep", 8000 + ((i * 5000) % 37_000), 100 + i),
  );
}
// Each prompt: TURNS turns, one `cat` each, then the answer.
const main = await startFakeOpenAI((req) => {
  // A long session's request bodies are large: keep none of them.
  main.requests.length = 0;
  main.log.length = 0;
  const { done } = lastPrompt(req.messages);
  return done < TURNS
    ? { toolCalls: [{ name: "bash", arguments: { command: `cat out${done}.txt` } }] }
    : { text: "The steps ran; out3.txt has the numbers." };
});
const classifier = await startLoopbackClassifier({ latencyMs: Number(values.latency) });
const machine = machineInfo();
const results: ArmResult[] = [];
try {
  for (const name of String(values.arms).split(",")) {
    results.push(await arm(name, source, main, classifier, cwd));
    console.log(JSON.stringify(results.at(-1)));
  }
} finally {
  await main.close();
  await classifier.close();
}
mkdirSync(join(REPO_ROOT, "bench/out"), { recursive: true });
const report = { date: new Date().toISOString(), machine, entries: ENTRIES, turns: TURNS, results };
const out = values.out ?? join(REPO_ROOT, `bench/out/long-session-${ENTRIES}.json`);
writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`);
