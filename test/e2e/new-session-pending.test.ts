// `/new` (RPC `new_session`) while the guard's background work is pending, in the real Pi in RPC mode:
// a mid-run checkpoint asked while the model call is under way, or a run end's handed-over rest asked
// with the agent idle. The classifier holds its answers until the new session's prompt has reached the
// model, which must not wait for them (one that did would never start); nothing judged in the old session may land in either file once it is left; both files
// load in Pi and every request pairs each tool result with its call (a strict main model).
import { readFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Asked, startFailClassifier, untilAnswered } from "../kit/fail-classifier.ts";
import { type FakeOpenAI, type FakeReply, lastPrompt, startFakeOpenAI, type WireJson } from "../kit/fake-openai.ts";
import type { LoopbackClassifier } from "../kit/loopback-classifier.ts";
import { promptSettled, type RpcPi, sessionFileOf, startGuardRpcPi } from "../kit/rpc-pi.ts";
import { type FileEntry as Entry, openCopy } from "../kit/session-copy.ts";
import { testLogDir } from "../kit/test-log.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const CASES = [
  {
    name: "a mid-run checkpoint",
    config: { midRunBatchChars: 0, midRunMinAgeTurns: 1, midRunBreakEven: false },
    // The third model call hangs: /new comes while it and the checkpoint are under way.
    turns: ["cat log0.txt", "cat log1.txt", "hang"],
  },
  {
    name: "a handed-over rest",
    config: { midRun: false },
    turns: ["cat log0.txt", "cat log1.txt", "cat log2.txt"],
  },
] as const;

async function loadCopy(file: string): Promise<Entry[]> {
  return (await openCopy(file)).getEntries() as unknown as Entry[];
}

describe.each(CASES)("/new while $name is pending (RPC)", ({ config, turns }) => {
  let classifier: LoopbackClassifier;
  let main: FakeOpenAI;
  let rpc: RpcPi;
  const asked: Asked[] = [];
  const calls: Array<{ prompt: string; at: number }> = [];
  let hanging: (() => void) | undefined;
  let newAt = 0;
  let oldFile = "";
  let newFile = "";
  let oldBefore = "";
  let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  let release = () => {};

  async function reply(messages: WireJson[]): Promise<FakeReply> {
    const { prompt, done } = lastPrompt(messages);
    calls.push({ prompt, at: performance.now() });
    if (prompt === "after") release();
    if (prompt !== "work") return { text: `done with ${prompt}` };
    const next = turns[done];
    if (next === undefined) return { text: "done with work" };
    if (next === "hang") {
      await new Promise<void>((resolve) => {
        hanging = resolve;
        setTimeout(resolve, 30_000);
      });
      return { text: "too late" };
    }
    return { toolCalls: [{ name: "bash", arguments: { command: next } }] };
  }

  beforeAll(async () => {
    classifier = await startFailClassifier(0, asked);
    classifier.set({ hold: new Promise<void>((r) => (release = r)) });
    main = await startFakeOpenAI((req) => reply(req.messages), { strict: true });
    const cwd = await testLogDir("cg-new-pending-", 3);
    rpc = await startGuardRpcPi({
      cwd,
      mainBaseUrl: main.baseUrl,
      classifierBaseUrl: classifier.baseUrl,
      guardConfig: { telemetry: false, timeoutMs: 600_000, settleBudgetMs: 150, exchangeBreakEven: false, ...config },
    });
    let from = rpc.records.length;
    rpc.send({ type: "prompt", message: "work" });
    const hangs = turns.includes("hang" as never);
    if (!hangs) await rpc.waitFor((r) => r.type === "agent_settled", { from, timeoutMs: 60_000 });
    while (asked.length === 0 || (hangs && !hanging)) await sleep(10);
    oldFile = await sessionFileOf(rpc);
    oldBefore = await readFile(oldFile, "utf8");
    from = rpc.records.length;
    newAt = performance.now();
    rpc.send({ type: "new_session", id: "new" });
    const created = await rpc.waitFor((r) => r.id === "new", { from });
    expect(created.success).toBe(true);
    hanging?.();
    await promptSettled(rpc, "after");
    // The old pass's answers went out when "after" reached the model; a run that would land them.
    await untilAnswered(asked, 0);
    await promptSettled(rpc, "later");
    newFile = await sessionFileOf(rpc);
    rpc.child.stdin.end();
    exit = await rpc.exited;
  }, 120_000);
  afterAll(async () => {
    await rpc?.close();
    await main?.close();
    await classifier?.close();
  });

  it("the new session's prompt starts without waiting for the classifier", () => {
    const started = calls.find((c) => c.prompt === "after")?.at as number;
    expect(started).toBeGreaterThan(newAt);
    const answered = classifier.answeredAt[0] ?? Number.POSITIVE_INFINITY;
    expect(started).toBeLessThan(answered);
    expect(calls.filter((c) => c.prompt === "later").length).toBe(1);
  });

  it("sends no request a strict provider rejects, and Pi exits cleanly", () => {
    expect(main.rejected).toEqual([]);
    const errors = rpc.records.filter(
      (r) => r.type === "extension_error" || (r.method === "notify" && r.notifyType === "error"),
    );
    expect(errors).toEqual([]);
    expect(exit).toMatchObject({ code: 0, signal: null });
  });

  it("lands nothing in the old session once it is left, and it still loads", async () => {
    expect(newFile).not.toBe(oldFile);
    const after = await readFile(oldFile, "utf8");
    // What the old file gained after /new: at most the aborted run's own messages.
    const added = after
      .slice(oldBefore.length)
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Entry);
    expect(added.filter((e) => e.type !== "message")).toEqual([]);
    const entries = await loadCopy(oldFile);
    expect(entries.some((e) => e.type === "context_edit" || e.customType === "context-guard")).toBe(false);
  });

  it("lands nothing judged in the old session in the new one", async () => {
    const entries = await loadCopy(newFile);
    const ids = new Set(entries.map((e) => e.id));
    expect(entries.filter((e) => e.type === "message").length).toBeGreaterThanOrEqual(4);
    for (const e of entries) {
      if (e.type === "context_edit") expect(ids.has(e.targetId as string)).toBe(true);
      for (const r of e.data?.results ?? []) expect(ids.has(r.entryId)).toBe(true);
    }
    expect(entries.some((e) => e.type === "context_edit")).toBe(false);
  });
});
