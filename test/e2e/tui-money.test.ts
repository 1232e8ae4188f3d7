// The live dollars and `/guard` in Pi's real TUI, driven through tmux as a person would: after a pass and
// a later prompt the footer leads with the dollars saved, `/guard` says it in plain words within 100
// columns on a wider terminal, and `/guard list` marks an item the user pinned.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeAgentDir } from "../kit/pi-agent-dir.ts";
import { type NeedleWorld, startNeedleWorld, startPiTui, tuiCommand } from "../kit/pi-tui.ts";
import type { TmuxSession } from "../kit/tmux.ts";

const WIDTH = 140;

let world: NeedleWorld;
let agentDir: string;

beforeAll(async () => {
  world = await startNeedleWorld("cg-tui-money-");
  agentDir = await makeAgentDir({
    mainBaseUrl: world.main.baseUrl,
    classifierBaseUrl: world.classifier.baseUrl,
    guardConfig: { telemetry: false, midRun: false },
    // The fake main model with a price, so the guard's savings are dollars.
    extraProviders: {
      fake: {
        baseUrl: world.main.baseUrl,
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
afterAll(async () => world.close());

describe("dollars and /guard in the TUI", () => {
  let tui: TmuxSession | undefined;
  afterAll(async () => tui?.close());

  it("shows the dollars saved after a pass, /guard in words within 100 columns, and a pinned item marked", async () => {
    tui = await startPiTui({ agentDir, cwd: world.cwd, width: WIDTH });
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

    const status = await tuiCommand(tui, "/guard", /More: \/guard list/);
    expect(status).toMatch(/context-guard is on · classifier openrouter\/~typesafe\/jev-latest/);
    expect(status).toMatch(/Saved so far: \$\S+, after the classifier's \$\S+ \(≈\S+ prompt tokens not sent\)\./);
    expect(status).toMatch(/Now: \S+ tokens kept out of the context \(2 items\)\./);
    expect(status).toMatch(/Last pass \(just now, end of a run\): replaced 1 item/);
    expect(status).not.toMatch(/kw\.|focus=|\(s\)/);
    // Every line of the report within 100 columns on a 140-column terminal.
    const report = status.slice(status.indexOf("context-guard is on"), status.indexOf("/guard stats.") + 13);
    for (const line of report.split("\n")) expect(line.trimEnd().length).toBeLessThanOrEqual(100);

    // Pin the newest item from the picker; the list then marks it.
    await tuiCommand(tui, "/guard list", /Out of context on this branch \(2\)/);
    await tui.keys("Enter");
    await tui.waitFor(/pin \(keep it as it is, never judged again\)/, 30_000);
    await tui.keys("Down", "Enter");
    await tui.waitFor(/📌1 pinned/, 30_000);
    const list = await tuiCommand(tui, "/guard list", /Out of context on this branch \(2\)/);
    expect(list).toMatch(/📌 \S+\s+large output · bash `cat out\.txt`/);
    expect(list).toMatch(/pinned: never judged again/);
    await tui.keys("Escape");
  }, 240_000);
});
