// The recall signal's notes in the real Pi: an entry recalled twice in a run comes back, and the recall
// results that copied it become notes, but never a note longer than the result it replaces (a narrow
// recall that matched one line, or none, stays as it is).
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TranscriptContext } from "@earendil-works/pi-ai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dropAllPolicy, EXTENSION, grepText, shutdown } from "../kit/fault-session.ts";
import { type LoopbackClassifier, startLoopbackClassifier } from "../kit/loopback-classifier.ts";
import { contentText as textOf } from "../kit/pi-messages.ts";
import { createTestSession, type FauxResponse, type TestSession } from "../kit/sdk-session.ts";

type Messages = TranscriptContext["messages"];

const recallResults = (messages: Messages) =>
  messages
    .filter((m) => m.role === "toolResult" && m.toolName === "recall")
    .map((m) => ({ id: (m as { toolCallId: string }).toolCallId, text: textOf(m.content) }));

const A = grepText(20, "a");

let classifier: LoopbackClassifier;
let s: TestSession;
const seen: Messages[] = [];
let entryA = "";

beforeAll(async () => {
  classifier = await startLoopbackClassifier({ policy: dropAllPolicy });
  const agentDir = await mkdtemp(join(tmpdir(), "cg-recall-notes-"));
  const configPath = join(agentDir, "guard.json");
  await writeFile(configPath, JSON.stringify({ telemetry: false, midRun: false, pruneExchanges: false }));
  process.env.PI_CONTEXT_GUARD_CONFIG = configPath;
  const look =
    (reply: () => FauxResponse): FauxResponse =>
    (context) => {
      seen.push(structuredClone(context.messages));
      return reply() as never;
    };
  s = await createTestSession({
    agentDir,
    extensionPaths: [EXTENSION],
    classifierBaseUrl: classifier.baseUrl,
    responses: [
      { toolCalls: [{ name: "bash", arguments: { command: "cat a.txt" } }] },
      "nothing here",
      // In one turn: a wide recall, one that matches a single line and one that matches nothing.
      look(() => ({
        toolCalls: ["handler", "status7 =", "no-such-text"].map((pattern) => ({
          name: "recall",
          arguments: { entryId: entryA, pattern },
        })),
      })),
      look(() => "done"),
    ],
  });
  await writeFile(join(s.cwd, "a.txt"), A);
  await s.session.prompt("Look at the file");
  entryA =
    s.session.sessionManager.getBranch().find((e) => e.type === "message" && e.message.role === "toolResult")?.id ?? "";
  await s.session.prompt("Where is status7 set?");
});
afterAll(async () => {
  if (s) await shutdown(s);
  await s?.dispose();
  await classifier?.close();
});

/** The recall results as the tools returned them (the session keeps originals). */
function rawRecallResults(): Map<string, string> {
  const out = new Map<string, string>();
  for (const e of s.session.sessionManager.getBranch())
    if (e.type === "message" && e.message.role === "toolResult" && e.message.toolName === "recall")
      out.set(e.message.toolCallId, textOf(e.message.content));
  return out;
}

describe("notes on recall results once their entry is back", () => {
  it("restores the entry and replaces no recall result with anything longer", () => {
    const raw = rawRecallResults();
    const shown = recallResults(seen.at(-1) as Messages);
    expect(shown).toHaveLength(3);
    expect(seen.at(-1)?.some((m) => m.role === "toolResult" && textOf(m.content) === A)).toBe(true);
    for (const r of shown) {
      const original = raw.get(r.id) ?? "";
      expect([original.length, r.text.length <= original.length]).toEqual([original.length, true]);
    }
    // The wide recall gets the full note, the one-line one the short note, the empty one stays as it was.
    expect(shown.map((r) => (r.text === raw.get(r.id) ? "kept" : r.text))).toEqual([
      expect.stringMatching(/^\[context-guard\] This recall of .* is no longer needed/),
      `[context-guard] ${entryA} is back in context.`,
      "kept",
    ]);
  });
});
