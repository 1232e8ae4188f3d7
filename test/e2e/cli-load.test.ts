// The `pi` CLI loads the extension two ways: from the checkout (`pi -e ./src/main/index.ts`, workers as
// .ts stripped by Node) and as an installed package under node_modules (built .js, workers included).
import { execFile } from "node:child_process";
import { mkdtemp, readdir, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { SessionManager } from "@earendil-works/pi-coding-agent";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keepNothing } from "../kit/answers.ts";
import { type FakeOpenAI, type FakeRequest, startFakeOpenAI } from "../kit/fake-openai.ts";
import { keywordPolicy, type LoopbackClassifier, startLoopbackClassifier } from "../kit/loopback-classifier.ts";
import { packCheckout } from "../kit/pack.ts";
import { FAKE_MODEL, makeAgentDir, REPO_ROOT, runPiCli } from "../kit/pi-agent-dir.ts";
import { NO_USAGE } from "../kit/pi-messages.ts";

const run = promisify(execFile);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const output = `${Array.from({ length: 360 }, (_, i) => {
  const f = Math.floor(i / 12);
  return f === 9
    ? `lib/special.ts:${i}:export const needle_value = ${i};`
    : `lib/file${f}.ts:${i}:const other${i} = ${i};`;
}).join("\n")}\n`;

let classifier: LoopbackClassifier;
let main: FakeOpenAI;
let cwd: string;

function lastToolText(req: FakeRequest): string {
  const tool = req.messages.filter((m: { role: string }) => m.role === "tool").at(-1);
  return typeof tool?.content === "string" ? tool.content : JSON.stringify(tool?.content ?? "");
}

beforeAll(async () => {
  classifier = await startLoopbackClassifier({ policy: keywordPolicy(/needle_value/) });
  // Prompt 1: call bash, then answer. Prompt 2: answer from what the context shows.
  main = await startFakeOpenAI((req) => {
    const last = req.messages.at(-1) as { role: string; content: unknown };
    if (last.role === "user" && String(JSON.stringify(last.content)).includes("Where")) {
      return { toolCalls: [{ name: "bash", arguments: { command: "cat out.txt" } }] };
    }
    return { text: "needle_value is in lib/special.ts" };
  });
  cwd = await mkdtemp(join(tmpdir(), "cg-cli-cwd-"));
  await writeFile(join(cwd, "out.txt"), output);
});

afterAll(async () => {
  await classifier.close();
  await main.close();
});

async function runWith(extension: string) {
  const agentDir = await makeAgentDir({
    mainBaseUrl: main.baseUrl,
    classifierBaseUrl: classifier.baseUrl,
    guardConfig: {},
  });
  const before = main.log.length;
  const result = await runPiCli(
    [
      "-p",
      "-ne",
      "--no-session",
      "--model",
      FAKE_MODEL,
      "-e",
      extension,
      "Where is needle_value?",
      "Thanks, and again?",
    ],
    { PI_CODING_AGENT_DIR: agentDir },
    { cwd, timeoutMs: 60_000 },
  );
  return { result, requests: main.log.slice(before) };
}

function expectDistilled(requests: FakeRequest[]) {
  expect(requests).toHaveLength(3);
  const secondPrompt = requests[2] as FakeRequest;
  const text = lastToolText(secondPrompt);
  expect(text).toContain("[context-guard] Distilled the output of bash `cat out.txt`");
  expect(text).toContain("lib/special.ts:108:export const needle_value = 108;");
  expect(text).not.toContain("lib/file0.ts:0:");
  // The request inside the run still had the raw output.
  expect(lastToolText(requests[1] as FakeRequest)).toContain("lib/file0.ts:0:const other0 = 0;");
}

describe("pi CLI", () => {
  it("loads the extension from the checkout and distills at run end", async () => {
    const { result, requests } = await runWith(join(REPO_ROOT, "src/main/index.ts"));
    expect(result.stderr).not.toMatch(/Extension error|context-guard: the pass failed/);
    expect(result.code).toBe(0);
    expectDistilled(requests);
  });

  it("loads the packed package installed under node_modules, worker files included", async () => {
    const tarball = await packCheckout(await mkdtemp(join(tmpdir(), "cg-pack-")));
    const env = { ...process.env, PATH: `${join(REPO_ROOT, "node_modules/.bin")}:${process.env.PATH}` };
    const installDir = await mkdtemp(join(tmpdir(), "cg-install-"));
    await writeFile(join(installDir, "package.json"), JSON.stringify({ name: "cg-install-test", private: true }));
    await run(
      "npm",
      [
        "install",
        "--no-save",
        "--omit=dev",
        "--legacy-peer-deps",
        "--prefer-offline",
        "--no-audit",
        "--no-fund",
        tarball,
      ],
      { cwd: installDir, env },
    );
    const pkg = join(installDir, "node_modules", "pi-context-guard");
    expect(await readdir(join(pkg, "dist", "workers"))).toContain("tasks.js");
    const { result, requests } = await runWith(pkg);
    expect(result.stderr).not.toMatch(/Extension error|context-guard: the pass failed|ERR_UNSUPPORTED/);
    expect(result.code).toBe(0);
    expectDistilled(requests);
    await passThroughLibrary(pkg);
  }, 180_000);
});

/** The installed package as a library: a whole pass through its pipeline and pool, its workers loaded from dist. */
async function passThroughLibrary(pkg: string): Promise<void> {
  const lib = (await import(pathToFileURL(join(pkg, "dist", "index.js")).href)) as typeof import("../../src/index.ts");
  const runner = await lib.createTaskRunner({ backend: "piscina", maxThreads: 1 });
  try {
    const lines = Array.from({ length: 800 }, (_, i) => `src/f${i % 7}.ts:${i + 1}: ${i === 5 ? "needle()" : "hay()"}`);
    const session = SessionManager.inMemory();
    const reply = { role: "assistant", api: "openai-completions", provider: "x", model: "y", usage: NO_USAGE } as const;
    const search = { type: "toolCall", id: "c", name: "bash", arguments: { command: "rg -n needle" } } as const;
    session.appendMessage({ role: "user", content: "where is needle called?", timestamp: 1 });
    session.appendMessage({ ...reply, content: [search], stopReason: "toolUse", timestamp: 2 });
    const output = session.appendMessage({
      role: "toolResult",
      toolCallId: "c",
      toolName: "bash",
      isError: false,
      timestamp: 3,
      content: [{ type: "text", text: lines.join("\n") }],
    });
    const answer = [{ type: "text", text: "needle is called in src/f5.ts" }] as const;
    session.appendMessage({ ...reply, content: [...answer], stopReason: "stop", timestamp: 4 });
    const context = session.buildSessionProjection().entries;
    const pipeline = new lib.PassPipeline({ config: lib.DEFAULT_CONFIG, runner });
    // Warmed first, as the extension does when a session's first run starts: the pass then has nothing left to send.
    expect(await pipeline.warm(context)).toBe(context.length);
    const { result } = await pipeline.pass({
      phase: "run-end",
      context,
      classify: keepNothing,
      modelRef: "x/y",
      family: "other",
    });
    if (result.status !== "done") throw new Error(`no pass: ${result.status}`);
    expect(result.edits.map((e) => e.targetId)).toEqual([output]);
  } finally {
    await runner.destroy();
  }
  // The classifier's HTTP thread loads from dist too (the extension would otherwise fall back to the
  // main thread without a word).
  const http = lib.createThreadFetch();
  try {
    http.start();
    while (!http.ready && http.unavailable === undefined) await sleep(10);
    expect(http.unavailable).toBeUndefined();
    expect(http.ready).toBe(true);
    const response = await http.fetch(`${classifier.baseUrl}/systemone`, { method: "POST", body: "not json" });
    expect(response.status).toBe(400);
  } finally {
    await http.close();
  }
}
