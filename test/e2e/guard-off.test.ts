// Issue 44, break 4, in the real Pi (an SDK session): what a run makes while the guard is off is never
// judged later, neither by the run ends after `/guard on` (the skipped-run rule, old exchanges) nor by a
// checkpoint, unless the user asks with `/guard judge`. The branch keeps the off span as switch entries.
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SWITCH_TYPE } from "../../src/core/records/off-spans.ts";
import { dropAllPolicy, EXTENSION, grepText } from "../kit/fault-session.ts";
import { capturingUi } from "../kit/hook-probe.ts";
import { type LoopbackClassifier, startLoopbackClassifier } from "../kit/loopback-classifier.ts";
import { createTestSession, type FauxResponse, type TestSession } from "../kit/sdk-session.ts";

const bash = (command: string): FauxResponse => ({ toolCalls: [{ name: "bash", arguments: { command } }] });
type Entry = { id: string; type: string; customType?: string; targetId?: string; message?: { role: string } };

let classifier: LoopbackClassifier;
let agentDir: string;

beforeAll(async () => {
  classifier = await startLoopbackClassifier({ policy: dropAllPolicy });
  agentDir = await mkdtemp(join(tmpdir(), "cg-off-agent-"));
  const configPath = join(agentDir, "guard.json");
  // Everything old is judged at once: exchanges from the first run on, with no money gate.
  await writeFile(
    configPath,
    JSON.stringify({
      telemetry: false,
      midRun: false,
      keepRecentExchanges: 0,
      exchangeBreakEven: false,
      exchangeMinSavingChars: 0,
    }),
  );
  process.env.PI_CONTEXT_GUARD_CONFIG = configPath;
});
afterAll(async () => classifier.close());

const branch = (s: TestSession) => s.session.sessionManager.getBranch() as unknown as Entry[];
const edited = (s: TestSession) => new Set(branch(s).flatMap((e) => (e.type === "context_edit" ? [e.targetId] : [])));
/** Whether any classifier request carried text of the off-time output (its files are named `offtag…`). */
const asked = () => classifier.requests.some((r) => JSON.stringify(r).includes("offtag"));

describe("/guard off, then on", () => {
  let s: TestSession;
  afterAll(async () => s?.dispose());

  it("never judges what a run made while the guard was off, until /guard judge", async () => {
    s = await createTestSession({
      agentDir,
      extensionPaths: [EXTENSION],
      classifierBaseUrl: classifier.baseUrl,
      strict: true,
      responses: [bash("cat on.txt"), "on.txt read.", bash("cat off.txt"), "off.txt read.", "hello", "fine", "ok"],
    });
    await writeFile(join(s.cwd, "on.txt"), grepText(24, "ontag"));
    await writeFile(join(s.cwd, "off.txt"), grepText(51, "offtag"));
    const ui = capturingUi();
    s.session.extensionRunner.setUIContext(ui.ui, "rpc");

    await s.session.prompt("Read on.txt");
    const onOutput = branch(s).filter((e) => e.message?.role === "toolResult")[0]?.id as string;
    expect(edited(s).has(onOutput)).toBe(true);

    await s.session.prompt("/guard off");
    const offPrompt = branch(s).length;
    await s.session.prompt("Read off.txt");
    const offRun = branch(s)
      .slice(offPrompt)
      .filter((e) => e.type === "message");
    const offOutput = offRun.find((e) => e.message?.role === "toolResult")?.id as string;
    expect(offOutput).toBeDefined();
    await s.session.prompt("/guard on");

    // Two run ends with the guard on: each would judge the off-time output (a skipped run) or its exchange.
    await s.session.prompt("Say hello");
    await s.session.prompt("And now?");
    expect(s.rejected).toEqual([]);
    for (const e of offRun) expect(edited(s).has(e.id)).toBe(false);
    expect(asked()).toBe(false);
    expect(branch(s).filter((e) => e.customType === SWITCH_TYPE).length).toBe(2);

    // Asked for, it is judged like the rest.
    await s.session.prompt("/guard judge");
    expect(ui.notices.at(-1)?.message).toMatch(/no longer held back/);
    await s.session.prompt("Anything else?");
    expect(asked()).toBe(true);
  });
});
