// Issue 44, break 5, with the `pi` CLI in print and JSON mode: Pi exits once the run has settled, so a
// run-end pass left behind the agent would be asked and then dropped with its answers. Print mode waits
// for the pass (up to timeoutMs) unless the settings chose a budget: the run's outputs are judged and
// edited before Pi exits, and `pi -c -p` goes on from a judged session.
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { GuardRecord } from "../../src/core/shared/types.ts";
import { type FakeOpenAI, startFakeOpenAI } from "../kit/fake-openai.ts";
import { dropAllPolicy, grepText } from "../kit/fault-session.ts";
import { type LoopbackClassifier, startLoopbackClassifier } from "../kit/loopback-classifier.ts";
import {
  FAKE_MODEL,
  makeAgentDir,
  REPO_ROOT,
  readSessionLines,
  runPiCli,
  type SessionLine,
} from "../kit/pi-agent-dir.ts";

const EXTENSION = join(REPO_ROOT, "src/main/index.ts");
type Line = SessionLine;

let main: FakeOpenAI;
let classifier: LoopbackClassifier;
let cwd: string;

beforeAll(async () => {
  main = await startFakeOpenAI((req) =>
    req.messages.at(-1)?.role === "user"
      ? { toolCalls: [{ name: "bash", arguments: { command: "cat out.txt" } }] }
      : { text: "out.txt is read." },
  );
  // Slower than the run end's default budget (150 ms): without the wait, every answer comes too late.
  classifier = await startLoopbackClassifier({ policy: dropAllPolicy, latencyMs: 400 });
  cwd = await mkdtemp(join(tmpdir(), "cg-print-mode-"));
  await writeFile(join(cwd, "out.txt"), grepText(24, "p"));
});
afterAll(async () => {
  await main.close();
  await classifier.close();
});

const sessionLines = readSessionLines;

/** `pi` in print mode (or JSON), the run-end wait of the test run taken away. */
function print(agentDir: string, args: string[]) {
  return runPiCli(
    [...args, "--session-dir", join(agentDir, "sessions"), "--model", FAKE_MODEL, "-e", EXTENSION],
    { PI_CODING_AGENT_DIR: agentDir, PI_CONTEXT_GUARD_SETTLE_BUDGET_MS: "" },
    { cwd, timeoutMs: 60_000 },
  );
}

describe("print mode judges the run before Pi exits", () => {
  for (const mode of [["-p"], ["--mode", "json"]]) {
    it(`${mode.join(" ")}: the run end's pass is answered and lands; pi -c -p goes on`, async () => {
      const agentDir = await makeAgentDir({
        mainBaseUrl: main.baseUrl,
        classifierBaseUrl: classifier.baseUrl,
        guardConfig: { telemetry: false, midRun: false },
      });
      const asked = classifier.requests.length;
      const out = await print(agentDir, [...mode, "Read out.txt"]);
      expect(out.code).toBe(0);
      expect(classifier.requests.length).toBeGreaterThan(asked);
      const lines = await sessionLines(agentDir);
      const records = lines.filter((l) => l.customType === "context-guard").map((l) => l.data as GuardRecord);
      expect(records.length).toBe(1);
      const output = lines.find((l) => l.type === "message" && l.message?.role === "toolResult") as Line & {
        id: string;
      };
      const result = records[0]?.results.find((r) => r.entryId === output.id);
      expect(result?.outcome).toBe("removed");
      expect(lines.some((l) => l.type === "context_edit" && l.targetId === output.id)).toBe(true);
      // Nothing is said about waiting: the settings chose no budget.
      expect(out.stderr).not.toContain("context-guard:");

      const again = await print(agentDir, ["-c", "-p", "Read it again"]);
      expect(again.code).toBe(0);
      const after = await sessionLines(agentDir);
      expect(after.filter((l) => l.customType === "context-guard").length).toBe(2);
    });
  }

  it("a budget the settings chose is kept, and print mode says once what it costs", async () => {
    const agentDir = await makeAgentDir({
      mainBaseUrl: main.baseUrl,
      classifierBaseUrl: classifier.baseUrl,
      guardConfig: { telemetry: false, midRun: false, settleBudgetMs: 0 },
    });
    const out = await print(agentDir, ["-p", "Read out.txt"]);
    expect(out.code).toBe(0);
    expect(out.stderr.split("context-guard:").length - 1).toBe(1);
    expect(out.stderr).toMatch(/settleBudgetMs \(0 ms\).*lands only if another prompt follows/s);
  });
});
