/**
 * Proves the test kit against the real Pi 1.6.0: an SDK session with a boundary-editing probe extension, and a CLI
 * run against the fake OpenAI server (the loopback System One server with pi-ai's own client is proven in
 * test/unit/kit/loopback-classifier.test.ts).
 */
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ClassifierContext } from "@earendil-works/pi-ai";
import type { ExtensionAPI, SessionBoundaryDraft } from "@earendil-works/pi-coding-agent";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeOpenAI, startFakeOpenAI, type WireJson } from "../kit/fake-openai.ts";
import { keywordPolicy, type LoopbackClassifier, startLoopbackClassifier } from "../kit/loopback-classifier.ts";
import { FAKE_ANTHROPIC_MODEL, FAKE_MODEL, makeAgentDir, removeAgentDir, runPiCli } from "../kit/pi-agent-dir.ts";
import { createTestSession } from "../kit/sdk-session.ts";

const boolQ = { type: "bool", instructions: "q", criteria: { true: "t", false: "f" } } as const;
const oneBool: ClassifierContext = { state: { text: "x" }, questions: { q: boolQ } };

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
