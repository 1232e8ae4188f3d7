/**
 * Proves the test infrastructure against the real Pi 1.6.0: the loopback System One server with pi-ai's own client,
 * an SDK session with a boundary-editing probe extension, and a CLI run against the fake OpenAI server.
 */
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ClassifierContext, ClassifierResult } from "@earendil-works/pi-ai";
import { classify } from "@earendil-works/pi-ai/api/typesafe-system-one";
import type { ExtensionAPI, SessionBoundaryDraft } from "@earendil-works/pi-coding-agent";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loopbackModel } from "../bench/lib/hook.ts";
import { keywordPolicy, type LoopbackClassifier, startLoopbackClassifier } from "../bench/lib/loopback-classifier.ts";
import { type FakeOpenAI, startFakeOpenAI, type WireJson } from "./support/fake-openai.ts";
import { FAKE_ANTHROPIC_MODEL, FAKE_MODEL, makeAgentDir, removeAgentDir, runPiCli } from "./support/pi-agent-dir.ts";
import { createTestSession } from "./support/sdk-session.ts";

const chunkContext: ClassifierContext = {
  state: {
    chunks: { chunk_0: "build ok\nall good", chunk_1: "ERROR: disk full", chunk_2: "more output" },
    items: { item_3: "fatal error in foo.ts" },
    item_4: "nothing to see",
  },
  questions: {
    keep_whole: { type: "bool", instructions: "Keep it all?", criteria: { true: "yes", false: "no" } },
    chunk_0: { type: "bool", instructions: "Needed?", criteria: { true: "needed", false: "not needed" } },
    chunk_1: { type: "bool", instructions: "Needed?", criteria: { true: "needed", false: "not needed" } },
    focus: {
      type: "choice",
      instructions: "Which chunk matters most?",
      criteria: { chunk_0: "first", chunk_1: "second", chunk_2: "third", none: "none of them" },
    },
    item_3: { type: "bool", instructions: "Needed?", criteria: { true: "needed", false: "not needed" } },
    item_4: { type: "bool", instructions: "Needed?", criteria: { true: "needed", false: "not needed" } },
    item_9: { type: "bool", instructions: "Needed?", criteria: { true: "needed", false: "not needed" } },
    kind: { type: "choice", instructions: "What is it?", criteria: { log: "log output", code: "source code" } },
  },
};

const boolQ = { type: "bool", instructions: "q", criteria: { true: "t", false: "f" } } as const;
const oneBool: ClassifierContext = { state: { text: "x" }, questions: { q: boolQ } };

function bool(result: ClassifierResult, id: string): number {
  const a = result.answers[id];
  if (a?.type !== "bool") throw new Error(`no bool answer for ${id}: ${JSON.stringify(a)}`);
  return a.probability;
}

describe("loopback classifier with pi-ai's System One client", () => {
  let lb: LoopbackClassifier;
  beforeAll(async () => {
    lb = await startLoopbackClassifier({ policy: keywordPolicy(/error/i, { keepWhole: 0.2 }) });
  });
  afterAll(async () => {
    await lb.close();
  });

  it("answers bool and choice questions with keywordPolicy", async () => {
    expect(lb.baseUrl).toBe(`http://127.0.0.1:${lb.port}/api/v1`);
    const r = await classify(loopbackModel(lb.baseUrl), chunkContext, { apiKey: "k", maxRetries: 0 });
    expect(r.stopReason, r.errorMessage).toBe("stop");
    expect(bool(r, "keep_whole")).toBe(0.2);
    expect(bool(r, "chunk_0")).toBe(0.05);
    expect(bool(r, "chunk_1")).toBe(0.9);
    expect(bool(r, "item_3")).toBe(0.9);
    expect(bool(r, "item_4")).toBe(0.05);
    expect(bool(r, "item_9")).toBe(0.5);
    expect(r.answers.focus).toMatchObject({ type: "choice", choice: "chunk_1", probabilities: { chunk_1: 0.7 } });
    expect(r.answers.kind).toMatchObject({ type: "choice", choice: "log" });
    expect(r.usage?.input).toBeGreaterThan(0);
    const body = lb.requests.at(-1);
    expect(body?.model).toBe("~typesafe/jev-latest");
    expect(body?.questions.chunk_0?.type).toBe("noul");
    expect(lb.requestHeaders.at(-1)?.authorization).toBe("Bearer k");
  });

  it("answers focus with none when nothing matches", async () => {
    const ctx: ClassifierContext = {
      state: { chunks: { chunk_0: "fine", chunk_1: "also fine" } },
      questions: {
        focus: { type: "choice", instructions: "?", criteria: { chunk_0: "a", chunk_1: "b", none: "none" } },
      },
    };
    const r = await classify(loopbackModel(lb.baseUrl), ctx, { apiKey: "k", maxRetries: 0 });
    expect(r.answers.focus).toMatchObject({ type: "choice", choice: "none", probabilities: { none: 0.8 } });
  });

  it.each([
    ["error500", /500/],
    ["error429", /429/],
    ["malformed", /./],
    ["missing-ids", /did not return an answer/],
    ["wrong-types", /did not return a bool answer/],
    ["nan", /invalid probability/],
  ] as const)("reports stopReason error for %s", async (behaviour, message) => {
    lb.set({ behaviour });
    try {
      const r = await classify(loopbackModel(lb.baseUrl), oneBool, { apiKey: "k", maxRetries: 0 });
      expect(r.stopReason).toBe("error");
      expect(r.errorMessage).toMatch(message);
    } finally {
      lb.set({ behaviour: "answer" });
    }
  });

  it("passes an out-of-range noul through (pi-ai does not range-check)", async () => {
    lb.set({ behaviour: "nan", nanValue: 1.7 });
    try {
      const r = await classify(loopbackModel(lb.baseUrl), oneBool, { apiKey: "k", maxRetries: 0 });
      expect(r.stopReason).toBe("stop");
      expect(bool(r, "q")).toBe(1.7);
    } finally {
      lb.set({ behaviour: "answer", nanValue: "NaN" });
    }
  });

  it("applies latency, and a hang is cut by an AbortSignal", async () => {
    lb.set({ latencyMs: 80, jitterMs: 20, seed: 7 });
    let t0 = Date.now();
    const slow = await classify(loopbackModel(lb.baseUrl), oneBool, { apiKey: "k", maxRetries: 0 });
    expect(slow.stopReason).toBe("stop");
    expect(Date.now() - t0).toBeGreaterThanOrEqual(75);

    lb.set({ latencyMs: 0, jitterMs: 0, behaviour: "hang" });
    const before = lb.requests.length;
    t0 = Date.now();
    const hung = await classify(loopbackModel(lb.baseUrl), oneBool, {
      apiKey: "k",
      maxRetries: 0,
      signal: AbortSignal.timeout(150),
    });
    expect(hung.stopReason).toBe("aborted");
    expect(Date.now() - t0).toBeLessThan(2000);
    expect(lb.requests.length).toBe(before + 1);
    const timed = await classify(loopbackModel(lb.baseUrl), oneBool, { apiKey: "k", maxRetries: 0, timeoutMs: 100 });
    expect(timed.stopReason).toBe("error");
    expect(timed.errorMessage).toMatch(/timed out/i);
    lb.set({ behaviour: "answer" });
  });

  it("closes promptly while a request hangs", async () => {
    const other = await startLoopbackClassifier({ behaviour: "hang" });
    const pending = classify(loopbackModel(other.baseUrl), oneBool, { apiKey: "k", maxRetries: 0 });
    while (other.requests.length === 0) await new Promise((r) => setTimeout(r, 10));
    const t0 = Date.now();
    await other.close();
    expect(Date.now() - t0).toBeLessThan(1000);
    expect((await pending).stopReason).toBe("error");
  });
});

/** Probe: at agent_before_settle, replace the first big toolResult and ask the classifier once. */
function probeFactory(log: unknown[]) {
  return (pi: ExtensionAPI) => {
    pi.on("agent_before_settle", async (event, ctx) => {
      const target = event.context.contextEntries.find((e) => {
        const m = e.messages[0];
        if (e.sourceEntry.type !== "message" || m?.role !== "toolResult") return false;
        const text = m.content.map((b) => (b.type === "text" ? b.text : "")).join("");
        return text.length > 5000;
      });
      const jev = ctx.modelRegistry.findOfType("classifier", "openrouter", "~typesafe/jev-latest");
      const result = jev
        ? await ctx.modelRegistry.classify(jev, oneBool, { maxRetries: 0, timeoutMs: 5000 })
        : undefined;
      log.push({ target: target?.sourceEntry.id, stopReason: result?.stopReason, error: result?.errorMessage });
      if (!target) return;
      const edit: SessionBoundaryDraft = {
        type: "context_edit",
        targetId: target.sourceEntry.id,
        replacement: { content: [{ type: "text", text: "[probe] replaced" }] },
      };
      return { entries: [...event.entries, edit] };
    });
  };
}

describe("SDK session with the faux provider", () => {
  it("applies an agent_before_settle context_edit that the next prompt sees", async () => {
    const lb = await startLoopbackClassifier({ policy: keywordPolicy(/x/) });
    const agentDir = await mkdtemp(join(tmpdir(), "cg-sdk-agent-"));
    const log: { target?: string; stopReason?: string }[] = [];
    const h = await createTestSession({
      agentDir,
      classifierBaseUrl: lb.baseUrl,
      extensionFactories: [probeFactory(log)],
      responses: [
        { toolCalls: [{ name: "bash", arguments: { command: "seq 1 3000" } }] },
        (context) => {
          const tool = context.messages.find((m) => m.role === "toolResult");
          return `saw ${tool?.role === "toolResult" ? tool.content.length : 0} block(s)`;
        },
        "second answer",
      ],
    });
    try {
      await h.session.prompt("run it");
      expect(log).toHaveLength(1);
      expect(log[0]?.target).toBeTruthy();
      expect(log[0]?.stopReason).toBe("stop");
      expect(lb.requests).toHaveLength(1);
      // The 2nd model call (same run) still saw the full output: the edit lands at settle.
      const full = h.contexts[1]?.find((m) => m.role === "toolResult");
      expect(JSON.stringify(full)).toContain("2999");

      const types = h.session.sessionManager.getBranch().map((e) => e.type);
      expect(types).toContain("context_edit");

      await h.session.prompt("again");
      expect(h.contexts).toHaveLength(3);
      const edited = h.contexts[2]?.find((m) => m.role === "toolResult");
      expect(edited?.role === "toolResult" && edited.content).toEqual([{ type: "text", text: "[probe] replaced" }]);
      // The raw entry is untouched.
      const raw = h.session.sessionManager.getEntry(log[0]?.target ?? "");
      expect(JSON.stringify(raw)).toContain("2999");
    } finally {
      await h.dispose();
      await lb.close();
      await rm(agentDir, { recursive: true, force: true });
    }
  });
});

const CLI_PROBE = `
import { writeFileSync } from "node:fs";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
  pi.on("agent_before_settle", async (event, ctx) => {
    const target = event.context.contextEntries.find((e) => {
      const m: any = e.messages[0];
      if (e.sourceEntry.type !== "message" || m?.role !== "toolResult") return false;
      return m.content.map((b: any) => (b.type === "text" ? b.text : "")).join("").length > 5000;
    });
    const jev = ctx.modelRegistry.findOfType("classifier", "openrouter", "~typesafe/jev-latest");
    const r = jev
      ? await ctx.modelRegistry.classify(jev, { state: { text: "x" }, questions: { q: { type: "bool", instructions: "q", criteria: { true: "t", false: "f" } } } }, { maxRetries: 0, timeoutMs: 5000 })
      : undefined;
    writeFileSync(process.env.PROBE_OUT!, JSON.stringify({ target: target?.sourceEntry.id, stopReason: r?.stopReason, error: r?.errorMessage, answers: r?.answers }) + "\\n", { flag: "a" });
    if (!target) return;
    return { entries: [...event.entries, { type: "context_edit", targetId: target.sourceEntry.id, replacement: { content: [{ type: "text", text: "[probe] replaced" }] } }] };
  });
}
`;

describe("pi CLI against the fake OpenAI server", () => {
  let fake: FakeOpenAI;
  let lb: LoopbackClassifier;
  let agentDir: string;
  let work: string;
  beforeAll(async () => {
    fake = await startFakeOpenAI(({ messages, format }) => {
      // OpenAI: tool results are {role:"tool"}; Anthropic: user messages holding {type:"tool_result"} blocks.
      const isTool = (m: WireJson): boolean =>
        format === "openai"
          ? m.role === "tool"
          : m.role === "user" && Array.isArray(m.content) && m.content.some((b: WireJson) => b.type === "tool_result");
      if (isTool(messages.at(-1))) return { text: "done" };
      if (messages.some(isTool)) return { text: "second answer" };
      return { toolCalls: [{ name: "bash", arguments: { command: "seq 1 3000" } }] };
    });
    lb = await startLoopbackClassifier({ policy: keywordPolicy(/x/) });
    agentDir = await makeAgentDir({
      mainBaseUrl: fake.baseUrl,
      anthropicBaseUrl: fake.anthropicBaseUrl,
      classifierBaseUrl: lb.baseUrl,
    });
    work = await mkdtemp(join(tmpdir(), "cg-cli-"));
    await writeFile(join(work, "probe.ts"), CLI_PROBE);
  });
  afterAll(async () => {
    await fake.close();
    await lb.close();
    await removeAgentDir(agentDir);
    await rm(work, { recursive: true, force: true });
  });

  it("runs two prompts: bash, the settle edit, and the edit reaching the next request", async () => {
    const out = join(work, "probe.jsonl");
    const res = await runPiCli(
      ["-p", "-ne", "--no-session", "--model", FAKE_MODEL, "-e", join(work, "probe.ts"), "run it", "again"],
      { PI_CODING_AGENT_DIR: agentDir, PROBE_OUT: out },
      { cwd: work, timeoutMs: 20_000 },
    );
    expect(res.code, res.stderr).toBe(0);
    expect(res.stderr).not.toMatch(/Extension error/);
    expect(res.stdout).toContain("second answer"); // print mode prints the last prompt's final text
    expect(fake.requests).toHaveLength(3);
    expect(fake.requests[0].model).toBe("fake-model");
    expect(fake.requests[0].tools.map((t: WireJson) => t.function.name)).toContain("bash");
    const toolMsg = (i: number) => fake.requests[i].messages.find((m: WireJson) => m.role === "tool");
    expect(String(toolMsg(1).content)).toContain("2999");
    expect(toolMsg(2).content).toContain("[probe] replaced");

    const lines = (await readFile(out, "utf8")).trim().split("\n");
    const records = lines.map((l) => JSON.parse(l) as { target?: string; stopReason?: string });
    expect(records).toHaveLength(2);
    expect(records[0]?.target).toBeTruthy();
    expect(records[0]?.stopReason).toBe("stop");
    expect(records[1]?.target).toBeUndefined();
    expect(lb.requests).toHaveLength(2);
  });

  it("serves the Anthropic format too", async () => {
    const before = fake.requests.length;
    const res = await runPiCli(
      ["-p", "-ne", "--no-session", "--model", FAKE_ANTHROPIC_MODEL, "run it"],
      { PI_CODING_AGENT_DIR: agentDir },
      { cwd: work, timeoutMs: 20_000 },
    );
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toContain("done");
    const mine = fake.log.slice(before);
    expect(mine.map((r) => r.format)).toEqual(["anthropic", "anthropic"]);
    expect(mine[0]?.body.model).toBe("claude-fake");
    expect(JSON.stringify(mine[1]?.messages)).toContain("2999");
  });
});
