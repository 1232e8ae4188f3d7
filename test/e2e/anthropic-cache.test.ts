// Anthropic-format main model through the pi CLI: every request keeps within 4 cache breakpoints, pins
// the run's question, and after a mid-run checkpoint reads from a cache entry this process saw written.
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeOpenAI, startFakeOpenAI } from "../kit/fake-openai.ts";
import { keywordPolicy, type LoopbackClassifier, startLoopbackClassifier } from "../kit/loopback-classifier.ts";
import { FAKE_ANTHROPIC_MODEL, makeAgentDir, REPO_ROOT, runPiCli } from "../kit/pi-agent-dir.ts";

const TURNS = 8;
type Block = { type: string; text?: string; tool_use_id?: string; cache_control?: unknown };
type Body = {
  system?: Block[];
  tools?: Array<{ cache_control?: unknown }>;
  messages: Array<{ role: string; content: string | Block[] }>;
};

/** Log 1 is all failures (kept whole at the checkpoint); the others are mostly passing lines. */
const log = (n: number) =>
  `${Array.from({ length: 300 }, (_, i) => (n === 1 || i === 40 ? `FAIL case${n}_${i} expected 1 to be 2` : `PASS case${n}_${i} (${i} ms)`)).join("\n")}\n`;

let classifier: LoopbackClassifier;
let main: FakeOpenAI;
let bodies: Body[] = [];

beforeAll(async () => {
  classifier = await startLoopbackClassifier({ policy: keywordPolicy(/FAIL/) });
  main = await startFakeOpenAI((req) => {
    const turn = req.messages.filter((m: { role: string }) => m.role === "assistant").length;
    return turn < TURNS
      ? { toolCalls: [{ name: "bash", arguments: { command: `cat log${turn + 1}.txt` } }] }
      : { text: "All failures are in case1." };
  });
  const cwd = await mkdtemp(join(tmpdir(), "cg-anthropic-"));
  for (let i = 1; i <= TURNS; i++) await writeFile(join(cwd, `log${i}.txt`), log(i));
  const agentDir = await makeAgentDir({
    mainBaseUrl: main.baseUrl,
    anthropicBaseUrl: main.anthropicBaseUrl,
    classifierBaseUrl: classifier.baseUrl,
    // Awaited checkpoints: the breakpoints after an edit are what is tested, not when a background one lands.
    guardConfig: { midRunBatchChars: 15_000, midRunMinAgeTurns: 2, midRunBreakEven: false, midRunWait: true },
  });
  const result = await runPiCli(
    [
      "-p",
      "-ne",
      "--no-session",
      "--model",
      FAKE_ANTHROPIC_MODEL,
      "-e",
      join(REPO_ROOT, "src/main/index.ts"),
      "Fix the failing tests",
    ],
    { PI_CODING_AGENT_DIR: agentDir },
    { cwd, timeoutMs: 60_000 },
  );
  expect(result.stderr).not.toMatch(/Extension error|the pass failed/);
  expect(result.code).toBe(0);
  bodies = main.log.filter((r) => r.format === "anthropic").map((r) => r.body as Body);
});
afterAll(async () => {
  await classifier.close();
  await main.close();
});

const marks = (b: Body) => {
  const out: string[] = [];
  for (const s of b.system ?? []) if (s.cache_control) out.push("system");
  for (const t of b.tools ?? []) if (t.cache_control) out.push("tool");
  b.messages.forEach((m, i) => {
    if (Array.isArray(m.content))
      for (const blk of m.content) if (blk.cache_control) out.push(`${i}:${blk.tool_use_id ?? blk.type}`);
  });
  return out;
};

describe("Anthropic cache breakpoints", () => {
  it("keeps every request within 4 marks, without Pi's redundant tools mark; the system mark only when spare", () => {
    expect(bodies.length).toBe(TURNS + 1);
    for (const b of bodies) {
      const m = marks(b);
      expect(m.length).toBeLessThanOrEqual(4);
      expect(m).not.toContain("tool");
      const onMessages = m.filter((x) => x !== "system").length;
      expect(m.includes("system")).toBe(onMessages < 4);
    }
  });

  it("pins the question on every request of the run", () => {
    for (const b of bodies) expect(marks(b)).toContain("0:text");
  });

  it("after a checkpoint, reads from an entry written earlier and anchors at the first edited output", () => {
    const edited = bodies.findIndex((b) =>
      b.messages.some(
        (m) =>
          Array.isArray(m.content) &&
          m.content.some((blk) => blk.type === "tool_result" && JSON.stringify(blk).includes("[context-guard]")),
      ),
    );
    expect(edited).toBeGreaterThan(0);
    const m = marks(bodies[edited] as Body);
    // question, read point at log 1's result (kept, written by an earlier request), anchor at the first edit, end.
    expect(m.length).toBe(4);
    const readPoint = m[1] as string;
    const callOfLog1 = (bodies[edited] as Body).messages
      .flatMap((msg) => (Array.isArray(msg.content) ? msg.content : []))
      .find((blk) => blk.type === "tool_result" && JSON.stringify(blk).includes("FAIL case1_0"))?.tool_use_id;
    expect(readPoint).toContain(callOfLog1 as string);
    // Requests after that one carry no read point: the edit was paid for, and the system mark is back.
    expect(marks(bodies[edited + 1] as Body)).toEqual(["system", expect.stringMatching(/^0:/), expect.any(String)]);
  });
});
