// Nobody waits for the classifier, in the real Pi in RPC mode: the run end returns within its budget with
// the classifier still answering, and a prompt typed at any moment (right after a run end, or while the
// run end is under way) starts before the classifier could have answered. The pass goes on in the
// background and lands at a boundary of the next run; every output is asked about once.
//
// The classifier holds its answers until the next prompt's first model request has arrived, so that request
// cannot have waited for an answer (a Pi that waited would never get one): the assertions are that order,
// read from when each answer was written, not a wall-clock bound. A `wait` turn waits until the previous
// run's outputs were asked about and answered; a run's last reply comes once the previous run's pass shows
// in the request (the model works on until it has landed).
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Asked, askedAbout, startFailClassifier } from "../kit/fail-classifier.ts";
import {
  type FakeOpenAI,
  type FakeReply,
  lastPrompt,
  startFakeOpenAI,
  type WireJson,
  wireText,
} from "../kit/fake-openai.ts";
import type { LoopbackClassifier } from "../kit/loopback-classifier.ts";
import { makeAgentDir, REPO_ROOT } from "../kit/pi-agent-dir.ts";
import { type RpcPi, startRpcPi } from "../kit/rpc-pi.ts";
import { testLogDir } from "../kit/test-log.ts";

const EXTENSION = join(REPO_ROOT, "src/main/index.ts");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Each run's tool turns (commands), by its prompt; `wait` turns are answered once the classifier has. */
const RUNS: Record<string, Array<string | "wait">> = {
  first: ["cat log0.txt", "cat log1.txt", "cat log2.txt"],
  second: ["cat log3.txt", "wait", "cat log4.txt", "echo two"],
  third: ["echo one", "wait", "echo two", "echo three"],
};

let classifier: LoopbackClassifier;
let main: FakeOpenAI;
let rpc: RpcPi;
/** When each classifier request arrived (performance.now()). */
const asked: Asked[] = [];
/** Per model request: its prompt, when it arrived, and what it showed. */
const calls: Array<{ prompt: string; at: number; messages: WireJson[] }> = [];
/** When each prompt was sent. */
const sentAt = new Map<string, number>();
let settledFirst = 0;

/** The classifier's first request at or after `t`. */
const firstAskedAfter = (t: number) => asked.find((a) => a.at >= t)?.at;
/** When the classifier wrote its first answer at or after `t` (never: Infinity). */
const firstAnswerAfter = (t: number) => classifier.answeredAt.find((a) => a >= t) ?? Number.POSITIVE_INFINITY;

let release = () => {};
/** Answers to requests from now on wait until `release()`. */
function holdAnswers(): void {
  classifier.set({ hold: new Promise<void>((r) => (release = r)) });
}
/** The logs of the previous run, whose pass a run waits for and must see landed before its last reply. */
const PREVIOUS: Record<string, number[]> = { second: [0, 1, 2], third: [3, 4] };

function send(prompt: string, streamingBehavior?: "followUp"): void {
  sentAt.set(prompt, performance.now());
  rpc.send({ type: "prompt", message: prompt, ...(streamingBehavior ? { streamingBehavior } : {}) });
}

async function reply(messages: WireJson[]): Promise<FakeReply> {
  const { prompt, done } = lastPrompt(messages);
  calls.push({ prompt, at: performance.now(), messages });
  const previous = PREVIOUS[prompt] ?? [];
  // The previous run's pass may answer now that this prompt has started.
  if (done === 0 && previous.length > 0) release();
  const turns = RUNS[prompt] ?? [];
  const next = turns[done];
  if (next === undefined) {
    if (previous.every((n) => distilled(messages, n))) return { text: `done with ${prompt}` };
    await sleep(20);
    return { toolCalls: [{ name: "bash", arguments: { command: "echo again" } }] };
  }
  if (next === "wait") {
    // Until the previous run's outputs were asked about and every request so far answered; this run's own
    // pass is then held again, until the next prompt starts.
    while (!previous.every((n) => askedAbout(asked, n) > 0) || classifier.answered < asked.length) await sleep(10);
    holdAnswers();
    return { toolCalls: [{ name: "bash", arguments: { command: "echo waited" } }] };
  }
  return { toolCalls: [{ name: "bash", arguments: { command: next } }] };
}

beforeAll(async () => {
  classifier = await startFailClassifier(0, asked);
  holdAnswers();
  main = await startFakeOpenAI((req) => reply(req.messages));
  const cwd = await testLogDir("cg-any-moment-", 5);
  const agentDir = await makeAgentDir({
    mainBaseUrl: main.baseUrl,
    classifierBaseUrl: classifier.baseUrl,
    guardConfig: { settleBudgetMs: 200, midRun: false, timeoutMs: 600_000, exchangeBreakEven: false, telemetry: false },
  });
  rpc = startRpcPi({ agentDir, cwd, extensions: [EXTENSION], env: { PI_CONTEXT_GUARD_CONFIG: "" } });
  await rpc.waitFor((r) => r.method === "setStatus");
  send("first");
  settledFirst = (await rpc.waitFor((r) => r.type === "agent_settled")).at;
  // A prompt typed as soon as the run has ended, while its pass is being asked.
  const from = rpc.records.length;
  send("second");
  // The third prompt is typed when the second run has ended and its run-end pass begins.
  await rpc.waitFor((r) => r.type === "agent_end", { from, timeoutMs: 60_000 });
  send("third", "followUp");
  while (!calls.some((c) => c.prompt === "third" && c.messages.at(-1)?.role === "tool")) await sleep(10);
  await rpc.waitFor((r) => r.type === "agent_settled" && r.at > (calls.at(-1)?.at ?? 0), { timeoutMs: 60_000 });
}, 120_000);
afterAll(async () => {
  await rpc?.close();
  await main?.close();
  await classifier?.close();
});

/** The first model request of a prompt's run. */
const firstCall = (prompt: string) => calls.find((c) => c.prompt === prompt);

/** Whether a request shows log `n`'s output distilled (its failing line without the passing ones). */
function distilled(messages: WireJson[], n: number): boolean {
  const shown = messages.filter((m) => m.role === "tool").map(wireText);
  const text = shown.find((t) => t.includes(`broken_${n}_50`));
  return text !== undefined && !text.includes(`PASS src/case${n}_120.test.ts`);
}

describe("nobody waits for the classifier (RPC)", () => {
  it("ends a run before the classifier could answer its run-end pass", () => {
    const passAsked = firstAskedAfter(firstCall("first")?.at ?? 0);
    // The pass was asked, and the run had ended before its first answer could come back.
    expect(passAsked).toBeDefined();
    expect(settledFirst).toBeLessThan(firstAnswerAfter(passAsked as number));
  });

  it("starts a prompt typed right after the run end before the classifier answers", () => {
    const passAsked = firstAskedAfter(firstCall("first")?.at ?? 0) as number;
    const started = firstCall("second")?.at as number;
    expect(started).toBeGreaterThan(sentAt.get("second") as number);
    expect(started).toBeLessThan(firstAnswerAfter(passAsked));
  });

  it("starts a prompt typed during a run end before the classifier answers that run's pass", () => {
    const finalOfSecond = calls.filter((c) => c.prompt === "second").at(-1)?.at as number;
    const passAsked = firstAskedAfter(finalOfSecond);
    const started = firstCall("third")?.at as number;
    expect(started).toBeGreaterThan(sentAt.get("third") as number);
    // If the second run's pass asked before the third prompt started, it had not answered yet.
    if (passAsked !== undefined && passAsked < started) expect(started).toBeLessThan(firstAnswerAfter(passAsked));
  });

  it("lands each run's pass at a boundary of the next run, asking about each output once", () => {
    const second = calls.filter((c) => c.prompt === "second");
    const third = calls.filter((c) => c.prompt === "third");
    // The first run's outputs are distilled before the second run ends (from its first request on if the
    // pass had ended by then: the context hook carries its drafts until they land).
    for (const n of [0, 1, 2]) expect(distilled(second.at(-1)?.messages ?? [], n), `log${n}`).toBe(true);
    // The second run's outputs, in the third run.
    for (const n of [3, 4]) expect(distilled(third.at(-1)?.messages ?? [], n), `log${n}`).toBe(true);
    for (const n of [0, 1, 2, 3, 4]) {
      expect(askedAbout(asked, n), `log${n}`).toBe(1);
    }
  });
});
