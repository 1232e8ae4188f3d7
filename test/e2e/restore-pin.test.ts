// /guard list, restore and pin in the real Pi: a restore puts the original back into the very next
// request the main model receives (before any boundary, through Pi's context event), lands as a
// context_edit at the next boundary, and no later pass removes it again; a pin keeps an old exchange
// from being omitted while its unpinned twin is; both are read back when the session file is reopened.
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TranscriptContext } from "@earendil-works/pi-ai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PIN_TYPE } from "../../src/core/records/pins.ts";
import type { GuardRecord } from "../../src/core/shared/types.ts";
import { dropAllPolicy, EXTENSION, grepText } from "../kit/fault-session.ts";
import { capturingUi } from "../kit/hook-probe.ts";
import { type LoopbackClassifier, startLoopbackClassifier } from "../kit/loopback-classifier.ts";
import { createTestSession, type FauxResponse, type TestSession } from "../kit/sdk-session.ts";

type Messages = TranscriptContext["messages"];

const textOf = (content: unknown): string =>
  typeof content === "string"
    ? content
    : Array.isArray(content)
      ? content
          .filter((b) => b?.type === "text")
          .map((b) => b.text)
          .join("\n")
      : "";

/** The text the model saw for the tool result answering call `callId`, or undefined when it was omitted. */
const resultSeen = (messages: Messages, callId: string) => {
  const m = messages.find((x) => x.role === "toolResult" && x.toolCallId === callId);
  return m ? textOf(m.content) : undefined;
};
const promptSeen = (messages: Messages, text: string) =>
  messages.some((m) => m.role === "user" && textOf(m.content).startsWith(text));

const OUTPUT = grepText(24, "a");
const OTHER = grepText(12, "b");
const LONG = (tag: string) => `${tag}: ${"the counts are fine and nothing else changed. ".repeat(60)}`;

let classifier: LoopbackClassifier;
let agentDir: string;
let sessionDir: string;
let configPath: string;

beforeAll(async () => {
  classifier = await startLoopbackClassifier({ policy: dropAllPolicy });
  agentDir = await mkdtemp(join(tmpdir(), "cg-restore-agent-"));
  sessionDir = await mkdtemp(join(tmpdir(), "cg-restore-sessions-"));
  configPath = join(agentDir, "guard.json");
  // Every old exchange is judged at once, whatever it saves: the test is about which ones are left alone.
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
});
afterAll(async () => classifier.close());

async function open(responses: FauxResponse[], sessionFile?: string, cwd?: string): Promise<TestSession> {
  process.env.PI_CONTEXT_GUARD_CONFIG = configPath;
  return createTestSession({
    agentDir,
    extensionPaths: [EXTENSION],
    classifierBaseUrl: classifier.baseUrl,
    responses,
    sessionDir,
    ...(sessionFile ? { sessionFile } : {}),
    ...(cwd ? { cwd } : {}),
  });
}

const bash = (command: string): FauxResponse => ({ toolCalls: [{ name: "bash", arguments: { command } }] });

describe("/guard restore and /guard pin in the real Pi", () => {
  let s: TestSession;
  let file: string;
  let cwd: string;
  const ids = {} as Record<"a" | "callA" | "third", string>;
  const seen: Record<string, Messages> = {};
  const capture =
    (name: string, reply: FauxResponse): FauxResponse =>
    (context) => {
      seen[name] = structuredClone(context.messages);
      return typeof reply === "function" ? reply(context, { index: 0 } as never) : reply;
    };
  afterAll(async () => s?.dispose());

  it("lists what the run-end pass took out, with sizes, the run and why in words", async () => {
    s = await open([
      bash("cat results.txt"),
      "target_fn is nowhere.",
      bash("cat other.txt"),
      LONG("logs"),
      capture("afterRestore", LONG("first count")),
      LONG("second count"),
      capture("afterPin", "ok"),
    ]);
    cwd = s.cwd;
    await writeFile(join(cwd, "results.txt"), OUTPUT);
    await writeFile(join(cwd, "other.txt"), OTHER);
    await s.session.prompt("Where is target_fn defined?");
    await s.session.prompt("List the logs");
    const branch = s.session.sessionManager.getBranch();
    const results = branch.filter((e) => e.type === "message" && e.message.role === "toolResult");
    ids.a = results[0]?.id as string;
    ids.callA = (results[0] as { message: { toolCallId: string } }).message.toolCallId;
    const records = branch.filter((e) => e.type === "custom" && e.customType === "context-guard");
    expect((records[0] as { data: GuardRecord }).data.results[0]).toMatchObject({ entryId: ids.a, outcome: "removed" });

    const { ui, notices } = capturingUi();
    s.session.extensionRunner.setUIContext(ui, "rpc");
    await s.session.prompt("/guard list");
    const list = notices.at(-1)?.message ?? "";
    expect(list).toContain("out of context on this branch, newest first");
    expect(list).toMatch(
      new RegExp(`${ids.a}  large output · bash \`cat results.txt\` · 24\\.\\dk → \\d+ chars · run 1, at its end`),
    );
    expect(list).toContain("judged not needed by the classifier (90% sure)");
    expect(list).not.toContain("focus=");
  });

  it("answers bad arguments with a clear message and appends nothing", async () => {
    const { ui, notices } = capturingUi();
    s.session.extensionRunner.setUIContext(ui, "rpc");
    const before = s.session.sessionManager.getBranch().length;
    const record = s.session.sessionManager
      .getBranch()
      .find((e) => e.type === "custom" && e.customType === "context-guard")?.id as string;
    const prompt = s.session.sessionManager.getBranch().find((e) => e.type === "message" && e.message.role === "user")
      ?.id as string;
    for (const cmd of ["restore", "restore nope1234", `restore ${prompt}`, `pin ${record}`, "pin"]) {
      await s.session.prompt(`/guard ${cmd}`);
    }
    expect(notices.map((n) => n.message)).toEqual([
      "context-guard: /guard restore needs an entry id (see /guard list)",
      'context-guard: no entry "nope1234" on this branch; /guard list shows the ids of what can be restored',
      `context-guard: ${prompt} was not taken out by context-guard; it is in context as it is: nothing to restore`,
      `context-guard: ${record} is a custom entry, not a message: only messages are judged`,
      "context-guard: /guard pin needs an entry id (see /guard list)",
    ]);
    expect(notices.every((n) => n.type === "warning")).toBe(true);
    expect(s.session.sessionManager.getBranch().length).toBe(before);
  });

  it("puts the original into the next request at once, then lands it as an edit at the boundary", async () => {
    const { ui, notices, statuses } = capturingUi();
    s.session.extensionRunner.setUIContext(ui, "rpc");
    await s.session.prompt(`/guard restore ${ids.a}`);
    expect(notices.at(-1)?.message).toMatch(/^context-guard: restored bash `cat results.txt` \(24\.\dk chars\)/);
    expect(statuses.at(-1)).toMatch(/↺1 restored/);
    const pin = s.session.sessionManager.getBranch().at(-1) as { customType?: string; data?: unknown };
    expect(pin).toMatchObject({ customType: PIN_TYPE, data: { v: 1, action: "restore", ids: [ids.a] } });

    await s.session.prompt("Count the lines");
    // The first request of the run, before any boundary: the original, whole.
    expect(resultSeen(seen.afterRestore as Messages, ids.callA)).toBe(OUTPUT);
    const edits = s.session.sessionManager.getBranch().filter((e) => e.type === "context_edit");
    const last = edits.filter((e) => (e as { targetId: string }).targetId === ids.a).at(-1) as {
      replacement: { content: unknown };
    };
    expect(textOf(last.replacement.content)).toBe(OUTPUT);
    ids.third = s.session.sessionManager
      .getBranch()
      .filter((e) => e.type === "message" && e.message.role === "user")
      .at(-1)?.id as string;
  });

  it("keeps a pinned exchange while its unpinned twin is omitted, and never removes the restored output", async () => {
    const { ui, notices } = capturingUi();
    s.session.extensionRunner.setUIContext(ui, "rpc");
    await s.session.prompt(`/guard pin ${ids.third}`);
    expect(notices.at(-1)?.message).toBe(`context-guard: pinned ${ids.third}; no pass judges it again`);
    await s.session.prompt("Count them again");
    await s.session.prompt("Anything else?");

    const messages = seen.afterPin as Messages;
    expect(resultSeen(messages, ids.callA)).toBe(OUTPUT);
    expect(promptSeen(messages, "Count the lines")).toBe(true);
    // The last pass judged the twin (omitted), never the pinned exchange nor the restored output.
    const records = s.session.sessionManager
      .getBranch()
      .filter((e) => e.type === "custom" && e.customType === "context-guard")
      .map((e) => (e as { data: GuardRecord }).data);
    const judgedAfter = records.slice(2).flatMap((r) => r.results.map((x) => x.entryId));
    expect(judgedAfter).not.toContain(ids.a);
    expect(judgedAfter).not.toContain(ids.third);
    const twin = records.at(-1)?.results.find((r) => r.kind === "exchange" && r.label.startsWith("Count them again"));
    expect(twin).toMatchObject({ outcome: "removed", reason: "unrelated" });
    file = s.session.sessionManager.getSessionFile() as string;
    expect(file).toBeTruthy();
  });

  it("reads both back from the reopened session file, and later passes still leave them alone", async () => {
    await s.dispose();
    let reopened: Messages = [];
    s = await open(
      [
        (context) => {
          reopened = structuredClone(context.messages);
          return "fine";
        },
      ],
      file,
      cwd,
    );
    const { ui, notices, statuses } = capturingUi();
    s.session.extensionRunner.setUIContext(ui, "rpc");
    await s.session.prompt("/guard list");
    const list = notices.at(-1)?.message ?? "";
    expect(list).toContain("old exchange · Count them again");
    expect(list).not.toContain(`${ids.a}  large output`);
    expect(list).toContain(`restored: 1 (${ids.a}) · pinned: 1 (${ids.third}); never judged again`);
    await s.session.prompt("/guard");
    expect(notices.at(-1)?.message).toContain("You restored 1 item and pinned 1 entry");
    await s.session.prompt("One more question");
    expect(resultSeen(reopened, ids.callA)).toBe(OUTPUT);
    expect(promptSeen(reopened, "Count the lines")).toBe(true);
    expect(promptSeen(reopened, "Count them again")).toBe(false);
    expect(statuses.at(-1)).toMatch(/↺1 restored · 📌1 pinned/);
  });
});
