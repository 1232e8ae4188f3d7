// The request bodies the `pi` CLI sends with skill routing, recorded by a loopback OpenAI-compatible
// model: with a classifier, the unrelated skills are not advertised; with the classifier down, the body is
// what Pi sends without the extension (apart from the extension's own `recall` tool).
import { mkdir, mkdtemp, readFile, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeOpenAI, startFakeOpenAI, type WireJson } from "../kit/fake-openai.ts";
import { type LoopbackClassifier, startLoopbackClassifier } from "../kit/loopback-classifier.ts";
import { FAKE_MODEL, makeAgentDir, runPiCli } from "../kit/pi-agent-dir.ts";
import { routingPolicy, writeSkills } from "../kit/routing-fixtures.ts";

const EXTENSION = resolve(import.meta.dirname, "../../src/main/index.ts");

let classifier: LoopbackClassifier;
let deadUrl: string;
let main: FakeOpenAI;
let cwd: string;
let home: string;

beforeAll(async () => {
  classifier = await startLoopbackClassifier({ policy: routingPolicy });
  const down = await startLoopbackClassifier();
  deadUrl = down.baseUrl;
  await down.close();
  main = await startFakeOpenAI(() => ({ text: "ok" }));
  cwd = await mkdtemp(join(tmpdir(), "cg-route-cli-cwd-"));
  home = await mkdtemp(join(tmpdir(), "cg-route-cli-home-")); // keeps ~/.agents/skills out
  await mkdir(join(home, ".agents"), { recursive: true });
});

afterAll(async () => {
  await classifier.close();
  await main.close();
});

async function agent(classifierBaseUrl: string): Promise<string> {
  const agentDir = await makeAgentDir({ mainBaseUrl: main.baseUrl, classifierBaseUrl, guardConfig: { midRun: false } });
  await writeSkills(agentDir);
  return agentDir;
}

async function run(opts: { extension: boolean; agentDir: string; prompts: string[] }) {
  const { agentDir } = opts;
  const before = main.log.length;
  const result = await runPiCli(
    ["-p", "-ne", "--no-session", "--model", FAKE_MODEL, ...(opts.extension ? ["-e", EXTENSION] : []), ...opts.prompts],
    { PI_CODING_AGENT_DIR: agentDir, HOME: home },
    { cwd, timeoutMs: 60_000 },
  );
  expect(result.code, result.stderr).toBe(0);
  return main.log.slice(before).map((r) => r.body as WireJson);
}

function systemText(body: WireJson): string {
  return body.messages
    .filter((m: { role: string }) => m.role === "system" || m.role === "developer")
    .map((m: { content: unknown }) => (typeof m.content === "string" ? m.content : JSON.stringify(m.content)))
    .join("\n");
}

const withoutRecall = (body: WireJson): WireJson => ({
  ...body,
  tools: (body.tools ?? []).filter((t: { function?: { name?: string } }) => t.function?.name !== "recall"),
});

describe("skill routing on the wire (pi CLI)", () => {
  it("advertises only what the prompt needs", async () => {
    const agentDir = await agent(classifier.baseUrl);
    const [body] = await run({ extension: true, agentDir, prompts: ["Split report.pdf into single pages"] });
    const system = systemText(body);
    expect(system).toContain("<loaded_skills>");
    expect(system).toContain('<skill name="pdf-tools"');
    expect(system).toContain("qpdf --split-pages");
    expect(system).not.toContain("<available_skills>");
    expect(system).not.toContain("docker-ops");
    expect(system).not.toContain("k8s-deploy");

    // The decision is in the telemetry file (0600), written before Pi exited.
    const file = join(agentDir, "context-guard-telemetry.jsonl");
    const events = (await readFile(file, "utf8"))
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(events.find((e) => e.type === "route")).toMatchObject({
      mode: "routed",
      loaded: [{ name: "pdf-tools", score: 0.93 }],
      scores: { "pdf-tools": 0.93, "docker-ops": 0.04, "k8s-deploy": 0.04 },
    });
    expect((await stat(file)).mode & 0o777).toBe(0o600);

    const [plain] = await run({ extension: false, agentDir, prompts: ["Split report.pdf"] });
    const plainSystem = systemText(plain);
    expect(plainSystem).toContain("<available_skills>");
    expect(plainSystem).toContain("<name>docker-ops</name>");
    expect(plainSystem).toContain("<name>k8s-deploy</name>");
  });

  it("with the classifier down, every request equals what Pi sends without the extension", async () => {
    const prompts = ["Split report.pdf into single pages", "Now build the docker image", "Deploy it to the cluster"];
    const agentDir = await agent(deadUrl);
    const guarded = await run({ extension: true, agentDir, prompts });
    const plain = await run({ extension: false, agentDir, prompts });
    expect(guarded).toHaveLength(3);
    expect(plain).toHaveLength(3);
    for (let i = 0; i < 3; i++) {
      expect(guarded[i].tools.some((t: { function?: { name?: string } }) => t.function?.name === "recall")).toBe(true);
      expect(withoutRecall(guarded[i])).toEqual(plain[i]);
    }
    expect(systemText(guarded[2])).toContain("<name>docker-ops</name>");
  });

  it("a hanging classifier delays a prompt by routingTimeoutMs at most and does not hold Pi at exit", async () => {
    const hanging = await startLoopbackClassifier({ behaviour: "hang" });
    try {
      const agentDir = await makeAgentDir({
        mainBaseUrl: main.baseUrl,
        classifierBaseUrl: hanging.baseUrl,
        guardConfig: { midRun: false, routingTimeoutMs: 1500, timeoutMs: 20_000 },
      });
      await writeSkills(agentDir);
      // The server never answers: the run goes on only because routingTimeoutMs ended the wait.
      const [body] = await run({ extension: true, agentDir, prompts: ["Split report.pdf"] });
      expect(systemText(body)).toContain("<available_skills>");
      expect(hanging.requests.length).toBeGreaterThan(0);
    } finally {
      await hanging.close();
    }
  });
});
