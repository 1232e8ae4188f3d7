// Skill routing and tool surfacing end to end in the real Pi (SDK session, faux main model): skills in a
// temp agent dir, the extension loaded through Pi's loader, and the real pi-ai System One client talking
// to a loopback classifier that scores by keyword.
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { getCurrentSystemPrompt, getCurrentTools, type TranscriptContext } from "@earendil-works/pi-ai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LoopbackClassifier, startLoopbackClassifier, stateObject } from "../kit/loopback-classifier.ts";
import { browserTools, routingPolicy, SKILLS, writeSkills } from "../kit/routing-fixtures.ts";
import { createTestSession, type TestSession } from "../kit/sdk-session.ts";

const EXTENSION = resolve(import.meta.dirname, "../../src/main/index.ts");

type Messages = TranscriptContext["messages"];
const systemPrompt = (m: Messages) => getCurrentSystemPrompt(m);
const toolNames = (m: Messages) => getCurrentTools(m).map((t) => t.name);
const systemMessages = (m: Messages) => m.filter((x) => x.role === "system").length;

let classifier: LoopbackClassifier;
let agentDir: string;
let telemetryFile: string;

beforeAll(async () => {
  classifier = await startLoopbackClassifier({ policy: routingPolicy });
  agentDir = await mkdtemp(join(tmpdir(), "cg-e2e-route-"));
  await writeSkills(agentDir);
  telemetryFile = join(agentDir, "context-guard-telemetry.jsonl");
});
afterAll(async () => {
  await classifier.close();
});

async function open(
  config: Record<string, unknown>,
  opts: {
    classifierBaseUrl?: string;
    extension?: boolean;
    responses?: Parameters<typeof createTestSession>[0]["responses"];
  } = {},
): Promise<TestSession> {
  const configPath = join(agentDir, `guard-${Math.random().toString(36).slice(2)}.json`);
  await writeFile(configPath, JSON.stringify(config));
  process.env.PI_CONTEXT_GUARD_CONFIG = configPath;
  process.env.PI_CODING_AGENT_DIR = agentDir;
  return createTestSession({
    agentDir,
    extensionPaths: opts.extension === false ? [] : [EXTENSION],
    extensionFactories: [browserTools],
    classifierBaseUrl: opts.classifierBaseUrl ?? classifier.baseUrl,
    skillPaths: [join(agentDir, "skills")],
    responses: opts.responses ?? [],
  });
}

async function telemetry(): Promise<Array<Record<string, unknown>>> {
  const text = await readFile(telemetryFile, "utf8").catch(() => "");
  return text
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

const GUARD = {
  toolNamespaces: { browser: { prefix: "browser_", description: "Headless web browser" } },
  midRun: false,
};

describe("skill routing and tool surfacing in the real Pi", () => {
  let s: TestSession;
  afterAll(async () => s?.dispose());

  it("a prompt about one domain loads that skill; the request no longer advertises the others", async () => {
    const before = classifier.requests.length;
    s = await open(GUARD, { responses: ["Split done."] });
    await s.session.prompt("The PDF export of report.pdf is broken; split it into single pages.");
    const seen = s.contexts[0] as Messages;
    const prompt = systemPrompt(seen);
    expect(prompt).toContain("<loaded_skills>");
    expect(prompt).toContain(`<skill name="pdf-tools" location="${join(agentDir, "skills/pdf-tools/SKILL.md")}">`);
    expect(prompt).toContain("Use `qpdf --split-pages` to split a document.");
    expect(prompt).not.toContain("<available_skills>");
    expect(prompt).not.toContain("docker-ops");
    expect(prompt).not.toContain("k8s-deploy");
    expect(prompt).not.toContain("Kubernetes");
    // The browser namespace scored low: its tools are not declared.
    expect(toolNames(seen)).toEqual(expect.arrayContaining(["read", "bash", "edit", "write", "recall"]));
    expect(toolNames(seen).filter((n) => n.startsWith("browser_"))).toEqual([]);

    // Every skill was judged once with its full body; the namespaces in one batched request.
    const asked = classifier.requests.slice(before).map((b) => stateObject(b));
    const skillStates = asked.filter((st) => st.skill) as Array<{ skill: { name: string; instructions: string } }>;
    expect(skillStates.map((st) => st.skill.name).sort()).toEqual(Object.keys(SKILLS).sort());
    for (const st of skillStates) expect(st.skill.instructions).toBe((SKILLS[st.skill.name]?.body ?? "").trim());
    expect(asked.filter((st) => st.tool_groups)).toHaveLength(1);
    expect(asked[0]?.latest_request).toBe("The PDF export of report.pdf is broken; split it into single pages.");
  });

  it("keeps the injected bytes identical at the next boundary when nothing changes", async () => {
    s.addResponses("Numbering fixed.");
    await s.session.prompt("Now fix the page numbering in that pdf as well.");
    const [first, second] = [s.contexts[0] as Messages, s.contexts[1] as Messages];
    expect(systemPrompt(second)).toBe(systemPrompt(first));
    expect(systemMessages(second)).toBe(1); // no patch was appended
    expect(JSON.stringify(getCurrentTools(second))).toBe(JSON.stringify(getCurrentTools(first)));
  });

  it("surfaces a hidden namespace after the model calls one of its tools (a miss)", async () => {
    s.addResponses(
      { toolCalls: [{ name: "browser_open", arguments: { url: "http://localhost/report" } }] },
      "I could not open it.",
      (context) => (toolNames(context.messages).includes("browser_open") ? "Opened." : "still hidden"),
    );
    await s.session.prompt("Open the report and compare the totals.");
    const missResult = s.contexts
      .at(-1)
      ?.filter((m) => m.role === "toolResult")
      .at(-1) as {
      content: Array<{ text: string }>;
    };
    expect(missResult.content[0]?.text).toBe("Tool browser_open not found");
    await s.session.prompt("Try again.");
    const after = s.contexts.at(-1) as Messages;
    expect(toolNames(after)).toEqual(expect.arrayContaining(["browser_open", "browser_click"]));
    const last = s.session.messages.at(-1) as { role: string; content: Array<{ text?: string }> };
    expect(last.content[0]?.text).toBe("Opened.");

    await new Promise((r) => setTimeout(r, 50));
    const events = await telemetry();
    expect(events.find((e) => e.type === "miss")).toMatchObject({ tool: "browser_open", namespace: "browser" });
    const surface = events.filter((e) => e.type === "surface");
    expect(surface.at(-1)).toMatchObject({ forced: ["browser"], surfaced: ["browser"], changed: true });
    const route = events.filter((e) => e.type === "route");
    expect(route[0]).toMatchObject({ mode: "routed", source: "fresh", loaded: [{ name: "pdf-tools", score: 0.93 }] });
    // No text in telemetry: not the prompt, not the skill body.
    const raw = await readFile(telemetryFile, "utf8");
    expect(raw).not.toContain("PDF export");
    expect(raw).not.toContain("qpdf");
  });

  it("/skill:name pins the skill: it stays advertised and is never scored", async () => {
    const before = classifier.requests.length;
    s.addResponses("Deployed.");
    await s.session.prompt("/skill:k8s-deploy roll out the new build");
    const after = classifier.requests.slice(before).map((b) => stateObject(b));
    expect(after.some((st) => (st.skill as { name?: string } | undefined)?.name === "k8s-deploy")).toBe(false);
    expect(after[0]?.latest_request).toBe("roll out the new build");
    const prompt = systemPrompt(s.contexts.at(-1) as Messages);
    expect(prompt).toContain("<name>k8s-deploy</name>");
    expect(prompt).not.toContain("<name>docker-ops</name>");
  });
});

describe("fail-static", () => {
  it("with the classifier down, the model sees exactly what Pi shows without the extension", async () => {
    const down = await startLoopbackClassifier();
    const deadUrl = down.baseUrl;
    await down.close(); // nothing listens there any more
    const responses = ["one", "two", "three"];
    const guarded = await open(GUARD, { classifierBaseUrl: deadUrl, responses: [...responses] });
    const plain = await open(GUARD, { classifierBaseUrl: deadUrl, extension: false, responses: [...responses] });
    try {
      for (const p of ["Split report.pdf", "Open the browser", "Deploy to the cluster"]) {
        await guarded.session.prompt(p);
        await plain.session.prompt(p);
      }
      expect(guarded.contexts).toHaveLength(3);
      for (let i = 0; i < 3; i++) {
        const g = guarded.contexts[i] as Messages;
        const p = plain.contexts[i] as Messages;
        expect(systemPrompt(g).replace(guarded.cwd, "<cwd>")).toBe(systemPrompt(p).replace(plain.cwd, "<cwd>"));
        expect(toolNames(g).filter((n) => n !== "recall")).toEqual(toolNames(p));
        expect(systemMessages(g)).toBe(systemMessages(p));
      }
      expect(systemPrompt(guarded.contexts[2] as Messages)).toContain("<available_skills>");
      expect(toolNames(guarded.contexts[2] as Messages)).toContain("browser_open");
      await new Promise((r) => setTimeout(r, 50));
      const degraded = (await telemetry()).filter((e) => e.type === "degraded" && e.class === "failed");
      expect(degraded.length).toBeGreaterThanOrEqual(1);
    } finally {
      await guarded.dispose();
      await plain.dispose();
    }
  });

  it.each([
    ["no key for the classifier's provider", "typesafe/jev-latest", "no-key"],
    ["a classifier that is not in Pi's catalog", "nope/none", "not-found"],
  ])("with %s nothing changes either", async (_what, model, problem) => {
    const savedKey = process.env.TYPESAFE_API_KEY;
    delete process.env.TYPESAFE_API_KEY;
    const s = await open({ ...GUARD, model }, { responses: ["ok"] });
    const plain = await open(GUARD, { extension: false, responses: ["ok"] });
    try {
      await s.session.prompt("Split report.pdf");
      await plain.session.prompt("Split report.pdf");
      const g = s.contexts[0] as Messages;
      const p = plain.contexts[0] as Messages;
      expect(systemPrompt(g).replace(s.cwd, "<cwd>")).toBe(systemPrompt(p).replace(plain.cwd, "<cwd>"));
      expect(toolNames(g).filter((n) => n !== "recall")).toEqual(toolNames(p));
      await new Promise((r) => setTimeout(r, 50));
      const degraded = (await telemetry()).filter((e) => e.type === "degraded" && e.class === problem);
      expect(degraded.length).toBeGreaterThanOrEqual(1);
    } finally {
      if (savedKey !== undefined) process.env.TYPESAFE_API_KEY = savedKey;
      await s.dispose();
      await plain.dispose();
    }
  });
});

describe("the deadline", () => {
  it("past routingTimeoutMs the first request goes out as Pi's default; the late answers apply at the next prompt", async () => {
    // Routing's answers are held until the main model has been asked: the prompt cannot have waited for them.
    let release = () => {};
    const hold = new Promise<void>((resolve) => {
      release = resolve;
    });
    const slow = await startLoopbackClassifier({ policy: routingPolicy, hold });
    const first = () => {
      release();
      return "a";
    };
    const s = await open({ ...GUARD, routingTimeoutMs: 150 }, { classifierBaseUrl: slow.baseUrl, responses: [first] });
    try {
      await s.session.prompt("Please split report.pdf");
      expect(systemPrompt(s.contexts[0] as Messages)).toContain("<available_skills>");
      // The late answers arrive; the next prompt, whose own answers are held in turn, uses them.
      await expect.poll(() => slow.answered > 0 && slow.answered === slow.requests.length).toBe(true);
      slow.set({ hold: new Promise(() => {}) });
      s.addResponses("b");
      await s.session.prompt("thanks");
      const second = systemPrompt(s.contexts[1] as Messages);
      expect(second).toContain('<skill name="pdf-tools"');
      expect(second).not.toContain("<available_skills>");
    } finally {
      await s.dispose();
      await slow.close();
    }
  });
});
