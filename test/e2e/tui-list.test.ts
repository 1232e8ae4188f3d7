// `/guard list` in Pi's real TUI, driven through tmux as a person would: the run-end pass takes an output
// out, the list shows it, restoring it from the picker says so, and the footer counts it.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeAgentDir } from "../kit/pi-agent-dir.ts";
import { type NeedleWorld, startNeedleWorld, startPiTui, tuiCommand } from "../kit/pi-tui.ts";
import type { TmuxSession } from "../kit/tmux.ts";

let world: NeedleWorld;
let agentDir: string;

beforeAll(async () => {
  world = await startNeedleWorld("cg-tui-");
  agentDir = await makeAgentDir({
    mainBaseUrl: world.main.baseUrl,
    classifierBaseUrl: world.classifier.baseUrl,
    guardConfig: { telemetry: false, midRun: false },
  });
});
afterAll(async () => world.close());

describe("/guard list in the TUI", () => {
  let tui: TmuxSession | undefined;
  afterAll(async () => tui?.close());

  it("lists the distilled output, restores it from the picker, and the footer counts it", async () => {
    tui = await startPiTui({ agentDir, cwd: world.cwd });
    await tui.waitFor(/🛡 0 saved/, 60_000);
    await tui.type("where is needle?");
    await tui.keys("Enter");
    await tui.waitFor(/🛡 −\S+ · 1/, 60_000);

    const screen = await tuiCommand(tui, "/guard list", /Out of context on this branch \(1\)/);
    expect(screen).toMatch(/large output · bash `cat out\.txt`\s+11\.\dk → \S+ chars · run 1, at its end/);
    expect(screen).toMatch(/why: the classifier kept the 1 of \d+ pieces it judged needed/);

    await tui.keys("Enter");
    await tui.waitFor(/restore \(put the original back, and pin it\)/, 30_000);
    await tui.keys("Enter");
    const after = await tui.waitFor(/↺1 restored/, 30_000);
    expect(after).toMatch(/context-guard: restored bash `cat out\.txt`/);
    expect(after).toMatch(/🛡 0 saved · ↺1 restored/);

    // The next request carries the whole original; the run end then takes out only the new output.
    const sent = world.main.requests.length;
    await tui.type("and again?");
    await tui.keys("Enter");
    await tui.waitFor(/🛡 −\S+ · 1 · ↺1 restored/, 60_000);
    const first = JSON.stringify(world.main.requests[sent]?.messages ?? []);
    expect(first).toContain("lib/f29.ts:389:other line 389");
  });
});
