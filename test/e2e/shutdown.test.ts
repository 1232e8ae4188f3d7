import type { JsonObject } from "@earendil-works/pi-ai";
import { beforeAll, describe, expect, it } from "vitest";
import { type FaultSession, faultSession, grepText, shutdown } from "../kit/fault-session.ts";
import { capturingUi } from "../kit/hook-probe.ts";
import { failOnUnhandledRejections } from "../kit/no-unhandled.ts";
import type { FauxResponse } from "../kit/sdk-session.ts";
import { threads } from "../kit/threads.ts";

const timers = () => process.getActiveResourcesInfo().filter((r) => r === "Timeout").length;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const call = (name: string, args: JsonObject): FauxResponse => ({ toolCalls: [{ name, arguments: args }] });

/** Waits until `predicate` holds; the test's timeout is the bound. */
async function until(predicate: () => boolean): Promise<void> {
  while (!predicate()) await sleep(10);
}

let baseline = 0;
failOnUnhandledRejections();
beforeAll(async () => {
  // Warm up what allocates threads lazily (libuv's pool, the faux provider, jiti), then count.
  const warm = await faultSession({ config: {}, responses: ["hi"] });
  await warm.session.prompt("hi");
  await warm.close();
  await sleep(200);
  baseline = threads();
});

/** Shuts the session down while the classifier holds the pass, and waits for the prompt to return. */
async function shutdownDuringPass(s: FaultSession, prompt: string): Promise<void> {
  const running = s.session.prompt(prompt);
  await until(() => s.classifier.requests.length > 0);
  await shutdown(s);
  await running;
}

describe("session_shutdown during a pass", () => {
  it("ends the pass at once, writes nothing after shutdown, and leaves no thread or timer", async () => {
    const s = await faultSession({
      // A deadline far longer than the test: only the shutdown can end the pass early.
      config: { timeoutMs: 600_000, midRun: false, pruneExchanges: false, smallResultMinChars: 0, telemetry: true },
      responses: [call("bash", { command: "cat a.txt" }), "In src/a0/handler.ts."],
      files: { "a.txt": grepText(24, "a") },
    });
    const { ui, notices } = capturingUi();
    s.session.extensionRunner.setUIContext(ui, "tui");
    const timersBefore = timers();
    s.classifier.set({ behaviour: "hang" });
    try {
      await shutdownDuringPass(s, "Where is readStatus used?");
      const branch = s.session.sessionManager.getBranch();
      expect(branch.some((e) => e.type === "context_edit")).toBe(false);
      expect(branch.some((e) => e.type === "custom" && e.customType === "context-guard")).toBe(false);
      // No "the pass failed" warning for a pass the user ended by leaving.
      expect(notices.filter((n) => n.message.includes("pass failed"))).toEqual([]);
      await until(() => threads() <= baseline && timers() <= timersBefore);
    } finally {
      await s.dispose();
      await s.classifier.close();
    }
  });

  it("a mid-run checkpoint in flight ends too, and the run goes on untouched", async () => {
    const s = await faultSession({
      config: { timeoutMs: 600_000, midRunBatchChars: 5000, midRunMinAgeTurns: 1, midRunBreakEven: false },
      responses: [call("bash", { command: "cat a.txt" }), call("bash", { command: "cat b.txt" }), "done"],
      files: { "a.txt": grepText(8, "a"), "b.txt": grepText(8, "b") },
    });
    s.classifier.set({ behaviour: "hang" });
    try {
      await shutdownDuringPass(s, "look at a and b");
      const branch = s.session.sessionManager.getBranch();
      expect(branch.some((e) => e.type === "context_edit" || e.type === "custom")).toBe(false);
      // The run itself completed: the final answer is on the branch.
      expect(s.contexts.length).toBe(3);
    } finally {
      await s.dispose();
      await s.classifier.close();
    }
  });
});

describe("session_shutdown during a recall", () => {
  it("ends the search at once with an error the model sees, and stops its worker", async () => {
    const evil = `${"a".repeat(40)}!\n`.repeat(50);
    const s = await faultSession({
      config: { recallTimeoutMs: 60_000, midRun: false, pruneExchanges: false, smallResultMinChars: 0 },
      responses: [call("bash", { command: "cat evil.txt" }), "ok"],
      files: { "evil.txt": evil },
    });
    try {
      await s.session.prompt("read it");
      const id = s.session.sessionManager
        .getBranch()
        .find((e) => e.type === "message" && e.message.role === "toolResult")?.id as string;
      let recallStarted = false;
      s.addResponses(() => {
        recallStarted = true;
        return { toolCalls: [{ name: "recall", arguments: { entryId: id, pattern: "^(a+)+$" } }] };
      }, "after");
      const running = s.session.prompt("search it");
      await until(() => recallStarted);
      await sleep(300);
      await shutdown(s);
      await running;
      const last = s.contexts.at(-1) as Array<{ role: string; isError?: boolean; content?: Array<{ text?: string }> }>;
      const result = last.filter((m) => m.role === "toolResult").at(-1);
      expect(result?.isError).toBe(true);
      await until(() => threads() <= baseline);
    } finally {
      await s.dispose();
      await s.classifier.close();
    }
  });
});

describe("reload and a new session", () => {
  it("/reload replaces the pools: threads do not pile up and passes keep working", async () => {
    const responses: FauxResponse[] = [];
    for (let i = 0; i < 3; i++) responses.push(call("bash", { command: `cat f${i}.txt` }), `answer ${i}`);
    const files = Object.fromEntries([0, 1, 2].map((i) => [`f${i}.txt`, grepText(24, `f${i}`)]));
    const s = await faultSession({
      config: { midRun: false, pruneExchanges: false, smallResultMinChars: 0 },
      responses,
      files,
    });
    try {
      for (let i = 0; i < 3; i++) {
        await s.session.prompt(`look at f${i}`);
        await s.session.reload();
      }
      // One warm pass worker for the live session, none left from the two reloaded ones.
      await until(() => threads() <= baseline + 1);
      const edits = s.session.sessionManager.getBranch().filter((e) => e.type === "context_edit");
      expect(edits).toHaveLength(3);
    } finally {
      await s.close();
    }
  });

  it("a new session after shutdown starts clean; the old one's pools are gone", async () => {
    const first = await faultSession({ config: {}, responses: ["hi"] });
    await first.session.prompt("hi");
    await shutdown(first, "new");
    first.session.dispose();
    await first.classifier.close();
    const second = await faultSession({
      config: { midRun: false, pruneExchanges: false, smallResultMinChars: 0 },
      responses: [call("bash", { command: "cat a.txt" }), "done"],
      files: { "a.txt": grepText(24, "a") },
    });
    try {
      await second.session.prompt("look");
      expect(second.edits()).toHaveLength(1);
      // The live session's pass worker and, since a run started, its classifier HTTP thread.
      await until(() => threads() <= baseline + 2);
    } finally {
      await second.close();
    }
    await until(() => threads() <= baseline);
  });
});
