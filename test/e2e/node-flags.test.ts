// Issue 42: Pi started with Node flags that worker threads refuse (`--expose-gc`,
// `--max-old-space-size=…`). Before, the pool passed them on, every worker failed with
// ERR_WORKER_INVALID_EXEC_ARGV and the guard did nothing, silently. Its workers start without them now,
// and the guard edits as it does without the flags.
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { GuardRecord } from "../../src/core/shared/types.ts";
import { type FakeOpenAI, startFakeOpenAI } from "../kit/fake-openai.ts";
import { dropAllPolicy, grepText } from "../kit/fault-session.ts";
import { type LoopbackClassifier, startLoopbackClassifier } from "../kit/loopback-classifier.ts";
import { FAKE_MODEL, makeAgentDir, REPO_ROOT, readSessionLines, runPiCli } from "../kit/pi-agent-dir.ts";

const EXTENSION = join(REPO_ROOT, "src/main/index.ts");

let main: FakeOpenAI;
let classifier: LoopbackClassifier;
let cwd: string;

beforeAll(async () => {
  main = await startFakeOpenAI((req) =>
    req.messages.at(-1)?.role === "user"
      ? { toolCalls: [{ name: "bash", arguments: { command: "cat out.txt" } }] }
      : { text: "out.txt is read." },
  );
  classifier = await startLoopbackClassifier({ policy: dropAllPolicy });
  cwd = await mkdtemp(join(tmpdir(), "cg-node-flags-"));
  await writeFile(join(cwd, "out.txt"), grepText(24, "p"));
});
afterAll(async () => {
  await main.close();
  await classifier.close();
});

const sessionLines = readSessionLines;

/** `pi -p` with the guard, Node started with `nodeArgs` and `env`; what the session file then holds. */
async function printRun(nodeArgs: string[], env: Record<string, string> = {}) {
  const agentDir = await makeAgentDir({
    mainBaseUrl: main.baseUrl,
    classifierBaseUrl: classifier.baseUrl,
    guardConfig: { telemetry: false, midRun: false },
  });
  const asked = classifier.requests.length;
  const out = await runPiCli(
    ["-p", "Read out.txt", "--session-dir", join(agentDir, "sessions"), "--model", FAKE_MODEL, "-e", EXTENSION],
    { PI_CODING_AGENT_DIR: agentDir, PI_CONTEXT_GUARD_SETTLE_BUDGET_MS: "", ...env },
    { cwd, timeoutMs: 60_000, nodeArgs },
  );
  const lines = await sessionLines(agentDir);
  return {
    out,
    requests: classifier.requests.length - asked,
    records: lines.filter((l) => l.customType === "context-guard").map((l) => l.data as GuardRecord),
    edits: lines.filter((l) => l.type === "context_edit").length,
  };
}

describe("Pi started with Node flags worker threads refuse", () => {
  for (const [name, nodeArgs, env] of [
    ["on Node's command line", ["--expose-gc", "--max-old-space-size=4096"], {}],
    ["in NODE_OPTIONS", [], { NODE_OPTIONS: "--expose-gc --max-old-space-size=4096" }],
  ] as const) {
    it(`${name}: the run's output is judged and edited as without them`, async () => {
      const run = await printRun([...nodeArgs], env);
      expect(run.out.code).toBe(0);
      expect(run.out.stderr).not.toMatch(/Extension error|context-guard:|execArgv/);
      expect(run.requests).toBeGreaterThan(0);
      expect(run.records).toHaveLength(1);
      expect(run.records[0]?.results.some((r) => r.outcome === "removed")).toBe(true);
      expect(run.edits).toBe(1);
    });
  }
});
