// The replay's routing says what the guard-on request carries; the real Pi with the extension sends it.
// A session runs in the real Pi (SDK session, faux main model, loopback classifier on the real wire
// format) and is persisted; the replay then routes the same session file over the same catalog with the
// same classifier, and its per-prompt view must equal what Pi sent: the advertised skills, the loaded
// skills' section and the declared tools.
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { getCurrentSystemPrompt, getCurrentTools, type TranscriptContext } from "@earendil-works/pi-ai";
import { ModelRegistry } from "@earendil-works/pi-coding-agent";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CONFIG } from "../../src/core/shared/config.ts";
import { classifierFor, findClassifier } from "../../src/main/pass/classifier.ts";
import { readSessionFile } from "../../src/main/replay/reader.ts";
import { loadRoutingCatalog } from "../../src/main/replay/routing-catalog.ts";
import { replayRouting } from "../../src/main/replay/routing-replay.ts";
import { type LoopbackClassifier, startLoopbackClassifier } from "../kit/loopback-classifier.ts";
import { browserTools, routingPolicy, writeSkills } from "../kit/routing-fixtures.ts";
import { createTestSession, type TestSession } from "../kit/sdk-session.ts";

const EXTENSION = resolve(import.meta.dirname, "../../src/main/index.ts");
type Messages = TranscriptContext["messages"];

const GUARD = {
  toolNamespaces: { browser: { prefix: "browser_", description: "Headless web browser" } },
  midRun: false,
};

/** The text between `<name>` and `</name>` in the system prompt, or undefined. */
function section(prompt: string, name: string): string | undefined {
  const m = new RegExp(`<${name}>\\n([\\s\\S]*?)\\n</${name}>`).exec(prompt);
  return m?.[1];
}

let classifier: LoopbackClassifier;
let agentDir: string;
let s: TestSession;

beforeAll(async () => {
  classifier = await startLoopbackClassifier({ policy: routingPolicy });
  agentDir = await mkdtemp(join(tmpdir(), "cg-e2e-route-replay-"));
  await writeSkills(agentDir);
  const configPath = join(agentDir, "guard.json");
  await writeFile(configPath, JSON.stringify(GUARD));
  process.env.PI_CONTEXT_GUARD_CONFIG = configPath;
});
afterAll(async () => {
  await s?.dispose();
  await classifier.close();
});

describe("the replay's guard-on request equals what the extension sends", () => {
  it("skills advertised, the loaded section and the declared tools, prompt by prompt", async () => {
    const sessionDir = join(agentDir, "sessions");
    s = await createTestSession({
      agentDir,
      extensionPaths: [EXTENSION],
      extensionFactories: [browserTools],
      classifierBaseUrl: classifier.baseUrl,
      skillPaths: [join(agentDir, "skills")],
      sessionDir,
      responses: [
        "Split done.",
        { toolCalls: [{ name: "browser_open", arguments: { url: "http://localhost/report" } }] },
        "I could not open it.",
        "Opened it now.",
        "Containers rebuilt.",
      ],
    });
    const prompts = [
      "The PDF export of report.pdf is broken; split it into single pages.",
      "Open the report and compare the totals.",
      "Try again in the browser.",
      "Rebuild the docker containers.",
    ];
    const firstContext: number[] = [];
    for (const p of prompts) {
      firstContext.push(s.contexts.length);
      await s.session.prompt(p);
    }
    const path = s.session.sessionManager.getSessionFile();
    expect(path).toBeDefined();

    const catalog = await loadRoutingCatalog({
      skillsDir: join(agentDir, "skills"),
      agentDir,
      cwd: s.cwd,
      config: { ...DEFAULT_CONFIG, ...GUARD },
    });
    // The extension's tools as Pi registered them: the catalog's tools file would list the same.
    const registered = s.session.getAllTools?.() ?? [];
    const browser = registered.filter((t: { name: string }) => t.name.startsWith("browser_"));
    expect(browser.map((t: { name: string }) => t.name).sort()).toEqual(["browser_click", "browser_open"]);
    const registry = new ModelRegistry(s.modelRuntime);
    const found = findClassifier(registry, DEFAULT_CONFIG.model);
    if (!found.ok) throw new Error(`no classifier: ${found.problem}`);
    const file = await readSessionFile(path as string);
    const replay = await replayRouting(file, {
      catalog: {
        skills: catalog?.skills ?? [],
        tools: browser.map((t: { name: string; description?: string; parameters?: unknown }) => ({
          name: t.name,
          description: t.description,
          parameters: t.parameters,
        })),
        namespaces: GUARD.toolNamespaces,
        source: "test",
        rejected: [],
      },
      classify: classifierFor(registry, found),
      config: { ...DEFAULT_CONFIG, ...GUARD },
    });

    expect(replay.sets).toHaveLength(prompts.length);
    replay.sets.forEach((set, i) => {
      const sent = s.contexts[firstContext[i] as number] as Messages;
      const prompt = getCurrentSystemPrompt(sent);
      const advertised = [...(section(prompt, "skills") ?? "").matchAll(/<name>([^<]+)<\/name>/g)].map((m) => m[1]);
      expect(set.catalog, `prompt ${i + 1}: advertised skills`).toEqual(advertised);
      expect(set.sectionChars, `prompt ${i + 1}: loaded skills`).toBe(section(prompt, "loaded_skills")?.length ?? 0);
      const tools = getCurrentTools(sent)
        .map((t) => t.name)
        .filter((n) => n.startsWith("browser_"));
      expect([...set.tools].sort(), `prompt ${i + 1}: declared tools`).toEqual(tools.sort());
    });
    // The session exercised what matters: a load, a hidden call then a surfaced namespace, a set change.
    expect(replay.sets[0]?.loaded).toEqual(["pdf-tools"]);
    expect(replay.sets[0]?.sectionChars).toBeGreaterThan(0);
    expect(replay.hiddenCalls).toBe(1);
    expect(replay.sets[2]?.tools.sort()).toEqual(["browser_click", "browser_open"]);
    expect(replay.changes).toBeGreaterThan(0);
  });
});
