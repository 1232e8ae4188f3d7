// `/compact` (RPC `compact`) while a run end's handed-over rest is still asked, in the real Pi in RPC
// mode, against a strict main model. The rest lands after the compaction or is dropped; either way no
// request carries a tool result apart from its call, and no guard entry names an entry off its branch.
// (A pending checkpoint under /compact and /reload: tool-pairs.test.ts.)
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Asked, startFailClassifier, untilAnswered } from "../kit/fail-classifier.ts";
import { type FakeOpenAI, lastPrompt, startFakeOpenAI, type WireJson, wireText } from "../kit/fake-openai.ts";
import type { LoopbackClassifier } from "../kit/loopback-classifier.ts";
import { promptSettled, type RpcPi, sessionFileOf, startGuardRpcPi } from "../kit/rpc-pi.ts";
import { type FileEntry as Entry, guardNames, openCopy } from "../kit/session-copy.ts";
import { testLogDir } from "../kit/test-log.ts";

const CLASSIFIER_MS = 2000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let classifier: LoopbackClassifier;
let main: FakeOpenAI;
let rpc: RpcPi;
const asked: Asked[] = [];
let file = "";
let compacted: Record<string, unknown> | undefined;
let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;

beforeAll(async () => {
  classifier = await startFailClassifier(CLASSIFIER_MS, asked);
  main = await startFakeOpenAI(
    (req) => {
      const { prompt: text, done } = lastPrompt(req.messages);
      if (text === "work" && done < 3)
        return { toolCalls: [{ name: "bash", arguments: { command: `cat log${done}.txt` } }] };
      // The compaction's summary requests land here too.
      return { text: text.length > 40 ? "Summary: three logs read, case0 to case2 fail." : `done with ${text}` };
    },
    { strict: true },
  );
  const cwd = await testLogDir("cg-compact-rest-", 3);
  rpc = await startGuardRpcPi({
    cwd,
    mainBaseUrl: main.baseUrl,
    classifierBaseUrl: classifier.baseUrl,
    settings: { compaction: { enabled: false, keepRecentTokens: 200 }, retry: { enabled: false } },
    guardConfig: {
      telemetry: false,
      timeoutMs: 30_000,
      settleBudgetMs: 150,
      midRun: false,
      exchangeBreakEven: false,
    },
  });
  await promptSettled(rpc, "work");
  while (asked.length < 3) await sleep(10);
  const from = rpc.records.length;
  rpc.send({ type: "compact", id: "compact" });
  compacted = await rpc.waitFor((r) => r.id === "compact", { from, timeoutMs: 60_000 });
  await promptSettled(rpc, "after");
  // Once the rest has been answered, a run whose boundaries would land it.
  await untilAnswered(asked, CLASSIFIER_MS);
  await promptSettled(rpc, "later");
  file = await sessionFileOf(rpc);
  rpc.child.stdin.end();
  exit = await rpc.exited;
}, 120_000);
afterAll(async () => {
  await rpc?.close();
  await main?.close();
  await classifier?.close();
});

describe("/compact while a handed-over rest is pending (RPC)", () => {
  it("compacts with the rest still asked", () => {
    expect(compacted?.success).toBe(true);
    expect(asked.length).toBeGreaterThanOrEqual(3);
  });

  it("sends no request a strict provider rejects, and Pi exits cleanly", () => {
    expect(main.rejected).toEqual([]);
    const errors = rpc.records.filter(
      (r) => r.type === "extension_error" || (r.method === "notify" && r.notifyType === "error"),
    );
    expect(errors).toEqual([]);
    expect(exit).toMatchObject({ code: 0, signal: null });
    // Both later prompts reached the model.
    const users = main.requests
      .at(-1)
      ?.messages.filter((m: WireJson) => m.role === "user")
      .map(wireText);
    expect(users.slice(-2)).toEqual(["after", "later"]);
  });

  it("leaves a file Pi loads, whose guard entries name only entries on their branch", async () => {
    const entries = (await openCopy(file)).getEntries() as unknown as Entry[];
    expect(entries.some((e) => e.type === "compaction")).toBe(true);
    for (const n of guardNames(entries)) expect([n.entry, n.named, n.onBranch]).toEqual([n.entry, n.named, true]);
  });
});
