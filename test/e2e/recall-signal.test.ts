// Recall as a signal, in the real Pi: the model recalls a removed output a second time in a run (or once,
// whole), and at the next boundary the guard restores it where it was and pins it; the recall results that
// copied it become one-line notes, and no later pass judges any of them.
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TranscriptContext } from "@earendil-works/pi-ai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PIN_TYPE } from "../../src/core/records/pins.ts";
import type { GuardRecord } from "../../src/core/shared/types.ts";
import { dropAllPolicy, EXTENSION, grepText } from "../kit/fault-session.ts";
import { type LoopbackClassifier, startLoopbackClassifier } from "../kit/loopback-classifier.ts";
import { contentText as textOf } from "../kit/pi-messages.ts";
import { createTestSession, type FauxResponse, type TestSession } from "../kit/sdk-session.ts";

type Messages = TranscriptContext["messages"];

const resultOf = (messages: Messages, callId: string) =>
  textOf(messages.find((m) => m.role === "toolResult" && m.toolCallId === callId)?.content);
const recallResults = (messages: Messages) =>
  messages.filter((m) => m.role === "toolResult" && m.toolName === "recall").map((m) => textOf(m.content));

const A = grepText(20, "a");
const B = grepText(10, "b");

let classifier: LoopbackClassifier;
let agentDir: string;

beforeAll(async () => {
  classifier = await startLoopbackClassifier({ policy: dropAllPolicy });
  agentDir = await mkdtemp(join(tmpdir(), "cg-recall-signal-"));
});
afterAll(async () => classifier.close());

describe("a recall repeated in a run restores the entry", () => {
  let s: TestSession;
  const seen: Messages[] = [];
  const ids: Record<"a" | "b" | "callA" | "callB", string> = { a: "", b: "", callA: "", callB: "" };
  const look =
    (reply: (m: Messages) => FauxResponse): FauxResponse =>
    (context) => {
      seen.push(structuredClone(context.messages));
      return reply(context.messages) as never;
    };
  afterAll(async () => s?.dispose());

  it("restores after the second recall, and turns both recall results into notes", async () => {
    const configPath = join(agentDir, "guard.json");
    await writeFile(configPath, JSON.stringify({ telemetry: false, midRun: false, pruneExchanges: false }));
    process.env.PI_CONTEXT_GUARD_CONFIG = configPath;
    const recall = (args: Record<string, string>): FauxResponse => ({
      toolCalls: [{ name: "recall", arguments: args }],
    });
    s = await createTestSession({
      agentDir,
      extensionPaths: [EXTENSION],
      classifierBaseUrl: classifier.baseUrl,
      responses: [
        {
          toolCalls: [
            { name: "bash", arguments: { command: "cat a.txt" } },
            { name: "bash", arguments: { command: "cat b.txt" } },
          ],
        },
        "nothing here",
        look(() => recall({ entryId: ids.a, pattern: "a1/" })),
        look(() => recall({ entryId: ids.a, pattern: "a2/" })),
        look(() => "done"),
        look(() => recall({ entryId: ids.b })),
        look(() => "done again"),
      ],
    });
    await writeFile(join(s.cwd, "a.txt"), A);
    await writeFile(join(s.cwd, "b.txt"), B);
    await s.session.prompt("Look at both files");
    const results = s.session.sessionManager
      .getBranch()
      .filter((e) => e.type === "message" && e.message.role === "toolResult") as unknown as Array<{
      id: string;
      message: { toolCallId: string };
    }>;
    ids.a = results[0]?.id ?? "";
    ids.callA = results[0]?.message.toolCallId ?? "";
    ids.b = results[1]?.id ?? "";
    ids.callB = results[1]?.message.toolCallId ?? "";

    await s.session.prompt("Which files under a1 and a2?");
    // One recall with a pattern is no signal: the second request still shows the stub.
    expect(resultOf(seen[1] as Messages, ids.callA)).toMatch(/^\[context-guard\]/);
    // After the second, the next request has the original where it was, and both recalls as notes.
    const after = seen[2] as Messages;
    expect(resultOf(after, ids.callA)).toBe(A);
    const notes = recallResults(after);
    expect(notes).toHaveLength(2);
    for (const n of notes)
      expect(n).toMatch(new RegExp(`^\\[context-guard\\] This recall of ${ids.a} is no longer needed`));
    const pin = s.session.sessionManager.getBranch().find((e) => e.type === "custom" && e.customType === PIN_TYPE) as {
      data?: { ids: string[]; notes: string[] };
    };
    expect(pin?.data?.ids).toEqual([ids.a]);
    expect(pin?.data?.notes).toHaveLength(2);
  });

  it("restores an entry recalled whole once, and later passes judge none of them", async () => {
    await s.session.prompt("Show me b whole");
    expect(resultOf(seen[4] as Messages, ids.callB)).toBe(B);
    expect(recallResults(seen[4] as Messages).at(-1)).toMatch(/This recall of .* no longer needed: after 1 recall/);
    const records = s.session.sessionManager
      .getBranch()
      .filter((e) => e.type === "custom" && e.customType === "context-guard")
      .map((e) => (e as { data: GuardRecord }).data);
    const judgedLater = records.slice(1).flatMap((r) => r.results.map((x) => x.entryId));
    expect(judgedLater).not.toContain(ids.a);
    expect(judgedLater).not.toContain(ids.b);
    const notes = s.session.sessionManager
      .getBranch()
      .filter((e) => e.type === "custom" && e.customType === PIN_TYPE)
      .flatMap((e) => (e as { data: { notes: string[] } }).data.notes);
    for (const n of notes) expect(judgedLater).not.toContain(n);
  });
});
