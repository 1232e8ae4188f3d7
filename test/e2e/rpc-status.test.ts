// Pi in RPC mode turns UI calls into stdout records, so the footer states and /guard can be asserted
// exactly as a TUI user would see them.
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeOpenAI, startFakeOpenAI } from "../kit/fake-openai.ts";
import { keywordPolicy, type LoopbackClassifier, startLoopbackClassifier } from "../kit/loopback-classifier.ts";
import { FAKE_MODEL, makeAgentDir, NODE_BIN, PI_BIN, REPO_ROOT } from "../kit/pi-agent-dir.ts";

const EXTENSION = join(REPO_ROOT, "src/main/index.ts");
const stripAnsi = (s: string) => s.replace(/\u001b\[[0-9;]*m/g, "");

interface Rpc {
  records: Array<Record<string, unknown>>;
  send(message: Record<string, unknown>): void;
  waitFor(pred: (r: Record<string, unknown>) => boolean, timeoutMs?: number): Promise<Record<string, unknown>>;
  statuses(): string[];
  notices(): string[];
  close(): Promise<void>;
}

function startRpc(agentDir: string, cwd: string): Rpc {
  const child: ChildProcessWithoutNullStreams = spawn(
    NODE_BIN,
    [PI_BIN, "--mode", "rpc", "-ne", "--no-session", "--model", FAKE_MODEL, "-e", EXTENSION],
    { cwd, env: { ...process.env, PI_CODING_AGENT_DIR: agentDir, PI_OFFLINE: "1", PI_CONTEXT_GUARD_CONFIG: "" } },
  );
  const records: Array<Record<string, unknown>> = [];
  const waiters: Array<() => void> = [];
  let buffer = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
    buffer += chunk;
    let nl = buffer.indexOf("\n");
    while (nl !== -1) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      if (line.trim()) {
        try {
          records.push(JSON.parse(line));
        } catch {}
      }
      nl = buffer.indexOf("\n");
    }
    for (const w of waiters.splice(0)) w();
  });
  return {
    records,
    send: (message) => child.stdin.write(`${JSON.stringify(message)}\n`),
    waitFor(pred, timeoutMs = 20_000) {
      return new Promise((resolve, reject) => {
        const deadline = setTimeout(
          () => reject(new Error(`timed out; got ${JSON.stringify(records.slice(-5))}`)),
          timeoutMs,
        );
        let from = 0;
        const check = () => {
          for (; from < records.length; from++) {
            const r = records[from] as Record<string, unknown>;
            if (pred(r)) {
              clearTimeout(deadline);
              resolve(r);
              return;
            }
          }
          waiters.push(check);
        };
        check();
      });
    },
    statuses: () =>
      records
        .filter((r) => r.method === "setStatus" && r.statusKey === "context-guard")
        .map((r) => stripAnsi(String(r.statusText))),
    notices: () => records.filter((r) => r.method === "notify").map((r) => String(r.message)),
    close: () =>
      new Promise((resolve) => {
        child.once("close", () => resolve());
        child.kill();
      }),
  };
}

let classifier: LoopbackClassifier;
let main: FakeOpenAI;
let cwd: string;

beforeAll(async () => {
  classifier = await startLoopbackClassifier({ policy: keywordPolicy(/needle/) });
  main = await startFakeOpenAI((req) =>
    req.messages.at(-1)?.role === "user"
      ? { toolCalls: [{ name: "bash", arguments: { command: "cat out.txt" } }] }
      : { text: "needle is in lib/f5.ts" },
  );
  cwd = await mkdtemp(join(tmpdir(), "cg-rpc-"));
  const lines = Array.from(
    { length: 400 },
    (_, i) => `lib/f${i % 30}.ts:${i}:${i === 5 ? "needle" : "other"} line ${i}`,
  );
  await writeFile(join(cwd, "out.txt"), lines.join("\n"));
});
afterAll(async () => {
  await classifier.close();
  await main.close();
});

describe("status bar and /guard in RPC mode", () => {
  it("shows ready, busy and savings, then /guard reports the pass and /guard off persists", async () => {
    const agentDir = await makeAgentDir({
      mainBaseUrl: main.baseUrl,
      classifierBaseUrl: classifier.baseUrl,
      guardConfig: { keep: "me" },
    });
    const rpc = startRpc(agentDir, cwd);
    try {
      await rpc.waitFor((r) => r.method === "setStatus");
      rpc.send({ id: "1", type: "prompt", message: "where is needle?" });
      await rpc.waitFor((r) => r.type === "agent_settled");
      await rpc.waitFor(() => rpc.statuses().some((s) => s.startsWith("🛡 −")));
      expect(rpc.statuses().slice(0, 3)).toEqual(["🛡 0 saved", "🛡 distilling…", "🛡 −2.7k · 1"]);

      rpc.send({ id: "2", type: "prompt", message: "/guard" });
      await rpc.waitFor((r) => r.id === "2" && r.type === "response");
      const report = rpc.notices().find((n) => n.startsWith("context-guard is on")) ?? "";
      expect(report).toContain("Now: 2.7k tokens kept out of the context (1 item).");
      expect(report).toMatch(/Last pass \(just now, end of a run\): replaced 1 item \(10\.8k chars kept out\)/);
      expect(report).not.toContain("kw.");

      rpc.send({ id: "2t", type: "prompt", message: "/guard trace" });
      await rpc.waitFor((r) => r.id === "2t" && r.type === "response");
      const trace = rpc.notices().find((n) => n.startsWith("Last pass (run-end")) ?? "";
      expect(trace).toMatch(
        /bash `cat out\.txt`: distilled 11\.6k → \d+ chars \(chunks\) kw\.10 focus=chunk_1:\.70 keep 1\/31/,
      );

      rpc.send({ id: "3", type: "prompt", message: "/guard off" });
      await rpc.waitFor((r) => r.id === "3" && r.type === "response");
      expect(rpc.statuses().at(-1)).toBe("🛡 guard off");
      const saved = JSON.parse(await readFile(join(agentDir, "context-guard.json"), "utf8"));
      expect(saved).toEqual({ keep: "me", enabled: false });
      expect(rpc.notices().some((n) => n.includes("keep: unknown setting"))).toBe(true);
    } finally {
      await rpc.close();
    }
  });

  it("says when the classifier's provider has no key, or the model is unknown", async () => {
    const noKey = await makeAgentDir({ mainBaseUrl: main.baseUrl, classifierBaseUrl: classifier.baseUrl });
    // Keep the fake main model but drop the openrouter override that carries the key.
    const models = JSON.parse(await readFile(join(noKey, "models.json"), "utf8"));
    delete models.providers.openrouter;
    await writeFile(join(noKey, "models.json"), JSON.stringify(models));
    const a = startRpc(noKey, cwd);
    try {
      await a.waitFor((r) => r.method === "setStatus");
      expect(a.statuses()[0]).toBe("🛡 no openrouter key");
    } finally {
      await a.close();
    }
    const unknown = await makeAgentDir({
      mainBaseUrl: main.baseUrl,
      classifierBaseUrl: classifier.baseUrl,
      guardConfig: { model: "openrouter/no-such-classifier" },
    });
    const b = startRpc(unknown, cwd);
    try {
      await b.waitFor((r) => r.method === "setStatus");
      expect(b.statuses()[0]).toBe("🛡 model openrouter/no-such-classifier not found");
    } finally {
      await b.close();
    }
  });
});
