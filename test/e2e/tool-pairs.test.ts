// A tool result never reaches the main model without its call, in the real Pi, against a main model that
// rejects such a request as OpenAI does (400 "messages with role 'tool' must be a response to a preceding
// message with 'tool_calls'"): `/guard restore` typed while the run-end pass omits the same exchange (the
// restore wins and the record says why), and a branch written with a result apart from its call (by an
// older version or another extension): a notice at start, requests without it, a repair at the next boundary.
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { GuardRecord } from "../../src/core/shared/types.ts";
import { dropAllPolicy, EXTENSION, grepText } from "../kit/fault-session.ts";
import { capturingUi } from "../kit/hook-probe.ts";
import { keywordPolicy, type LoopbackClassifier, startLoopbackClassifier } from "../kit/loopback-classifier.ts";
import { createTestSession, type FauxResponse, type TestSession, type TestSessionOptions } from "../kit/sdk-session.ts";

const OUTPUT = grepText(24, "a");
/** An answer long enough that its exchange is worth judging once its output is distilled. */
const LONG = `found it in a0: ${"the counts are fine and nothing else changed. ".repeat(60)}`;
const bash = (command: string): FauxResponse => ({ toolCalls: [{ name: "bash", arguments: { command } }] });
type Entry = { id: string; type: string; customType?: string; data?: unknown; message?: { role: string } };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** A reply that comes only after `ms`, by when the run has been aborted. */
const tooLate =
  (ms: number): FauxResponse =>
  async () => {
    await sleep(ms);
    return "too late";
  };
/** Every exchange judged at the first checkpoint that can: no batch, age or break-even holds it back. */
const CHECKPOINT_ALL = {
  telemetry: false,
  midRunMinAgeTurns: 1,
  midRunBatchChars: 0,
  midRunBreakEven: false,
  keepRecentExchanges: 0,
  exchangeBreakEven: false,
  exchangeMinSavingChars: 0,
};

let classifier: LoopbackClassifier;
let agentDir: string;
let sessionDir: string;

beforeAll(async () => {
  // Slow enough that a command typed while the run-end pass asks lands before its answer.
  classifier = await startLoopbackClassifier({ policy: dropAllPolicy, latencyMs: 1500 });
  agentDir = await mkdtemp(join(tmpdir(), "cg-pairs-agent-"));
  sessionDir = await mkdtemp(join(tmpdir(), "cg-pairs-sessions-"));
  await useConfig("guard.json", {
    telemetry: false,
    midRun: false,
    keepRecentExchanges: 0,
    exchangeBreakEven: false,
    exchangeMinSavingChars: 0,
  });
});
afterAll(async () => classifier.close());

/** Writes the guard's config under the agent dir and points the extension at it. */
async function useConfig(name: string, config: Record<string, unknown>): Promise<void> {
  const configPath = join(agentDir, name);
  await writeFile(configPath, JSON.stringify(config));
  process.env.PI_CONTEXT_GUARD_CONFIG = configPath;
}

/** A strict session on the shared classifier, saved in the session dir (or reopened from `sessionFile`). */
function open(responses: FauxResponse[], sessionFile?: string): Promise<TestSession> {
  return openOn(classifier, responses, { sessionDir, ...(sessionFile ? { sessionFile } : {}) });
}

/** A strict session whose classifier is `server`; kept in memory unless `more` says otherwise. */
function openOn(
  server: LoopbackClassifier,
  responses: FauxResponse[],
  more: Partial<TestSessionOptions> = {},
): Promise<TestSession> {
  return createTestSession({
    agentDir,
    extensionPaths: [EXTENSION],
    classifierBaseUrl: server.baseUrl,
    strict: true,
    responses,
    ...more,
  });
}

/** The outputs the runs read: `results.txt` (target_fn's matches) and `one.txt`. */
async function writeOutputs(s: TestSession): Promise<void> {
  await writeFile(join(s.cwd, "results.txt"), OUTPUT);
  await writeFile(join(s.cwd, "one.txt"), grepText(16, "one"));
}

const branch = (s: TestSession) => s.session.sessionManager.getBranch() as unknown as Entry[];
const records = (s: TestSession) =>
  branch(s)
    .filter((e) => e.type === "custom" && e.customType === "context-guard")
    .map((e) => e.data as GuardRecord);

/** The id of the branch's first message entry of this role. */
const firstOf = (s: TestSession, role: "assistant" | "toolResult") =>
  branch(s).find((e) => e.message?.role === role)?.id as string;

async function until(check: () => boolean, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error("timed out waiting");
    await sleep(20);
  }
}

/** Runs `prompt` and aborts it once `server` has been asked and has had time to answer. */
async function abortOnceAsked(s: TestSession, server: LoopbackClassifier, prompt: string): Promise<void> {
  const asked = server.requests.length;
  const run = s.session.prompt(prompt);
  await until(() => server.requests.length > asked);
  await sleep(1500);
  await s.session.abort();
  await run.catch(() => undefined);
}

/** The exchange among these records was kept, because what was asked of it was turned down. */
function expectExchangeRejected(list: GuardRecord[]): void {
  const exchange = list.flatMap((r) => r.results).find((r) => r.kind === "exchange");
  expect(exchange?.outcome).toBe("kept");
  expect(exchange?.reason).toMatch(/^rejected: /);
}

/** Every record names only entries on the session's branch; returns the branch's ids. */
function expectRecordsOnBranch(s: TestSession): Set<string> {
  const now = new Set(branch(s).map((e) => e.id));
  for (const r of records(s)) for (const x of r.results) expect(now.has(x.entryId)).toBe(true);
  return now;
}

describe("a restore and an exchange omission at one boundary", () => {
  let s: TestSession;
  afterAll(async () => s?.dispose());

  it("/guard restore typed while the run-end pass omits the same exchange: the restore wins", async () => {
    s = await open([bash("cat results.txt"), LONG, "hello", "Next.", "All fine."]);
    await writeFile(join(s.cwd, "results.txt"), OUTPUT);
    await s.session.prompt("Where is target_fn defined?");
    const x = firstOf(s, "toolResult");
    expect(records(s)[0]?.results[0]).toMatchObject({ entryId: x });
    const { ui, notices } = capturingUi();
    s.session.extensionRunner.setUIContext(ui, "rpc");

    // Run 2's end asks whether run 1's exchange is still needed; meanwhile the user restores X.
    const asked = classifier.requests.length;
    const run2 = s.session.prompt("Say hello");
    await until(() => classifier.requests.length > asked);
    await s.session.prompt(`/guard restore ${x}`);
    await run2;
    expect(notices.some((n) => n.message.includes(`restored`))).toBe(true);

    await s.session.prompt("And now?");
    expect(s.rejected).toEqual([]);
    // X shows whole, with its call before it.
    const seen = s.contexts.at(-1) ?? [];
    const result = seen.find((m) => m.role === "toolResult");
    expect(JSON.stringify(result?.content)).toContain("src/a0/handler.ts");
    // The exchange stays, and its record says why.
    expectExchangeRejected(records(s));
  });
});

describe("a restore, a pin or the recall signal and a background checkpoint at one turn_end", () => {
  for (const race of ["recall signal", "/guard restore", "/guard pin"] as const) {
    it(`${race}: wins over the checkpoint's omission of the same exchange`, async () => {
      const slow = await startLoopbackClassifier({ policy: dropAllPolicy, latencyMs: 400 });
      await useConfig("guard-signal.json", CHECKPOINT_ALL);
      let x = "";
      let s: TestSession | undefined;
      s = await openOn(slow, [
        bash("cat results.txt"),
        LONG,
        bash("cat one.txt"),
        // The checkpoint started after the first turn is answered before this turn ends; meanwhile the
        // model recalls X whole, or the user restores X or pins its call.
        async () => {
          await sleep(1500);
          if (race === "recall signal") return { toolCalls: [{ name: "recall", arguments: { entryId: x } }] };
          const call = firstOf(s as TestSession, "assistant");
          await s?.session.prompt(race === "/guard restore" ? `/guard restore ${x}` : `/guard pin ${call}`);
          return { toolCalls: [{ name: "bash", arguments: { command: "cat one.txt" } }] };
        },
        "Done.",
      ]);
      try {
        await writeOutputs(s);
        await s.session.prompt("Where is target_fn defined?");
        x = firstOf(s, "toolResult");
        expect(records(s)[0]?.results[0]).toMatchObject({ entryId: x, outcome: "removed" });
        await s.session.prompt("Read one, then look at the old results again");
        expect(s.rejected).toEqual([]);
        // The last request shows X after its call: whole once restored.
        const last = s.contexts.at(-1) ?? [];
        const shown = last.find((m) => m.role === "toolResult" && JSON.stringify(m.content).includes("src/a0/"));
        if (race !== "/guard pin") expect(shown).toBeDefined();
        const callShown = last.some(
          (m) => m.role === "assistant" && JSON.stringify(m.content).includes("cat results.txt"),
        );
        expect(callShown).toBe(true);
        expectExchangeRejected(records(s).filter((r) => r.phase === "mid-run"));
      } finally {
        await s?.dispose();
        await slow.close();
      }
    });
  }
});

describe("a branch that already holds a tool result apart from its call", () => {
  it("warns at start, leaves it out of requests, and repairs it at the next boundary", async () => {
    // Written by an older version: run 1's call omitted while its result shows.
    const first = await open([bash("cat results.txt"), "found it"]);
    await writeFile(join(first.cwd, "results.txt"), OUTPUT);
    const configPath = process.env.PI_CONTEXT_GUARD_CONFIG as string;
    await writeFile(configPath, JSON.stringify({ telemetry: false, enabled: false }));
    await first.session.prompt("Where is target_fn defined?");
    const call = firstOf(first, "assistant");
    const result = firstOf(first, "toolResult");
    const file = first.session.sessionManager.getSessionFile() as string;
    await first.dispose();
    const lines = (await readFile(file, "utf8")).trimEnd().split("\n");
    const last = JSON.parse(lines.at(-1) as string) as { id: string };
    lines.push(
      JSON.stringify({
        type: "context_edit",
        id: "0rphan01",
        parentId: last.id,
        timestamp: new Date().toISOString(),
        targetId: call,
        replacement: null,
      }),
    );
    await writeFile(file, `${lines.join("\n")}\n`);
    await writeFile(
      configPath,
      JSON.stringify({ telemetry: false, midRun: false, keepRecentExchanges: 0, exchangeBreakEven: false }),
    );

    const { ui, notices } = capturingUi();
    // Without a UI (print and JSON mode) the start's notice goes to stderr.
    const stderr: string[] = [];
    const write = process.stderr.write.bind(process.stderr);
    process.stderr.write = ((chunk: string | Uint8Array, ...rest: never[]) => {
      stderr.push(String(chunk));
      return write(chunk, ...rest);
    }) as typeof process.stderr.write;
    const s = await open(["Still fine.", "Again fine."], file).finally(() => {
      process.stderr.write = write;
    });
    expect(stderr.some((l) => l.includes(`tool result apart from its call (${result})`))).toBe(true);
    try {
      s.session.extensionRunner.setUIContext(ui, "rpc");
      // session_start has run already (before the UI was set): the check runs again at each boundary.
      await s.session.prompt("Anything else?");
      expect(s.rejected).toEqual([]);
      expect(s.contexts[0]?.some((m) => m.role === "toolResult")).toBe(false);
      const repairs = branch(s).filter(
        (e) => e.type === "context_edit" && (e as { targetId?: string }).targetId === call,
      );
      expect(repairs.length).toBeGreaterThan(0);
      expect(notices.some((n) => n.message.includes("repaired") && n.message.includes(call))).toBe(true);
      await s.session.prompt("Once more?");
      expect(s.rejected).toEqual([]);
      // Repaired: the call shows again with its result.
      const seen = s.contexts.at(-1) ?? [];
      expect(seen.some((m) => m.role === "toolResult")).toBe(true);
      expect(result).toBeDefined();
    } finally {
      await s.dispose();
    }
  });
});

describe("a checkpoint judged on one branch", () => {
  it("never lands on the branch /tree moves to", async () => {
    const tree = await startLoopbackClassifier({ policy: dropAllPolicy, latencyMs: 300 });
    await useConfig("guard-tree.json", CHECKPOINT_ALL);
    const s = await openOn(tree, [
      bash("cat results.txt"),
      LONG,
      bash("cat one.txt"),
      tooLate(3000),
      "Done on the new branch.",
    ]);
    try {
      await writeOutputs(s);
      await s.session.prompt("Where is target_fn defined?");
      const before = branch(s).at(-1)?.id as string;
      // Run 3: a checkpoint starts after its first turn and is answered while the model writes the last
      // one, which is aborted: no boundary of run 3 lands it.
      await abortOnceAsked(s, tree, "Read one, then wait");
      const run3Ids = new Set(branch(s).map((e) => e.id));
      // /tree back to before run 3, and a new run there.
      await s.session.navigateTree(before, { summarize: false });
      await s.session.prompt("Never mind, just say done");
      expect(records(s).length).toBeGreaterThan(0);
      // Nothing judged for run 3 reaches this branch: no checkpoint record (this run made no tool call),
      // no record naming run 3's entries.
      expect(records(s).filter((r) => r.phase === "mid-run")).toEqual([]);
      const now = expectRecordsOnBranch(s);
      const offBranch = [...run3Ids].filter((id) => !now.has(id));
      expect(offBranch.length).toBeGreaterThan(0);
      const mentions = JSON.stringify(records(s));
      for (const id of offBranch) expect(mentions).not.toContain(id);
      expect(s.rejected).toEqual([]);
    } finally {
      await s.dispose();
      await tree.close();
    }
  });
});

describe("/compact and /reload while a checkpoint is pending", () => {
  for (const action of ["compact", "reload"] as const) {
    it(`${action}: what lands keeps every call with its result, and names only entries on the branch`, async () => {
      const slow = await startLoopbackClassifier({ policy: dropAllPolicy, latencyMs: 300 });
      await useConfig(`guard-${action}.json`, CHECKPOINT_ALL);
      const s = await openOn(
        slow,
        [
          bash("cat results.txt"),
          LONG,
          bash("cat one.txt"),
          tooLate(3000),
          // /compact summarizes the history and the cut turn's prefix: two calls.
          ...(action === "compact"
            ? ["Summary: target_fn is in src/a0/handler.ts.", "Summary: one.txt was read."]
            : []),
          bash("cat one.txt"),
          "Done.",
        ],
        // Compaction keeps only the last few hundred tokens, so /compact has something to summarize.
        { settings: { compaction: { enabled: false, keepRecentTokens: 200 }, retry: { enabled: false } } },
      );
      try {
        await writeOutputs(s);
        await s.session.prompt("Where is target_fn defined?");
        await abortOnceAsked(s, slow, "Read one, then wait");
        if (action === "compact") await s.session.compact();
        else await s.session.reload();
        await s.session.prompt("Read one again");
        expect(s.rejected).toEqual([]);
        const now = expectRecordsOnBranch(s);
        for (const e of branch(s)) {
          if (e.type === "context_edit") expect(now.has((e as { targetId?: string }).targetId ?? "")).toBe(true);
        }
      } finally {
        await s.dispose();
        await slow.close();
      }
    });
  }
});

describe("a handed-over rest judged on one branch", () => {
  it("never lands on the branch /tree moves to", async () => {
    const failing = (n: number) =>
      `${Array.from({ length: 160 }, (_, i) => (i === 50 ? `FAIL src/case${n}_${i}.test.ts` : `PASS src/case${n}_${i}.test.ts (${i} ms)`)).join("\n")}\n`;
    // The first request is answered at once, the second is still in flight at the hand-over.
    let seen = 0;
    const keyword = keywordPolicy(/FAIL/);
    const slow: LoopbackClassifier = await startLoopbackClassifier({
      policy: (body) => {
        slow.set({ latencyMs: seen++ === 1 ? 3000 : 0 });
        return keyword(body);
      },
    });
    await useConfig("guard-rest.json", { telemetry: false, midRun: false, concurrency: 1 });
    const s = await openOn(slow, [
      bash("cat log0.txt"),
      bash("cat log1.txt"),
      bash("cat log2.txt"),
      "The failures are in case0, case1 and case2.",
      // The follow-up's run, aborted while the rest is still asked.
      tooLate(1500),
      bash("echo new"),
      "Done on the new branch.",
    ]);
    try {
      for (let i = 0; i < 3; i++) await writeFile(join(s.cwd, `log${i}.txt`), failing(i));
      const run = s.session.prompt("Find the failing tests");
      await until(() => slow.requests.length >= 2);
      await sleep(100);
      await s.session.prompt("Now summarize", { streamingBehavior: "followUp" });
      await until(() => s.contexts.length >= 5);
      await s.session.abort();
      await run.catch(() => undefined);
      // /tree back to before the run's prompt: the outputs the rest judged are not on the new branch.
      const prompt = branch(s).find((e) => e.message?.role === "user");
      await s.session.navigateTree(prompt?.id as string, { summarize: false });
      // The rest is answered meanwhile.
      await sleep(3500);
      await s.session.prompt("Just say done");
      expect(s.rejected).toEqual([]);
      // Today's code lands the rest's record here, naming outputs of the other branch.
      expect(records(s)).toEqual([]);
      expect(branch(s).filter((e) => e.type === "context_edit")).toEqual([]);
    } finally {
      await s.dispose();
      await slow.close();
    }
  });
});
