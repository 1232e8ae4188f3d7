// Issue 44, break 3, in the real Pi (an SDK session against a main model that rejects a tool result apart
// from its call): a pass that ended behind the agent has drafts ready that have not landed, and every
// request already shows them. The user's restore or pin of an entry those drafts touch wins from the next
// request on: the request shows the original, and the draft never lands.
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { GuardRecord } from "../../src/core/shared/types.ts";
import { dropAllPolicy, EXTENSION, grepText } from "../kit/fault-session.ts";
import { capturingUi } from "../kit/hook-probe.ts";
import { type LoopbackClassifier, startLoopbackClassifier } from "../kit/loopback-classifier.ts";
import { createTestSession, type FauxResponse, type TestSession } from "../kit/sdk-session.ts";

const OUTPUT = grepText(24, "a");
/** What only the original output holds (its stub names files, not these lines). */
const ORIGINAL_LINE = "readStatus(5)";
const LONG = `found it in a0: ${"the counts are fine and nothing else changed. ".repeat(60)}`;
const bash = (command: string): FauxResponse => ({ toolCalls: [{ name: "bash", arguments: { command } }] });
type Entry = {
  id: string;
  type: string;
  customType?: string;
  targetId?: string;
  data?: unknown;
  message?: { role: string };
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let classifier: LoopbackClassifier;
let agentDir: string;

beforeAll(async () => {
  classifier = await startLoopbackClassifier({ policy: dropAllPolicy, latencyMs: 300 });
  agentDir = await mkdtemp(join(tmpdir(), "cg-ready-agent-"));
  const configPath = join(agentDir, "guard.json");
  // The run end never waits: its pass always ends behind the agent and lands at a later boundary.
  await writeFile(
    configPath,
    JSON.stringify({
      telemetry: false,
      midRun: false,
      settleBudgetMs: 0,
      keepRecentExchanges: 0,
      exchangeBreakEven: false,
      exchangeMinSavingChars: 0,
    }),
  );
  process.env.PI_CONTEXT_GUARD_CONFIG = configPath;
});
afterAll(async () => classifier.close());

async function open(responses: FauxResponse[]): Promise<{ s: TestSession; ui: ReturnType<typeof capturingUi> }> {
  const s = await createTestSession({
    agentDir,
    extensionPaths: [EXTENSION],
    classifierBaseUrl: classifier.baseUrl,
    strict: true,
    responses,
  });
  await writeFile(join(s.cwd, "results.txt"), OUTPUT);
  const ui = capturingUi();
  s.session.extensionRunner.setUIContext(ui.ui, "rpc");
  return { s, ui };
}

const branch = (s: TestSession) => s.session.sessionManager.getBranch() as unknown as Entry[];
const editsOf = (s: TestSession, id: string) => branch(s).filter((e) => e.type === "context_edit" && e.targetId === id);
const records = (s: TestSession) =>
  branch(s)
    .filter((e) => e.type === "custom" && e.customType === "context-guard")
    .map((e) => e.data as GuardRecord);
const resultOf = (s: TestSession) => branch(s).find((e) => e.message?.role === "toolResult")?.id as string;

async function until(check: () => boolean, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error("timed out waiting");
    await sleep(20);
  }
}

/** Waits until the pass behind the agent has stopped asking: the footer leaves its checkpoint state. */
async function untilReady(statuses: string[], from: number): Promise<void> {
  await until(() => statuses.slice(from).some((t) => t.includes("checkpoint")));
  await until(() => !(statuses.at(-1) ?? "").includes("checkpoint"));
}

/** The tool result that holds the original output, in a request the main model received. */
const showsOriginal = (request: TestSession["contexts"][number]) =>
  request.some((m) => m.role === "toolResult" && JSON.stringify(m.content).includes(ORIGINAL_LINE));

describe("drafts ready behind the agent and the user's restore or pin", () => {
  for (const command of ["restore", "pin"] as const) {
    it(`/guard ${command} of an output whose distillation is ready: cancelled, the original is sent, nothing lands`, async () => {
      const { s, ui } = await open([bash("cat results.txt"), LONG, "Fine."]);
      try {
        const from = ui.statuses.length;
        await s.session.prompt("Where is target_fn defined?");
        await untilReady(ui.statuses, from);
        const x = resultOf(s);
        expect(editsOf(s, x)).toEqual([]);

        await s.session.prompt(`/guard ${command} ${x}`);
        const said = ui.notices.at(-1)?.message ?? "";
        expect(said).toContain("cancelled");

        const sent = s.contexts.length;
        await s.session.prompt("And now?");
        expect(s.rejected).toEqual([]);
        const requests = s.contexts.slice(sent);
        expect(requests.length).toBeGreaterThan(0);
        for (const r of requests) expect(showsOriginal(r)).toBe(true);
        // The draft was dropped where it landed, and the record says why.
        expect(editsOf(s, x)).toEqual([]);
        const result = records(s)
          .flatMap((r) => r.results)
          .find((r) => r.entryId === x);
        expect(result).toMatchObject({ outcome: "kept" });
        expect(result?.reason).toMatch(/pinned/);
      } finally {
        await s.dispose();
      }
    });
  }

  it("/guard restore of a removed output whose exchange a ready draft omits: the request shows the original", async () => {
    const { s, ui } = await open([bash("cat results.txt"), LONG, "hello", "Fine."]);
    try {
      let from = ui.statuses.length;
      await s.session.prompt("Where is target_fn defined?");
      await untilReady(ui.statuses, from);
      const x = resultOf(s);
      // Run 2 lands the distillation; its own pass then omits run 1's exchange, behind the agent.
      from = ui.statuses.length;
      await s.session.prompt("Say hello");
      expect(editsOf(s, x).length).toBe(1);
      await untilReady(ui.statuses, from);
      const prompt = branch(s).find((e) => e.message?.role === "user")?.id as string;
      expect(editsOf(s, prompt)).toEqual([]);

      await s.session.prompt(`/guard restore ${x}`);
      expect(ui.notices.at(-1)?.message ?? "").toContain("restored");

      const sent = s.contexts.length;
      await s.session.prompt("And now?");
      expect(s.rejected).toEqual([]);
      const requests = s.contexts.slice(sent);
      expect(requests.length).toBeGreaterThan(0);
      for (const r of requests) expect(showsOriginal(r)).toBe(true);
      // The exchange stays: its omission never lands.
      const exchange = records(s)
        .flatMap((r) => r.results)
        .find((r) => r.kind === "exchange" && r.entryId === prompt);
      expect(exchange?.outcome).toBe("kept");
    } finally {
      await s.dispose();
    }
  });
});
