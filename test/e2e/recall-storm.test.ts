// Recall storms in the real Pi: 100 recalls in one turn, and a model that recalls every entry twice in each
// of several runs. The recalled entries come back once (the recall signal) and the recall results that
// copied them become notes, so what the model is sent stays near the originals' size however often it
// recalls; the session stays well-formed for a strict provider throughout.
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TranscriptContext } from "@earendil-works/pi-ai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dropAllPolicy, EXTENSION, grepText, shutdown } from "../kit/fault-session.ts";
import { type LoopbackClassifier, startLoopbackClassifier } from "../kit/loopback-classifier.ts";
import { createTestSession, type FauxResponse, type TestSession } from "../kit/sdk-session.ts";

type Messages = TranscriptContext["messages"];

const FILES = ["a", "b", "c", "d"].map((tag) => ({ name: `${tag}.txt`, text: grepText(10, tag) }));
const ORIGINALS = FILES.reduce((n, f) => n + f.text.length, 0);
const RECALLS_PER_TURN = 100;
const TWICE_RUNS = 5;

/** The text the model is sent: text blocks, and tool calls as their arguments. */
function textOf(messages: Messages | undefined): string {
  const parts: string[] = [];
  for (const m of messages ?? []) {
    if (typeof m.content === "string") parts.push(m.content);
    else
      for (const b of m.content as Array<{ type: string; text?: string; arguments?: unknown }>)
        parts.push(b.type === "text" ? (b.text ?? "") : b.type === "toolCall" ? JSON.stringify(b.arguments) : "");
  }
  return parts.join("\n");
}
const sizeOf = (messages: Messages | undefined) => textOf(messages).length;
/** How many copies of each original the model is sent. */
const copies = (messages: Messages | undefined) =>
  FILES.map((f) => textOf(messages).split(f.text.slice(0, 400)).length - 1);

let classifier: LoopbackClassifier;
let s: TestSession;
const seen: Messages[] = [];
let entries: string[] = [];

function recallTurn(count: number): FauxResponse {
  return (context) => {
    seen.push(structuredClone(context.messages));
    return {
      toolCalls: Array.from({ length: count }, (_, i): { name: string; arguments: Record<string, string> } => ({
        name: "recall",
        arguments:
          i % 2 === 0
            ? { entryId: entries[i % entries.length] as string }
            : { entryId: entries[i % entries.length] as string, pattern: "status1" },
      })),
    };
  };
}
const answer =
  (text: string): FauxResponse =>
  (context) => {
    seen.push(structuredClone(context.messages));
    return text;
  };

beforeAll(async () => {
  classifier = await startLoopbackClassifier({ policy: dropAllPolicy });
  const agentDir = await mkdtemp(join(tmpdir(), "cg-recall-storm-"));
  const configPath = join(agentDir, "guard.json");
  await writeFile(configPath, JSON.stringify({ telemetry: false, pruneExchanges: false }));
  process.env.PI_CONTEXT_GUARD_CONFIG = configPath;
  const twice: FauxResponse[] = [];
  for (let r = 0; r < TWICE_RUNS; r++) twice.push(recallTurn(2 * FILES.length), answer(`run ${r} done`));
  s = await createTestSession({
    agentDir,
    extensionPaths: [EXTENSION],
    classifierBaseUrl: classifier.baseUrl,
    strict: true,
    responses: [
      { toolCalls: FILES.map((f) => ({ name: "bash", arguments: { command: `cat ${f.name}` } })) },
      answer("read them"),
      recallTurn(RECALLS_PER_TURN),
      answer("storm done"),
      ...twice,
    ],
  });
  for (const f of FILES) await writeFile(join(s.cwd, f.name), f.text);
  await s.session.prompt("Read the files");
  entries = s.session.sessionManager
    .getBranch()
    .filter((e) => e.type === "message" && e.message.role === "toolResult")
    .map((e) => e.id);
  await s.session.prompt("Recall everything, many times");
  for (let r = 0; r < TWICE_RUNS; r++) await s.session.prompt(`Recall each twice (${r})`);
});
afterAll(async () => {
  if (s) await shutdown(s);
  await s?.dispose();
  await classifier?.close();
});

describe("recall storms", () => {
  it("sends no request a strict provider rejects", () => {
    expect(s.rejected).toEqual([]);
  });

  it("distilled the outputs before the storm", () => {
    expect(copies(seen[1])).toEqual([0, 0, 0, 0]);
    expect(sizeOf(seen[1])).toBeLessThan(ORIGINALS / 2);
  });

  it("sends each original back once after 100 recalls in one turn, the recalls as notes", () => {
    expect(copies(seen[2])).toEqual([1, 1, 1, 1]);
    // The originals, plus a note of a line for each of the 100 recalls and the calls themselves.
    expect(sizeOf(seen[2])).toBeLessThan(ORIGINALS + RECALLS_PER_TURN * 300);
  });

  it("does not keep copies from runs that recall every entry twice", () => {
    // The first request of each run: what earlier runs left in context.
    const firsts = Array.from({ length: TWICE_RUNS }, (_, r) => seen[3 + 2 * r]);
    for (const m of firsts) expect(copies(m)).toEqual([1, 1, 1, 1]);
    const sizes = firsts.map(sizeOf);
    // Each run leaves its prompt, eight recalls as stubs and an answer: a bounded step, no original.
    for (let r = 1; r < sizes.length; r++) expect((sizes[r] as number) - (sizes[r - 1] as number)).toBeLessThan(8_000);
  });
});
