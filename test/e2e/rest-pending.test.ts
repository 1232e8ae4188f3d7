// The run end's handed-over rest under Esc and a second prompt, in the real Pi in RPC mode, against a
// main model that rejects what OpenAI rejects. The run ends within its budget while the classifier (it
// holds every answer until the fourth run has settled) is still asked; then the user aborts (RPC `abort`,
// Esc) with the agent idle, types a second prompt at once, aborts that run in the middle of a model call,
// and types a third.
// No prompt may wait for the classifier or be lost, no request may carry a tool result apart from its
// call, and the rest either lands (on the branch it was judged on) or is dropped and asked again later.
// The order of events is the assertion, not a latency: answers are held, not slow, and the last run's
// model works on until what is left has landed.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Asked, askedAbout as askedIn, startFailClassifier } from "../kit/fail-classifier.ts";
import {
  type FakeOpenAI,
  type FakeReply,
  lastPrompt,
  startFakeOpenAI,
  type WireJson,
  wireText,
} from "../kit/fake-openai.ts";
import type { LoopbackClassifier } from "../kit/loopback-classifier.ts";
import { type RpcPi, sessionFileOf, startGuardRpcPi } from "../kit/rpc-pi.ts";
import { type FileEntry as Entry, guardNames, openCopy } from "../kit/session-copy.ts";
import { testLogDir } from "../kit/test-log.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Each prompt's tool turns; `hang` is a model call that answers only once aborted. */
const RUNS: Record<string, Array<string | "hang">> = {
  first: ["cat log0.txt", "cat log1.txt", "cat log2.txt"],
  second: ["cat log3.txt", "hang"],
  third: ["cat log4.txt", "cat log5.txt", "cat log6.txt"],
  fourth: ["echo four"],
  fifth: ["echo five"],
};
/** The outputs of the runs whose rest an Esc stopped (the second run's one output is too small to judge). */
const JUDGED = [0, 1, 2, 4, 5, 6];

let classifier: LoopbackClassifier;
let main: FakeOpenAI;
let rpc: RpcPi;
let sessionFile = "";
const asked: Asked[] = [];
const calls: Array<{ prompt: string; at: number; messages: WireJson[] }> = [];
const sentAt = new Map<string, number>();
let hanging: (() => void) | undefined;
let settledFirst = 0;
const askedAbout = (n: number) => askedIn(asked, n);

async function reply(messages: WireJson[]): Promise<FakeReply> {
  const { prompt, done } = lastPrompt(messages);
  calls.push({ prompt, at: performance.now(), messages });
  const next = RUNS[prompt]?.[done];
  if (next === undefined) {
    // The last run ends once every stopped output has landed: it shows distilled in the request.
    if (prompt !== "fifth" || JUDGED.every((n) => distilled(messages, n))) return { text: `done with ${prompt}` };
    await sleep(20);
    return { toolCalls: [{ name: "bash", arguments: { command: "echo again" } }] };
  }
  if (next === "hang") {
    await new Promise<void>((resolve) => {
      hanging = resolve;
      setTimeout(resolve, 30_000);
    });
    return { text: "too late" };
  }
  return { toolCalls: [{ name: "bash", arguments: { command: next } }] };
}

function send(prompt: string): void {
  sentAt.set(prompt, performance.now());
  rpc.send({ type: "prompt", message: prompt });
}

/** Waits until the classifier has been asked about each of these logs. */
async function askedAbout3(...logs: number[]): Promise<void> {
  while (!logs.every((n) => askedAbout(n) > 0)) await sleep(10);
}

/** Whether a request shows log `n`'s output distilled (its failing line without the passing ones). */
function distilled(messages: WireJson[], n: number): boolean {
  const shown = messages
    .filter((m) => m.role === "tool")
    .map(wireText)
    .find((t) => t.includes(`broken_${n}_50`));
  return shown !== undefined && !shown.includes(`PASS src/case${n}_120.test.ts`);
}

/** When the classifier wrote its first answer at or after `t` (never: Infinity). */
const firstAnswerAfter = (t: number) => classifier.answeredAt.find((a) => a >= t) ?? Number.POSITIVE_INFINITY;
let release = () => {};

async function settled(from: number): Promise<number> {
  return (await rpc.waitFor((r) => r.type === "agent_settled", { from, timeoutMs: 60_000 })).at;
}

beforeAll(async () => {
  classifier = await startFailClassifier(0, asked);
  classifier.set({ hold: new Promise<void>((r) => (release = r)) });
  main = await startFakeOpenAI((req) => reply(req.messages), { strict: true });
  const cwd = await testLogDir("cg-rest-pending-", 7);
  rpc = await startGuardRpcPi({
    cwd,
    mainBaseUrl: main.baseUrl,
    classifierBaseUrl: classifier.baseUrl,
    guardConfig: {
      settleBudgetMs: 150,
      midRun: false,
      timeoutMs: 600_000,
      exchangeBreakEven: false,
      telemetry: false,
    },
  });
  let from = rpc.records.length;
  send("first");
  settledFirst = await settled(from);
  await askedAbout3(0, 1, 2);
  // A prompt at once, while the rest is asked, and Esc in the middle of its run's model call.
  from = rpc.records.length;
  send("second");
  while (!hanging) await sleep(10);
  rpc.send({ type: "abort", id: "esc-run" });
  await rpc.waitFor((r) => r.id === "esc-run");
  hanging?.();
  await settled(from);
  from = rpc.records.length;
  send("third");
  await settled(from);
  await askedAbout3(4, 5, 6);
  // Esc with the agent idle while the third run's rest is asked.
  rpc.send({ type: "abort", id: "esc-idle" });
  await rpc.waitFor((r) => r.id === "esc-idle");
  from = rpc.records.length;
  send("fourth");
  await settled(from);
  // The classifier answers from now on; a last run gives what is left boundaries to land at.
  classifier.set({ hold: undefined });
  release();
  from = rpc.records.length;
  send("fifth");
  await settled(from);
  sessionFile = await sessionFileOf(rpc);
}, 120_000);
afterAll(async () => {
  await rpc?.close();
  await main?.close();
  await classifier?.close();
});

const firstCall = (prompt: string) => calls.find((c) => c.prompt === prompt);

describe("the hand-over's rest under Esc and a second prompt (RPC)", () => {
  it("the run ended with the rest still asked", () => {
    const passAsked = asked.find((a) => a.at >= (firstCall("first")?.at ?? 0))?.at as number;
    expect(passAsked).toBeDefined();
    expect(settledFirst).toBeLessThan(firstAnswerAfter(passAsked));
  });

  it("a prompt typed while the rest is asked starts before the classifier could answer it", () => {
    const passAsked = asked.find((a) => a.at >= (firstCall("first")?.at ?? 0))?.at as number;
    const started = firstCall("second")?.at as number;
    expect(started).toBeGreaterThan(sentAt.get("second") as number);
    expect(started).toBeLessThan(firstAnswerAfter(passAsked));
  });

  it("loses no prompt: each reaches the model, and the last request shows every one", () => {
    for (const p of Object.keys(RUNS)) expect(firstCall(p), p).toBeDefined();
    const last = calls.at(-1)?.messages ?? [];
    const users = last.filter((m) => m.role === "user").map(wireText);
    expect(users).toEqual(Object.keys(RUNS));
  });

  it("sends no request a strict provider rejects", () => {
    expect(main.rejected).toEqual([]);
    const errors = rpc.records.filter(
      (r) => r.type === "extension_error" || (r.method === "notify" && r.notifyType === "error"),
    );
    expect(errors).toEqual([]);
  });

  it("asks again only what an Esc stopped, and lands it", () => {
    // The first run's rest is stopped by both Escs, the third's by the second: once more each time.
    for (const n of JUDGED) expect(askedAbout(n), `log${n}`).toBeLessThanOrEqual(n < 3 ? 3 : 2);
    // The last request shows every one of those outputs distilled.
    const last = calls.at(-1)?.messages ?? [];
    for (const n of JUDGED) {
      const shown = last
        .filter((m) => m.role === "tool")
        .map(wireText)
        .find((t) => t.includes(`broken_${n}_50`));
      expect([n, shown !== undefined && !shown.includes(`PASS src/case${n}_120.test.ts`)]).toEqual([n, true]);
    }
  });

  it("leaves a session file Pi loads, whose guard entries name only entries on their branch", async () => {
    const manager = await openCopy(sessionFile);
    const entries = manager.getEntries() as unknown as Entry[];
    const records = entries.filter((e) => e.customType === "context-guard");
    expect(records.length).toBeGreaterThan(0);
    for (const n of guardNames(entries)) expect([n.entry, n.named, n.onBranch]).toEqual([n.entry, n.named, true]);
  });
});
