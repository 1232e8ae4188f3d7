// A prompt sent while the run-end pass waits for a slow classifier is not held: the pass hands over
// (what was answered lands, the rest is recorded `aborted`), the prompt starts at once, and the outputs
// left unanswered are asked again at the next run end.
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { JsonObject } from "@earendil-works/pi-ai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { GuardRecord } from "../../src/core/shared/types.ts";
import { keywordPolicy, type LoopbackClassifier, startLoopbackClassifier } from "../kit/loopback-classifier.ts";
import { createTestSession, type FauxReply, type FauxResponse, type TestSession } from "../kit/sdk-session.ts";

const EXTENSION = resolve(import.meta.dirname, "../../src/main/index.ts");
const CLASSIFIER_MS = 4000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function testLog(n: number): string {
  const lines = Array.from({ length: 160 }, (_, i) =>
    i === 50 ? `FAIL src/case${n}_${i}.test.ts > broken_${n}_${i}` : `PASS src/case${n}_${i}.test.ts (${i} ms)`,
  );
  return `${lines.join("\n")}\n`;
}

let classifier: LoopbackClassifier;
let s: TestSession;
/** When each model call started (performance.now()). */
const callTimes: number[] = [];
let sentAt = 0;
let requestsAtHandOver = 0;

function records(): GuardRecord[] {
  return s.session.sessionManager
    .getBranch()
    .filter((e) => e.type === "custom" && e.customType === "context-guard")
    .map((e) => (e as { data: GuardRecord }).data);
}

beforeAll(async () => {
  classifier = await startLoopbackClassifier({ policy: keywordPolicy(/FAIL/), latencyMs: CLASSIFIER_MS });
  const agentDir = await mkdtemp(join(tmpdir(), "cg-handover-agent-"));
  const configPath = join(agentDir, "guard.json");
  await writeFile(
    configPath,
    JSON.stringify({ midRun: false, timeoutMs: 30_000, concurrency: 1, exchangeBreakEven: false }),
  );
  process.env.PI_CONTEXT_GUARD_CONFIG = configPath;
  const timed =
    (reply: () => FauxReply): FauxResponse =>
    () => {
      callTimes.push(performance.now());
      return reply();
    };
  const bash = (command: string) => (): FauxReply => ({
    toolCalls: [{ name: "bash", arguments: { command } as JsonObject }],
  });
  s = await createTestSession({
    agentDir,
    extensionPaths: [EXTENSION],
    classifierBaseUrl: classifier.baseUrl,
    responses: [
      timed(bash("cat log0.txt")),
      timed(bash("cat log1.txt")),
      timed(bash("cat log2.txt")),
      timed(() => "The failures are in case0, case1 and case2."),
      timed(() => "Summary: three failing cases."),
    ],
  });
  for (let i = 0; i < 3; i++) await writeFile(join(s.cwd, `log${i}.txt`), testLog(i));
  const run = s.session.prompt("Find the failing tests");
  // The run-end pass is asking the (slow) classifier.
  for (let i = 0; i < 2000 && classifier.requests.length === 0; i++) await sleep(10);
  await sleep(100);
  requestsAtHandOver = classifier.requests.length;
  sentAt = performance.now();
  await s.session.prompt("Now summarize", { streamingBehavior: "followUp" });
  classifier.set({ latencyMs: 0 });
  await run;
  // The follow-up's own run end may still be settling.
  for (let i = 0; i < 500 && records().length < 2; i++) await sleep(10);
}, 120_000);
afterAll(async () => {
  await s?.dispose();
  await classifier.close();
});

describe("a prompt during the run-end pass", () => {
  it("starts without waiting for the classifier", () => {
    expect(requestsAtHandOver).toBeGreaterThan(0);
    const started = callTimes[4] as number;
    expect(started).toBeDefined();
    // Far below the classifier's answer time: the prompt did not wait for it.
    expect(started - sentAt).toBeLessThan(CLASSIFIER_MS / 4);
  });

  it("records the unanswered outputs as aborted, and asks them again at the next run end", () => {
    const [first, second] = records();
    expect(first?.phase).toBe("run-end");
    const aborted = (first?.results ?? []).filter((r) => r.reason.split(",").includes("aborted"));
    expect(aborted.length).toBeGreaterThan(0);
    for (const r of aborted) expect(r.outcome).toBe("kept");
    expect(second?.phase).toBe("run-end");
    const again = new Set(second?.results.map((r) => r.entryId));
    for (const r of aborted) expect(again.has(r.entryId), r.entryId).toBe(true);
  });
});
