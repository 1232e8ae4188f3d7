// The run end's hand-over and a process that goes away, in the real Pi in RPC mode: the run ends within
// its budget while the classifier (answering only after HANG_MS) is still asked; then stdin closes (EOF)
// or Pi gets SIGTERM. The process exits without waiting for the classifier, and the session file keeps
// the run whole with nothing half-written (no guard entry at all); the next session's run end asks about
// those outputs at most once.
import { mkdtemp, readdir, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeOpenAI, startFakeOpenAI, type WireJson } from "../kit/fake-openai.ts";
import { keywordPolicy, type LoopbackClassifier, startLoopbackClassifier } from "../kit/loopback-classifier.ts";
import { makeAgentDir, REPO_ROOT } from "../kit/pi-agent-dir.ts";
import { startRpcPi } from "../kit/rpc-pi.ts";
import { testLog } from "../kit/test-log.ts";

const EXTENSION = join(REPO_ROOT, "src/main/index.ts");
/** Far longer than an exit may take: an exit that waited for the classifier is seen at once. */
const HANG_MS = 60_000;

let classifier: LoopbackClassifier;
let main: FakeOpenAI;
let cwd: string;

beforeAll(async () => {
  classifier = await startLoopbackClassifier({ policy: keywordPolicy(/FAIL/) });
  main = await startFakeOpenAI((req) => {
    const tools = req.messages.filter((m: WireJson) => m.role === "tool").length;
    const users = req.messages.filter((m: WireJson) => m.role === "user").length;
    // The first session reads two logs; a resumed one answers at once.
    if (users > 1 || tools >= 2) return { text: "done" };
    return { toolCalls: [{ name: "bash", arguments: { command: `cat log${tools}.txt` } }] };
  });
  cwd = await mkdtemp(join(tmpdir(), "cg-handover-exit-"));
  for (let i = 0; i < 2; i++) await writeFile(join(cwd, `log${i}.txt`), testLog(i));
});
afterAll(async () => {
  await main?.close();
  await classifier?.close();
});

async function sessionLines(dir: string): Promise<Array<{ type: string; customType?: string }>> {
  const files: string[] = [];
  const walk = async (d: string): Promise<void> => {
    for (const e of await readdir(d, { withFileTypes: true })) {
      if (e.isDirectory()) await walk(join(d, e.name));
      else if (e.name.endsWith(".jsonl")) files.push(join(d, e.name));
    }
  };
  await walk(dir);
  expect(files).toHaveLength(1);
  const text = await readFile(files[0] as string, "utf8");
  expect(text.endsWith("\n")).toBe(true);
  return text
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l));
}

describe.each([
  ["EOF on stdin", (rpc: ReturnType<typeof startRpcPi>) => rpc.child.stdin.end()],
  ["SIGTERM", (rpc: ReturnType<typeof startRpcPi>) => rpc.child.kill("SIGTERM")],
])("the hand-over's rest pending at %s", (_name, stop) => {
  it("exits without waiting for the classifier, writes nothing half-done, and nothing is asked twice", async () => {
    classifier.set({ latencyMs: HANG_MS });
    const agentDir = await makeAgentDir({
      mainBaseUrl: main.baseUrl,
      classifierBaseUrl: classifier.baseUrl,
      guardConfig: { settleBudgetMs: 150, midRun: false, timeoutMs: 120_000, telemetry: false },
    });
    const sessions = join(agentDir, "sessions");
    const env = { PI_CONTEXT_GUARD_CONFIG: "" };
    const rpc = startRpcPi({ agentDir, cwd, extensions: [EXTENSION], args: ["--session-dir", sessions], env });
    const before = classifier.requests.length;
    rpc.send({ type: "prompt", message: "find the failures" });
    await rpc.waitFor((r) => r.type === "agent_settled", { timeoutMs: 60_000 });
    while (classifier.requests.length === before) await new Promise((r) => setTimeout(r, 10));
    const asked = classifier.requests.length - before;
    expect(asked).toBeGreaterThan(0);
    const answeredBefore = classifier.answered;
    stop(rpc);
    await rpc.exited;
    // Exited before any of its requests had its answer (each waits HANG_MS, longer than the test's timeout).
    expect(classifier.answered).toBe(answeredBefore);
    const lines = await sessionLines(sessions);
    expect(lines.filter((l) => l.type === "message").length).toBeGreaterThanOrEqual(5);
    expect(lines.some((l) => l.type === "context_edit" || l.customType === "context-guard")).toBe(false);

    // The next session's run end: those outputs carry no record, so they are not retried as outputs.
    classifier.set({ latencyMs: 0 });
    const from = classifier.requests.length;
    const next = startRpcPi({
      agentDir,
      cwd,
      extensions: [EXTENSION],
      args: ["--session-dir", sessions, "-c"],
      env: { ...env, PI_CONTEXT_GUARD_SETTLE_BUDGET_MS: "120000" },
    });
    try {
      next.send({ type: "prompt", message: "thanks" });
      await next.waitFor((r) => r.type === "agent_settled", { timeoutMs: 60_000 });
      const again = classifier.requests.slice(from).map((b) => JSON.stringify(b));
      for (const n of [0, 1]) {
        expect(again.filter((b) => b.includes(`broken_${n}_50`)).length, `log${n}`).toBeLessThanOrEqual(1);
      }
    } finally {
      await next.close();
    }
  });
});
