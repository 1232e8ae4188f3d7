// `/guard list` in Pi's real TUI, driven through tmux as a person would: the run-end pass takes an output
// out, the list shows it, restoring it from the picker says so, and the footer counts it.
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeOpenAI, startFakeOpenAI } from "../kit/fake-openai.ts";
import { keywordPolicy, type LoopbackClassifier, startLoopbackClassifier } from "../kit/loopback-classifier.ts";
import { FAKE_MODEL, makeAgentDir, NODE_BIN, PI_BIN, REPO_ROOT } from "../kit/pi-agent-dir.ts";
import { startTmux, type TmuxSession } from "../kit/tmux.ts";

const EXTENSION = join(REPO_ROOT, "src/main/index.ts");

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
  cwd = await mkdtemp(join(tmpdir(), "cg-tui-"));
  const lines = Array.from(
    { length: 400 },
    (_, i) => `lib/f${i % 30}.ts:${i}:${i === 5 ? "needle" : "other"} line ${i}`,
  );
  await writeFile(join(cwd, "out.txt"), lines.join("\n"));
  agentDir = await makeAgentDir({
    mainBaseUrl: main.baseUrl,
    classifierBaseUrl: classifier.baseUrl,
    guardConfig: { telemetry: false, midRun: false },
  });
});
afterAll(async () => {
  await classifier.close();
  await main.close();
});

describe("/guard list in the TUI", () => {
  let tui: TmuxSession | undefined;
  afterAll(async () => tui?.close());

  it("lists the distilled output, restores it from the picker, and the footer counts it", async () => {
    tui = await startTmux({
      command: [NODE_BIN, PI_BIN, "-ne", "--no-session", "--model", FAKE_MODEL, "-e", EXTENSION],
      cwd,
      env: { PI_CODING_AGENT_DIR: agentDir, PI_OFFLINE: "1", PI_CONTEXT_GUARD_CONFIG: "", TERM: "xterm-256color" },
    });
    await tui.waitFor(/🛡 0 saved/, 60_000);
    await tui.type("where is needle?");
    await tui.keys("Enter");
    await tui.waitFor(/🛡 −\S+ · 1/, 60_000);

    await tui.type("/guard list");
    await tui.keys("Enter");
    // The editor's completion may take the first Enter: press again only while the command is still typed.
    const picker = /Out of context on this branch \(1\)/;
    const t = tui;
    const screen = await t.waitFor(picker, 5_000).catch(async () => {
      if ((await t.screen()).includes("/guard list")) await t.keys("Enter");
      return t.waitFor(picker, 30_000);
    });
    expect(screen).toMatch(/large output · bash `cat out\.txt`\s+11\.\dk → \S+ chars · run 1, at its end/);
    expect(screen).toMatch(/why: the classifier kept the 1 of \d+ pieces it judged needed/);

    await tui.keys("Enter");
    await tui.waitFor(/restore \(put the original back, and pin it\)/, 30_000);
    await tui.keys("Enter");
    const after = await tui.waitFor(/↺1 restored/, 30_000);
    expect(after).toMatch(/context-guard: restored bash `cat out\.txt`/);
    expect(after).toMatch(/🛡 0 saved · ↺1 restored/);

    // The next request carries the whole original; the run end then takes out only the new output.
    const sent = main.requests.length;
    await tui.type("and again?");
    await tui.keys("Enter");
    await tui.waitFor(/🛡 −\S+ · 1 · ↺1 restored/, 60_000);
    const first = JSON.stringify(main.requests[sent]?.messages ?? []);
    expect(first).toContain("lib/f29.ts:389:other line 389");
  });
});
