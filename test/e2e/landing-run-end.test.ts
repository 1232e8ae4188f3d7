// Two short runs back to back, as a gateway sends them: the first run's pass is handed over to the second
// prompt and is still asking the classifier when the second run ends. That run end lands it and runs its
// own pass on the second run's outputs, so they get their record at their own run end, not one run later;
// nothing is asked twice and no entry is edited twice.
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
/**
 * The first run's answers are held until the second run's last model call has been made (a second run
 * that waited for them would never get there); the second run's are answered at once.
 */
let releaseFirst = () => {};
const firstHeld = new Promise<void>((r) => (releaseFirst = r));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let classifier: LoopbackClassifier;
let s: TestSession;
const callTimes: number[] = [];
/** When the first run's requests reached the classifier. */
const slowAsked: number[] = [];

const mentions = (body: unknown, n: number) => JSON.stringify(body).includes(`broken_${n}_50`);
const requestsAbout = (n: number) => classifier.requests.filter((b) => mentions(b, n));

type Entry = {
  id: string;
  type: string;
  customType?: string;
  targetId?: string;
  data?: GuardRecord;
  message?: unknown;
};
const branch = () => s.session.sessionManager.getBranch() as unknown as Entry[];
const isRecord = (e: Entry) => e.type === "custom" && e.customType === "context-guard";

/** The id of the tool result holding log `n`. */
function logEntry(n: number): string | undefined {
  return branch().find((e) => {
    const m = e.message as { role?: string; content?: Array<{ text?: string }> } | undefined;
    return m?.role === "toolResult" && (m.content ?? []).some((b) => b.text?.includes(`broken_${n}_50`));
  })?.id;
}

/** The index in the branch of the record that judged `id` with an outcome other than waiting. */
function judgedAt(id: string | undefined): number {
  return branch().findIndex(
    (e) =>
      isRecord(e) && (e.data?.results ?? []).some((r) => r.entryId === id && !r.reason.split(",").includes("aborted")),
  );
}

beforeAll(async () => {
  const keyword = keywordPolicy(/FAIL/);
  const policy: AnswerPolicy = (body) => {
    const slow = mentions(body, 0) || mentions(body, 1);
    if (slow) slowAsked.push(performance.now());
    classifier.set({ hold: slow ? firstHeld : undefined });
    return keyword(body);
  };
  classifier = await startLoopbackClassifier({ policy });
  const agentDir = await mkdtemp(join(tmpdir(), "cg-landing-agent-"));
  const configPath = join(agentDir, "guard.json");
  // A settle budget long enough for the first run's rest to end within it at the second run end, whatever
  // the machine's load.
  await writeFile(
    configPath,
    JSON.stringify({ midRun: false, settleBudgetMs: 600_000, timeoutMs: 600_000, exchangeBreakEven: false }),
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
    strict: true,
    responses: [
      timed(bash("cat log0.txt")),
      timed(bash("cat log1.txt")),
      timed(() => "case0 and case1 fail."),
      timed(bash("cat log2.txt")),
      timed(bash("cat log3.txt")),
      timed(() => {
        releaseFirst();
        return "case2 and case3 fail.";
      }),
    ],
  });
  for (let i = 0; i < 4; i++) await writeFile(join(s.cwd, `log${i}.txt`), testLog(i, 160));
  const run = s.session.prompt("Find the failing tests");
  // The first run-end pass asks; the next prompt comes at once and hands it over.
  while (slowAsked.length === 0) await sleep(10);
  await s.session.prompt("And the other two?", { streamingBehavior: "followUp" });
  await run;
}, 120_000);
afterAll(async () => {
  await s?.dispose();
  await classifier?.close();
  delete process.env.PI_CONTEXT_GUARD_CONFIG;
});

describe("a run end that lands the previous run's rest", () => {
  it("ran its second run before the first run's answers came", () => {
    expect(callTimes.length).toBe(6);
    const answered = classifier.answeredAt.find((t) => t > (slowAsked[0] as number)) ?? Number.POSITIVE_INFINITY;
    expect(callTimes[5] as number).toBeLessThan(answered);
  });

  it("records the second run's outputs at the second run end, after the landed rest", () => {
    const first = [0, 1].map((n) => judgedAt(logEntry(n)));
    const second = [2, 3].map((n) => judgedAt(logEntry(n)));
    for (const at of [...first, ...second]) expect(at).toBeGreaterThan(0);
    const landed = Math.max(...first);
    const own = Math.max(...second);
    expect(own).toBeGreaterThan(landed);
    // One boundary's list: only the second pass's edits lie between the two records.
    for (const e of branch().slice(landed + 1, own)) expect(e.type).toBe("context_edit");
    expect(
      branch()
        .slice(own + 1)
        .filter((e) => e.type === "message"),
    ).toEqual([]);
  });

  it("asks about each output once and edits no entry twice", () => {
    for (const n of [0, 1, 2, 3]) expect(requestsAbout(n).length, `log${n}`).toBe(1);
    const targets = branch()
      .filter((e) => e.type === "context_edit")
      .map((e) => e.targetId);
    expect(new Set(targets).size).toBe(targets.length);
    for (const n of [2, 3]) expect(targets).toContain(logEntry(n));
  });

  it("sends no request a strict provider rejects", () => {
    expect(s.rejected).toEqual([]);
  });
});
