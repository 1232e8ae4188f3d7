// Issue 23, break 6, against the real Pi CLI: a classifier server that answers 500 with the first 20
// characters of the key and the value of a header declared in models.json. Neither may reach the session
// file, the telemetry file or Pi's RPC output (the notices /guard shows included). The key comes from an
// environment variable (`$CG_E2E_KEY`) and the header from a `!command`, so Pi's own resolution is what
// the extension has to follow.
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeOpenAI, startFakeOpenAI } from "../kit/fake-openai.ts";
import { type LoopbackClassifier, startLoopbackClassifier } from "../kit/loopback-classifier.ts";
import { FAKE_MODEL, makeAgentDir, NODE_BIN, PI_BIN, REPO_ROOT, removeAgentDir } from "../kit/pi-agent-dir.ts";

const EXTENSION = join(REPO_ROOT, "src/main/index.ts");
/** Not in a well-known key format: only knowing the actual key can cut it out of an echo. */
const KEY = "cgkey-E2E7Qm2Xv9LpR4tZ8wN1bK6yH3sD5fJ0";
const HEADER = "tenant-HEADERSECRET-7f3a9c";

let classifier: LoopbackClassifier;
let main: FakeOpenAI;
let dir: string;

beforeAll(async () => {
  classifier = await startLoopbackClassifier({ behaviour: "echo-credentials", echoHeader: "X-Cg-Tenant" });
  main = await startFakeOpenAI((req) =>
    req.messages.at(-1)?.role === "user"
      ? { toolCalls: [{ name: "bash", arguments: { command: "cat out.txt" } }] }
      : { text: "needle is in lib/f5.ts" },
  );
  dir = await mkdtemp(join(tmpdir(), "cg-e2e-secrets-"));
  const lines = Array.from(
    { length: 400 },
    (_, i) => `lib/f${i % 30}.ts:${i}:${i === 5 ? "needle" : "other"} line ${i}`,
  );
  await writeFile(join(dir, "out.txt"), lines.join("\n"));
});
afterAll(async () => {
  await classifier.close();
  await main.close();
  await rm(dir, { recursive: true, force: true });
});

async function jsonlFiles(root: string): Promise<string[]> {
  const out: string[] = [];
  for (const item of await readdir(root, { withFileTypes: true, recursive: true })) {
    if (item.isFile() && item.name.endsWith(".jsonl")) out.push(join(item.parentPath, item.name));
  }
  return out;
}

describe("credentials a classifier server echoes", () => {
  it("reach neither the session file, nor telemetry, nor the RPC stream", async () => {
    const telemetryPath = join(dir, "telemetry.jsonl");
    const agentDir = await makeAgentDir({
      mainBaseUrl: main.baseUrl,
      classifierBaseUrl: classifier.baseUrl,
      guardConfig: { telemetry: true, telemetryPath, midRun: false },
      extraProviders: {
        openrouter: {
          baseUrl: classifier.baseUrl,
          apiKey: "$CG_E2E_KEY",
          headers: { "X-Cg-Tenant": `!printf %s ${HEADER}` },
        },
      },
    });
    const child: ChildProcessWithoutNullStreams = spawn(
      NODE_BIN,
      [PI_BIN, "--mode", "rpc", "-ne", "--model", FAKE_MODEL, "-e", EXTENSION],
      {
        cwd: dir,
        env: {
          ...process.env,
          PI_CODING_AGENT_DIR: agentDir,
          PI_OFFLINE: "1",
          PI_CONTEXT_GUARD_CONFIG: "",
          CG_E2E_KEY: KEY,
        },
      },
    );
    let stdout = "";
    let stderr = "";
    const waiters: Array<() => void> = [];
    child.stdout.setEncoding("utf8").on("data", (d: string) => {
      stdout += d;
      for (const w of waiters.splice(0)) w();
    });
    child.stderr.setEncoding("utf8").on("data", (d: string) => {
      stderr += d;
    });
    const records = () =>
      stdout
        .split("\n")
        .filter((l) => l.trim())
        .flatMap((l) => {
          try {
            return [JSON.parse(l) as Record<string, unknown>];
          } catch {
            return [];
          }
        });
    const waitFor = (pred: (r: Record<string, unknown>) => boolean) =>
      new Promise<void>((resolve, reject) => {
        const deadline = setTimeout(() => reject(new Error(`timed out; stdout ends ${stdout.slice(-600)}`)), 30_000);
        const check = () => {
          if (records().some(pred)) {
            clearTimeout(deadline);
            resolve();
          } else waiters.push(check);
        };
        check();
      });
    const send = (m: Record<string, unknown>) => child.stdin.write(`${JSON.stringify(m)}\n`);
    try {
      await waitFor((r) => r.method === "setStatus");
      send({ id: "1", type: "prompt", message: "where is needle?" });
      await waitFor((r) => r.type === "agent_settled");
      // /guard trace lists the pass's results with their traces (the classifier's error among them).
      send({ id: "2", type: "prompt", message: "/guard trace" });
      await waitFor((r) => r.id === "2" && r.type === "response");
      await waitFor((r) => r.method === "notify" && String(r.message).startsWith("Last pass"));
    } finally {
      await new Promise<void>((resolve) => {
        child.once("close", () => resolve());
        child.kill();
      });
    }
    try {
      // The server did get the credentials, resolved by Pi, and answered with them.
      expect(classifier.requests.length).toBeGreaterThan(0);
      const headers = classifier.requestHeaders.at(-1);
      expect(headers?.authorization).toBe(`Bearer ${KEY}`);
      expect(headers?.["x-cg-tenant"]).toBe(HEADER);

      const sessions = await jsonlFiles(join(agentDir, "sessions"));
      expect(sessions).toHaveLength(1);
      const session = await readFile(sessions[0] as string, "utf8");
      // The pass ran and recorded the classifier's error, redacted.
      const record = session
        .split("\n")
        .filter((l) => l.includes('"customType":"context-guard"'))
        .map((l) => JSON.parse(l).data)
        .at(-1);
      expect(record?.results?.[0]?.reason).toBe("error");
      expect(record?.results?.[0]?.jev.join(" ")).toContain("System One API error (500): [redacted]");
      const guard = records().find((r) => r.method === "notify" && String(r.message).startsWith("Last pass"));
      expect(String(guard?.message)).toContain("[redacted]");

      const written = {
        session,
        telemetry: await readFile(telemetryPath, "utf8"),
        rpc: stdout,
        stderr,
      };
      for (const [where, text] of Object.entries(written)) {
        for (const secret of [KEY, KEY.slice(0, 20), KEY.slice(0, 8), HEADER, HEADER.slice(0, 10)]) {
          expect(text.includes(secret), `${where} contains ${secret}`).toBe(false);
        }
      }
    } finally {
      await removeAgentDir(agentDir);
    }
  });
});
