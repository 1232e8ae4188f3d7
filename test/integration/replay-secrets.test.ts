// Issue 23, break 6, in the replay: a session whose guard record carries a classifier error that echoed
// the key (written before redaction covered fragments), a tool output that quotes it, and a hosted
// classifier that echoes the key's prefix and a models.json header while the session is replayed. The
// secrets come from the agent dir the replay is pointed at; neither the HTML, the JSON nor the summary
// may contain them.
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ReplayReport } from "../../src/core/replay/replay-metrics.ts";
import { type LoopbackClassifier, startLoopbackClassifier } from "../kit/loopback-classifier.ts";

const run = promisify(execFile);
const REPO_ROOT = join(import.meta.dirname, "../..");
const KEY = "cgkey-REPLAY9Qm2Xv9LpR4tZ8wN1bK6yH3sD5";
const HEADER = "tenant-REPLAYHEADER-5e2b8d";

let dir: string;
let classifier: LoopbackClassifier;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "cg-replay-secrets-"));
  classifier = await startLoopbackClassifier({ behaviour: "echo-credentials", echoHeader: "X-Cg-Tenant" });
});
afterAll(async () => {
  await classifier.close();
  await rm(dir, { recursive: true, force: true });
});

/** One run: a prompt, a tool call whose large output quotes the key, the result, the guard's old record, the answer. */
function sessionLines(): string[] {
  const ts = "2026-03-02T12:00:00.000Z";
  const output = Array.from({ length: 300 }, (_, i) =>
    i === 3
      ? `curl: (22) 401 from gateway: key ${KEY.slice(0, 20)} refused`
      : `src/f${i % 20}.ts:${i}: other line ${i}`,
  ).join("\n");
  const entry = (id: string, parentId: string | null, message: Record<string, unknown>) =>
    JSON.stringify({ type: "message", id, parentId, timestamp: ts, message: { timestamp: 1772456022949, ...message } });
  const record = {
    v: 1,
    phase: "run-end",
    model: "openrouter/~typesafe/jev-latest",
    savedChars: 0,
    requests: 1,
    inputTokens: 0,
    costUsd: 0,
    ms: 10,
    timedOut: false,
    results: [
      {
        kind: "large",
        entryId: "r0000003",
        tool: "bash",
        label: "bash `./deploy.sh`",
        outcome: "kept",
        reason: "error",
        beforeChars: output.length,
        afterChars: output.length,
        jev: [`error: System One API error (500): ${KEY.slice(0, 20)} ${HEADER}`],
      },
    ],
  };
  return [
    JSON.stringify({ type: "session", version: 3, id: "replay-secrets", timestamp: ts, cwd: dir }),
    entry("u0000001", null, { role: "user", content: [{ type: "text", text: "deploy it" }] }),
    entry("a0000002", "u0000001", {
      role: "assistant",
      content: [{ type: "toolCall", id: "call_1", name: "bash", arguments: { command: "./deploy.sh" } }],
      api: "openai-completions",
      provider: "fake",
      model: "fake-model",
      stopReason: "toolUse",
    }),
    entry("r0000003", "a0000002", {
      role: "toolResult",
      toolCallId: "call_1",
      toolName: "bash",
      content: [{ type: "text", text: output }],
      isError: false,
    }),
    entry("a0000004", "r0000003", {
      role: "assistant",
      content: [{ type: "text", text: "The gateway refused the key." }],
      api: "openai-completions",
      provider: "fake",
      model: "fake-model",
      stopReason: "stop",
    }),
    JSON.stringify({
      type: "custom",
      id: "c0000005",
      parentId: "a0000004",
      timestamp: ts,
      customType: "context-guard",
      data: record,
    }),
    entry("u0000006", "c0000005", { role: "user", content: [{ type: "text", text: "thanks" }] }),
    entry("a0000007", "u0000006", {
      role: "assistant",
      content: [{ type: "text", text: "You are welcome." }],
      api: "openai-completions",
      provider: "fake",
      model: "fake-model",
      stopReason: "stop",
    }),
  ];
}

describe("the replay report", () => {
  it("contains neither the key, its prefix, nor the header value, in the HTML, the JSON or the summary", async () => {
    const agentDir = join(dir, "agent");
    await mkdir(agentDir, { recursive: true });
    await writeFile(
      join(agentDir, "models.json"),
      JSON.stringify({
        providers: { openrouter: { baseUrl: classifier.baseUrl, apiKey: KEY, headers: { "X-Cg-Tenant": HEADER } } },
      }),
    );
    const session = join(dir, "session.jsonl");
    await writeFile(session, `${sessionLines().join("\n")}\n`);
    const env: NodeJS.ProcessEnv = { ...process.env, PI_CODING_AGENT_DIR: agentDir, PI_OFFLINE: "1" };
    for (const key of Object.keys(env)) if (/_API_KEY$/.test(key)) delete env[key];
    delete env.PI_CONTEXT_GUARD_CONFIG;
    const args = ["replay", session, "--agent-dir", agentDir, "--out", "report.html", "--json", "report.json"];
    const { stdout, stderr } = await run(process.execPath, [join(REPO_ROOT, "src", "cli.ts"), ...args], {
      cwd: dir,
      env,
      timeout: 60_000,
    });
    // The replay asked the hosted classifier, with the agent dir's credentials, and got the echo back.
    expect(stdout).toContain("classifier openrouter/~typesafe/jev-latest");
    expect(classifier.requests.length).toBeGreaterThan(0);
    expect(classifier.requestHeaders.at(-1)?.authorization).toBe(`Bearer ${KEY}`);
    expect(classifier.requestHeaders.at(-1)?.["x-cg-tenant"]).toBe(HEADER);
    const html = await readFile(join(dir, "report.html"), "utf8");
    const json = await readFile(join(dir, "report.json"), "utf8");
    const report = JSON.parse(json) as ReplayReport;
    const results = report.sessions.flatMap((s) => s.passes.flatMap((p) => p.results));
    expect(results.some((r) => r.reason === "error" && r.trace.includes("[redacted]"))).toBe(true);
    // The tool output's line is quoted in the appendix, cut.
    expect(html).toContain("401 from gateway: key [redacted] refused");
    for (const [where, text] of Object.entries({ html, json, stdout, stderr })) {
      for (const secret of [KEY, KEY.slice(0, 20), KEY.slice(0, 8), HEADER, HEADER.slice(0, 10)]) {
        expect(text.includes(secret), `${where} contains ${secret}`).toBe(false);
      }
    }
  });
});
