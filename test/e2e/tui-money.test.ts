// The live dollars and `/guard` in Pi's real TUI, driven through tmux as a person would: after a pass and
// a later prompt the footer leads with the dollars saved, `/guard` says it in plain words within 100
// columns on a wider terminal, and `/guard list` marks an item the user pinned.
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeOpenAI, startFakeOpenAI } from "../kit/fake-openai.ts";
import { keywordPolicy, type LoopbackClassifier, startLoopbackClassifier } from "../kit/loopback-classifier.ts";
import { FAKE_MODEL, makeAgentDir, NODE_BIN, PI_BIN, REPO_ROOT } from "../kit/pi-agent-dir.ts";
import { startTmux, type TmuxSession } from "../kit/tmux.ts";

const EXTENSION = join(REPO_ROOT, "src/main/index.ts");
const WIDTH = 140;

let classifier: LoopbackClassifier;
let main: FakeOpenAI;
let cwd: string;
let agentDir: string;

beforeAll(async () => {
  classifier = await startLoopbackClassifier({ policy: keywordPolicy(/needle/) });
  main = await startFakeOpenAI((req) =>
    req.messages.at(-1)?.role === "user"
      ? { toolCalls: [{ name: "bash", arguments: { command: "cat out.txt" } }] }
      : { text: "needle is in lib/f5.ts" },
  );
  cwd = await mkdtemp(join(tmpdir(), "cg-tui-money-"));
  const lines = Array.from(
    { length: 400 },
    (_, i) => `lib/f${i % 30}.ts:${i}:${i === 5 ? "needle" : "other"} line ${i}`,
  );
  await writeFile(join(cwd, "out.txt"), lines.join("\n"));
  agentDir = await makeAgentDir({
    mainBaseUrl: main.baseUrl,
    classifierBaseUrl: classifier.baseUrl,
    guardConfig: { telemetry: false, midRun: false },
    // The fake main model with a price, so the guard's savings are dollars.
    extraProviders: {
      fake: {
        baseUrl: main.baseUrl,
        api: "openai-completions",
        apiKey: "fake-key",
        models: [
          {
            id: "fake-model",
            name: "Fake",
            contextWindow: 128000,
            maxTokens: 4096,
            cost: { input: 15, output: 75, cacheRead: 1.5, cacheWrite: 18.75 },
          },
        ],
      },
    },
  });
});
afterAll(async () => {
  await classifier.close();
  await main.close();
});

/** Runs a slash command; the editor's completion may take the first Enter, so press again if still typed. */
async function command(tui: TmuxSession, text: string, shows: RegExp): Promise<string> {
  await tui.type(text);
  await tui.keys("Enter");
  return tui.waitFor(shows, 5_000).catch(async () => {
    if ((await tui.screen()).includes(text)) await tui.keys("Enter");
    return tui.waitFor(shows, 30_000);
  });
}

describe("dollars and /guard in the TUI", () => {
  let tui: TmuxSession | undefined;
  afterAll(async () => tui?.close());

  it("shows the dollars saved after a pass, /guard in words within 100 columns, and a pinned item marked", async () => {
    tui = await startTmux({
      command: [NODE_BIN, PI_BIN, "-ne", "--no-session", "--model", FAKE_MODEL, "-e", EXTENSION],
      cwd,
      width: WIDTH,
      env: { PI_CODING_AGENT_DIR: agentDir, PI_OFFLINE: "1", PI_CONTEXT_GUARD_CONFIG: "", TERM: "xterm-256color" },
    });
    await tui.waitFor(/🛡 0 saved/, 60_000);
    await tui.type("where is needle?");
    await tui.keys("Enter");
    // The pass took the output out; no request has carried the edit yet: so far the classifier cost more.
    await tui.waitFor(/🛡 cost \$\S+ more so far · −\S+ · 1/, 60_000);
    await tui.type("and again?");
    await tui.keys("Enter");
    const footer = await tui.waitFor(/🛡 \$\S+ saved · −\S+ · 2/, 60_000);
    const shown = Number(/🛡 \$(\S+) saved/.exec(footer)?.[1]);
    expect(shown).toBeGreaterThan(0);

    const status = await command(tui, "/guard", /More: \/guard list/);
    expect(status).toMatch(/context-guard is on · classifier openrouter\/~typesafe\/jev-latest/);
    expect(status).toMatch(/Saved so far: \$\S+, after the classifier's \$\S+ \(≈\S+ prompt tokens not sent\)\./);
    expect(status).toMatch(/Now: \S+ tokens kept out of the context \(2 items\)\./);
    expect(status).toMatch(/Last pass \(just now, end of a run\): replaced 1 item/);
    expect(status).not.toMatch(/kw\.|focus=|\(s\)/);
    // Every line of the report within 100 columns on a 140-column terminal.
    const report = status.slice(status.indexOf("context-guard is on"), status.indexOf("/guard stats.") + 13);
    for (const line of report.split("\n")) expect(line.trimEnd().length).toBeLessThanOrEqual(100);

    // Pin the newest item from the picker; the list then marks it.
    await command(tui, "/guard list", /Out of context on this branch \(2\)/);
    await tui.keys("Enter");
    await tui.waitFor(/pin \(keep it as it is, never judged again\)/, 30_000);
    await tui.keys("Down", "Enter");
    await tui.waitFor(/📌1 pinned/, 30_000);
    const list = await command(tui, "/guard list", /Out of context on this branch \(2\)/);
    expect(list).toMatch(/📌 \S+\s+large output · bash `cat out\.txt`/);
    expect(list).toMatch(/pinned: never judged again/);
    await tui.keys("Escape");
  }, 240_000);
});
