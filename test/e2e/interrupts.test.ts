// Stopping Pi while a run-end pass waits on a hanging classifier. Pi gives the extension no signal at
// agent_before_settle and sends session_shutdown only after settling, so before the fix each of these
// waited out `timeoutMs` (here 60 s): an RPC `abort`, the end of RPC input, SIGHUP in print mode.
// The deadline is the longest the settings allow (10 min), far past the test's timeout: a test that ends at
// all ended by the interrupt, and the records say it was not the deadline (none, or "aborted").
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { mkdtemp, readdir, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeOpenAI, startFakeOpenAI } from "../kit/fake-openai.ts";
import { type LoopbackClassifier, startLoopbackClassifier } from "../kit/loopback-classifier.ts";
import { FAKE_MODEL, makeAgentDir, NODE_BIN, PI_BIN, REPO_ROOT } from "../kit/pi-agent-dir.ts";

const EXTENSION = join(REPO_ROOT, "src/main/index.ts");
/** Far beyond the test's timeout: a pass that waits it out fails the test. */
const DEADLINE_MS = 600_000;

let classifier: LoopbackClassifier;
let main: FakeOpenAI;
let cwd: string;

beforeAll(async () => {
  classifier = await startLoopbackClassifier({ behaviour: "hang" });
  main = await startFakeOpenAI((req) =>
    req.messages.at(-1)?.role === "user"
      ? { toolCalls: [{ name: "bash", arguments: { command: "cat out.txt" } }] }
      : { text: "done" },
  );
  cwd = await mkdtemp(join(tmpdir(), "cg-interrupts-"));
  const lines = Array.from({ length: 600 }, (_, i) => `lib/f${i % 30}.ts:${i}: line ${i} of the output`);
  await writeFile(join(cwd, "out.txt"), lines.join("\n"));
});
afterAll(async () => {
  await classifier.close();
  await main.close();
});

async function agentDir(): Promise<string> {
  return makeAgentDir({
    mainBaseUrl: main.baseUrl,
    classifierBaseUrl: classifier.baseUrl,
    guardConfig: { timeoutMs: DEADLINE_MS, midRun: false },
  });
}

/** Resolves once the classifier has received a request after `from`: the run-end pass is waiting. */
async function passWaiting(from: number): Promise<void> {
  while (classifier.requests.length <= from) await new Promise((r) => setTimeout(r, 25));
}

interface Child {
  child: ChildProcessWithoutNullStreams;
  stdout: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>;
}

function start(args: string[], dir: string): Child {
  const child = spawn(NODE_BIN, [PI_BIN, ...args, "-ne", "--model", FAKE_MODEL, "-e", EXTENSION], {
    cwd,
    env: { ...process.env, PI_CODING_AGENT_DIR: dir, PI_OFFLINE: "1", PI_CONTEXT_GUARD_CONFIG: "" },
  });
  let out = "";
  child.stdout.setEncoding("utf8").on("data", (d: string) => {
    out += d;
  });
  child.stderr.resume();
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal, at: performance.now() })),
  );
  const killer = setTimeout(() => child.kill("SIGKILL"), 120_000);
  void exited.then(() => clearTimeout(killer));
  return { child, stdout: () => out, exited };
}

async function records(sessionDir: string): Promise<Array<{ phase: string; results: Array<{ reason: string }> }>> {
  const files = (await readdir(sessionDir, { recursive: true })).filter((f) => String(f).endsWith(".jsonl"));
  const out = [];
  for (const f of files) {
    for (const line of (await readFile(join(sessionDir, String(f)), "utf8")).split("\n")) {
      if (!line.includes('"customType":"context-guard"')) continue;
      out.push(JSON.parse(line).data);
    }
  }
  return out;
}

describe("a hanging run-end pass stops at once when", () => {
  it("an RPC client sends abort: the abort answers promptly and the record says aborted", async () => {
    const dir = await agentDir();
    const sessions = await mkdtemp(join(tmpdir(), "cg-int-sessions-"));
    const pi = start(["--mode", "rpc", "--session-dir", sessions], dir);
    try {
      const from = classifier.requests.length;
      pi.child.stdin.write(`${JSON.stringify({ id: "1", type: "prompt", message: "summarize out.txt" })}\n`);
      await passWaiting(from);
      pi.child.stdin.write(`${JSON.stringify({ id: "2", type: "abort" })}\n`);
      while (!pi.stdout().includes('"command":"abort"')) await new Promise((r) => setTimeout(r, 25));
      const found = await records(sessions);
      expect(found.length).toBe(1);
      expect(found[0]?.results.every((r) => r.reason === "aborted")).toBe(true);
    } finally {
      pi.child.kill("SIGKILL");
      await pi.exited;
    }
  });

  it("RPC input ends (stdin EOF): Pi exits promptly and writes no record", async () => {
    const dir = await agentDir();
    const sessions = await mkdtemp(join(tmpdir(), "cg-int-sessions-"));
    const pi = start(["--mode", "rpc", "--session-dir", sessions], dir);
    const from = classifier.requests.length;
    pi.child.stdin.write(`${JSON.stringify({ id: "1", type: "prompt", message: "summarize out.txt" })}\n`);
    await passWaiting(from);
    pi.child.stdin.end();
    await pi.exited;
    expect(await records(sessions)).toEqual([]);
  });

  it("print mode gets SIGHUP: Pi exits promptly and writes no record", async () => {
    const dir = await agentDir();
    const sessions = await mkdtemp(join(tmpdir(), "cg-int-sessions-"));
    const from = classifier.requests.length;
    const pi = start(["-p", "--session-dir", sessions, "summarize out.txt"], dir);
    // Print mode reads piped stdin as part of the prompt.
    pi.child.stdin.end();
    await passWaiting(from);
    pi.child.kill("SIGHUP");
    const exit = await pi.exited;
    expect(exit.code).toBe(129);
    expect(await records(sessions)).toEqual([]);
  });
});
