// A prompt sent while the run-end pass waits for a slow classifier is not held: the pass hands over, what
// was answered lands at once, the prompt starts, and the rest of the pass goes on in the background (the
// request in flight is not cancelled) and lands at a later boundary of the prompt's run. Every request
// is sent once.
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { JsonObject } from "@earendil-works/pi-ai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { GuardRecord } from "../../src/core/shared/types.ts";
import {
  type AnswerPolicy,
  keywordPolicy,
  type LoopbackClassifier,
  startLoopbackClassifier,
} from "../kit/loopback-classifier.ts";
import { createTestSession, type FauxReply, type FauxResponse, type TestSession } from "../kit/sdk-session.ts";
import { testLog } from "../kit/test-log.ts";

const EXTENSION = resolve(import.meta.dirname, "../../src/main/index.ts");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let classifier: LoopbackClassifier;
let s: TestSession;
/** When each model call started (performance.now()). */
const callTimes: number[] = [];
let sentAt = 0;
let requestsAtHandOver = 0;
/** Lets the second request's answer go: the follow-up's first model call does, once it has started. */
let releaseSecond = () => {};
const second = new Promise<void>((r) => (releaseSecond = r));

function records(): GuardRecord[] {
  return s.session.sessionManager
    .getBranch()
    .filter((e) => e.type === "custom" && e.customType === "context-guard")
    .map((e) => (e as { data: GuardRecord }).data);
}

/** The text a model request showed of log `n`'s output (undefined when it shows none). */
function logShown(call: number, n: number): string | undefined {
  for (const m of s.contexts[call] ?? []) {
    const msg = m as { role?: string; content?: unknown };
    if (msg.role !== "toolResult" || !Array.isArray(msg.content)) continue;
    const text = (msg.content as Array<{ type?: string; text?: string }>).map((b) => b.text ?? "").join("");
    if (text.includes(`broken_${n}_50`)) return text;
  }
  return undefined;
}
const distilledLog = (call: number, n: number) => {
  const text = logShown(call, n);
  return text !== undefined && !text.includes(`PASS src/case${n}_120.test.ts`);
};

/** Requests about log `n` (its failing line is in the state). */
const requestsAbout = (n: number) => classifier.requests.filter((b) => JSON.stringify(b).includes(`broken_${n}_50`));

beforeAll(async () => {
  // The first request is answered at once, the second only once the follow-up has started (it is in flight
  // at the hand-over: a prompt that waited for it would never start), every later one at once.
  const keyword = keywordPolicy(/FAIL/);
  let seen = 0;
  const policy: AnswerPolicy = (body) => {
    classifier.set({ hold: seen++ === 1 ? second : undefined });
    return keyword(body);
  };
  classifier = await startLoopbackClassifier({ policy });
  const agentDir = await mkdtemp(join(tmpdir(), "cg-handover-agent-"));
  const configPath = join(agentDir, "guard.json");
  await writeFile(
    configPath,
    JSON.stringify({ midRun: false, timeoutMs: 30_000, concurrency: 1, exchangeBreakEven: false }),
  );
  process.env.PI_CONTEXT_GUARD_CONFIG = configPath;
  const timed =
    (reply: () => FauxReply | Promise<FauxReply>): FauxResponse =>
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
      // The follow-up's run: the rest of the run-end pass is still being asked here.
      timed(() => {
        releaseSecond();
        return bash("echo one")();
      }),
      // Until the classifier has answered the rest: the boundary after this turn lands it.
      timed(async () => {
        while (classifier.answered < 3) await sleep(10);
        await sleep(500);
        return bash("echo two")();
      }),
      timed(bash("echo three")),
      timed(() => "Summary: three failing cases."),
    ],
  });
  for (let i = 0; i < 3; i++) await writeFile(join(s.cwd, `log${i}.txt`), testLog(i, 160));
  const run = s.session.prompt("Find the failing tests");
  // The run-end pass is waiting for the second (slow) answer.
  while (classifier.requests.length < 2) await sleep(10);
  await sleep(100);
  requestsAtHandOver = classifier.requests.length;
  sentAt = performance.now();
  await s.session.prompt("Now summarize", { streamingBehavior: "followUp" });
  await run;
  while (callTimes.length < 8) await sleep(10);
}, 120_000);
afterAll(async () => {
  await s?.dispose();
  await classifier.close();
});

describe("a prompt during the run-end pass", () => {
  it("starts without waiting for the classifier", () => {
    expect(requestsAtHandOver).toBe(2);
    const started = callTimes[4] as number;
    expect(started).toBeDefined();
    // Before the request in flight had its answer: the prompt did not wait for it.
    const answered = classifier.answeredAt.find((t) => t > sentAt) ?? Number.POSITIVE_INFINITY;
    expect(started).toBeLessThan(answered);
  });

  it("lands what was answered at once, and records the rest as not yet answered", () => {
    const [first] = records();
    expect(first?.phase).toBe("run-end");
    // The follow-up's first request already shows the answered output's edit, and the others whole.
    expect(distilledLog(4, 0)).toBe(true);
    expect(distilledLog(4, 1)).toBe(false);
    expect(distilledLog(4, 2)).toBe(false);
    const waiting = (first?.results ?? []).filter((r) => r.reason.split(",").includes("aborted"));
    expect(waiting.length).toBe(2);
    for (const r of waiting) expect(r.outcome).toBe("kept");
  });

  it("lands the rest at a later boundary, from the answers of the requests already sent", () => {
    const [first, rest] = records();
    expect(rest?.phase).toBe("run-end");
    const waiting = (first?.results ?? []).filter((r) => r.reason.split(",").includes("aborted"));
    const decided = new Map(rest?.results.map((r) => [r.entryId, r]));
    for (const r of waiting) expect(decided.get(r.entryId)?.outcome, r.entryId).toBe("distilled");
    // Its edits reach a later request of the follow-up's run.
    expect(distilledLog(7, 1)).toBe(true);
    expect(distilledLog(7, 2)).toBe(true);
  });

  it("asks about each output once", () => {
    for (const n of [0, 1, 2]) expect(requestsAbout(n).length, `log${n}`).toBe(1);
  });
});
