// The install routes a Pi user has, through Pi's own `pi install` into a fresh agent folder, then a real
// `pi -p` run against the loopback model and classifier: the extension must load without `-e`, offer
// `recall` to the model, and distill an output.
//   - the packed tarball as `npm:pi-context-guard@file:<tarball>`, standing in for the registry package
//     (`pi install npm:<path>.tgz` parses the path as the package name and never loads it: Pi 1.6);
//   - the folder of a clone after `npm install` (this checkout).
// npm runs offline here (its cache is warm after `npm ci`): no test touches the network.
import { execFile } from "node:child_process";
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeOpenAI, type FakeRequest, startFakeOpenAI } from "../kit/fake-openai.ts";
import { keywordPolicy, type LoopbackClassifier, startLoopbackClassifier } from "../kit/loopback-classifier.ts";
import { packCheckout, withCheckoutLock } from "../kit/pack.ts";
import { FAKE_MODEL, makeAgentDir, NODE_BIN, PI_BIN, REPO_ROOT, runPiCli } from "../kit/pi-agent-dir.ts";

const run = promisify(execFile);
const env = { ...process.env, PATH: `${join(REPO_ROOT, "node_modules/.bin")}:${process.env.PATH}` };

let classifier: LoopbackClassifier;
let main: FakeOpenAI;
let cwd: string;
let tarball: string;

const output = `${Array.from({ length: 360 }, (_, i) =>
  Math.floor(i / 12) === 9
    ? `lib/special.ts:${i}:export const needle_value = ${i};`
    : `lib/file${i % 30}.ts:${i}:const other_value_${i} = compute(${i});`,
).join("\n")}\n`;

beforeAll(async () => {
  classifier = await startLoopbackClassifier({ policy: keywordPolicy(/needle_value/) });
  main = await startFakeOpenAI((req) => {
    const last = req.messages.at(-1) as { role: string; content: unknown };
    if (last.role === "user" && JSON.stringify(last.content).includes("Where")) {
      return { toolCalls: [{ name: "bash", arguments: { command: "cat out.txt" } }] };
    }
    return { text: "needle_value is in lib/special.ts" };
  });
  cwd = await mkdtemp(join(tmpdir(), "cg-install-cwd-"));
  await writeFile(join(cwd, "out.txt"), output);
  tarball = await packCheckout(await mkdtemp(join(tmpdir(), "cg-install-pack-")));
}, 180_000);

afterAll(async () => {
  await classifier.close();
  await main.close();
});

async function installAndRun(source: string) {
  const agentDir = await makeAgentDir({
    mainBaseUrl: main.baseUrl,
    classifierBaseUrl: classifier.baseUrl,
    guardConfig: {},
  });
  const installEnv = { ...env, PI_CODING_AGENT_DIR: agentDir, PI_OFFLINE: "1", npm_config_offline: "true" };
  const installed = await run(NODE_BIN, [PI_BIN, "install", source], { cwd, env: installEnv });
  // The name Pi shows for the package (the README quotes it per route).
  const listed = (await run(NODE_BIN, [PI_BIN, "list"], { cwd, env: installEnv })).stdout;
  const settings = JSON.parse(await readFile(join(agentDir, "settings.json"), "utf8")) as { packages?: unknown[] };
  const before = main.log.length;
  const result = await runPiCli(
    ["-p", "--no-session", "--model", FAKE_MODEL, "Where is needle_value?", "Thanks, and again?"],
    { PI_CODING_AGENT_DIR: agentDir },
    { cwd, timeoutMs: 90_000 },
  );
  return { installed, listed, settings, result, requests: main.log.slice(before) };
}

const toolNames = (req: FakeRequest) =>
  req.tools.map((t: { function?: { name?: string }; name?: string }) => t.function?.name ?? t.name);
const lastToolText = (req: FakeRequest) => {
  const tool = req.messages.filter((m: { role: string }) => m.role === "tool").at(-1);
  return typeof tool?.content === "string" ? tool.content : JSON.stringify(tool?.content ?? "");
};

function expectGuarded(out: Awaited<ReturnType<typeof installAndRun>>) {
  expect(out.result.stderr).not.toMatch(/Extension error|Failed to load|context-guard: the pass failed/);
  expect(out.result.code).toBe(0);
  expect(out.requests.length).toBe(3);
  // The model is offered recall: the extension loaded.
  expect(toolNames(out.requests[0] as FakeRequest)).toContain("recall");
  // And distilled the run's output before the second prompt.
  const text = lastToolText(out.requests[2] as FakeRequest);
  expect(text).toContain("[context-guard] Distilled the output of bash `cat out.txt`");
  expect(text).toContain("needle_value = 108");
}

describe("pi install", () => {
  it("npm:pi-context-guard@file:<packed tarball> (the registry layout) loads and distills", async () => {
    const out = await installAndRun(`npm:pi-context-guard@file:${tarball}`);
    expect(out.settings.packages).toEqual([`npm:pi-context-guard@file:${tarball}`]);
    expect(out.listed).toContain(`pi-context-guard@file:${tarball}`);
    // The packed manifest holds only what an installed package needs.
    const packed = JSON.parse((await run("tar", ["-xOzf", tarball, "package/package.json"])).stdout);
    expect(packed.scripts).toBeUndefined();
    expect(packed.devDependencies).toBeUndefined();
    expect(packed.allowScripts).toBeUndefined();
    expect(packed.peerDependencies["@earendil-works/pi-coding-agent"]).toBe(">=1.6.0 <2");
    // The packed manifest installs without a warning about its own scripts.
    expect(`${out.installed.stdout}${out.installed.stderr}`).not.toMatch(/pi-context-guard@[\d.]+ \(prepare/);
    expectGuarded(out);
  }, 180_000);

  it("the folder of a clone after npm install loads and distills", async () => {
    // Not while another test's `npm pack` rebuilds dist/ under it.
    const out = await withCheckoutLock(() => installAndRun(REPO_ROOT));
    expect(out.settings.packages?.length).toBe(1);
    expect(out.listed).toContain(REPO_ROOT);
    expectGuarded(out);
  }, 180_000);
});
