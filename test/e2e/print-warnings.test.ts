// Print mode has no footer and drops notifications: before, a broken setting, an unknown classifier or a
// missing key went unsaid there. Each is now said once, on stderr, naming the key or the model.
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeOpenAI, startFakeOpenAI } from "../kit/fake-openai.ts";
import { FAKE_MODEL, makeAgentDir, REPO_ROOT, runPiCli } from "../kit/pi-agent-dir.ts";

const EXTENSION = join(REPO_ROOT, "src/main/index.ts");
let main: FakeOpenAI;
let cwd: string;

beforeAll(async () => {
  main = await startFakeOpenAI(() => ({ text: "hello" }));
  cwd = await mkdtemp(join(tmpdir(), "cg-print-warnings-"));
});
afterAll(async () => {
  await main.close();
});

const count = (text: string, needle: string) => text.split(needle).length - 1;

async function printRun(guardConfig: Record<string, unknown>, extraProviders?: Record<string, unknown>) {
  const agentDir = await makeAgentDir({
    mainBaseUrl: main.baseUrl,
    classifierBaseUrl: "http://127.0.0.1:9/api/v1",
    guardConfig,
    ...(extraProviders ? { extraProviders } : {}),
  });
  return runPiCli(
    ["-p", "-ne", "--no-session", "--model", FAKE_MODEL, "-e", EXTENSION, "hi", "again"],
    { PI_CODING_AGENT_DIR: agentDir },
    { cwd, timeoutMs: 60_000 },
  );
}

describe("print mode says what the footer would", () => {
  it("an invalid setting: once, with the key, and the run goes on with the default", async () => {
    const out = await printRun({ timeoutMs: "soon" });
    expect(out.code).toBe(0);
    expect(out.stdout).toContain("hello");
    expect(count(out.stderr, "context-guard: ")).toBe(1);
    expect(out.stderr).toMatch(/context-guard: .*timeoutMs/);
  });

  it("a classifier not in the catalog: once, naming it", async () => {
    const out = await printRun({ model: "openrouter/no-such-model" });
    expect(out.code).toBe(0);
    expect(count(out.stderr, "openrouter/no-such-model")).toBe(1);
    expect(out.stderr).toMatch(/not in Pi's classifier catalog/);
  });

  it("a missing credential: once, naming the provider", async () => {
    // The classifier's provider without a key (and the environment's keys are not passed to the test Pi).
    const out = await printRun({}, { openrouter: { baseUrl: "http://127.0.0.1:9/api/v1" } });
    expect(out.code).toBe(0);
    expect(count(out.stderr, "cannot be used")).toBe(1);
    expect(out.stderr).toMatch(/no credential for openrouter/);
  });
});
