// 1,000 restores in one session, in the real Pi: a run reads 1,000 ranges of a file, the guard stubs every
// output, and the user restores each one with `/guard restore <id>`. The next request must show all of
// them as they were, the edits must land at one boundary, and the session must stay well-formed.
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TranscriptContext } from "@earendil-works/pi-ai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PIN_TYPE } from "../../src/core/records/pins.ts";
import { dropAllPolicy, EXTENSION, shutdown } from "../kit/fault-session.ts";
import { type LoopbackClassifier, startLoopbackClassifier } from "../kit/loopback-classifier.ts";
import { contentText as textOf } from "../kit/pi-messages.ts";
import { createTestSession, type FauxResponse, type TestSession } from "../kit/sdk-session.ts";

type Messages = TranscriptContext["messages"];

const RESTORES = 1000;
const PER_TURN = 100;
const LINES = 40;
const FILE = Array.from({ length: RESTORES * LINES }, (_, i) => `line ${i} ${"x".repeat(40)}`).join("\n");

let classifier: LoopbackClassifier;
let s: TestSession;
const seen: Messages[] = [];
let outputs: Array<{ id: string; text: string }> = [];

beforeAll(async () => {
  classifier = await startLoopbackClassifier({ policy: dropAllPolicy });
  const agentDir = await mkdtemp(join(tmpdir(), "cg-restore-many-"));
  const configPath = join(agentDir, "guard.json");
  await writeFile(
    configPath,
    JSON.stringify({
      telemetry: false,
      midRun: false,
      pruneExchanges: false,
      exchangeBreakEven: false,
      keepReads: false,
    }),
  );
  process.env.PI_CONTEXT_GUARD_CONFIG = configPath;
  const turns: FauxResponse[] = [];
  for (let t = 0; t < RESTORES / PER_TURN; t++)
    turns.push({
      toolCalls: Array.from({ length: PER_TURN }, (_, i) => ({
        name: "read",
        arguments: { path: "big.txt", offset: (t * PER_TURN + i) * LINES + 1, limit: LINES },
      })),
    });
  const look =
    (text: string): FauxResponse =>
    (context) => {
      seen.push(structuredClone(context.messages));
      return text;
    };
  s = await createTestSession({
    agentDir,
    extensionPaths: [EXTENSION],
    classifierBaseUrl: classifier.baseUrl,
    strict: true,
    responses: [...turns, look("read it all"), look("all back")],
  });
  await writeFile(join(s.cwd, "big.txt"), FILE);
  await s.session.prompt("Read big.txt in ranges");
  outputs = s.session.sessionManager
    .getBranch()
    .filter((e) => e.type === "message" && e.message.role === "toolResult")
    .map((e) => ({ id: e.id, text: textOf((e as { message: { content: unknown } }).message.content) }));
  for (const o of outputs) await s.session.prompt(`/guard restore ${o.id}`);
  await s.session.prompt("Continue with everything back");
}, 600_000);
afterAll(async () => {
  if (s) await shutdown(s);
  await s?.dispose();
  await classifier?.close();
});

function shownResults(messages: Messages | undefined): string[] {
  return (messages ?? []).filter((m) => m.role === "toolResult").map((m) => textOf(m.content));
}

describe("1,000 restores in one session", () => {
  it("sends no request a strict provider rejects", () => {
    expect(s.rejected).toEqual([]);
  });

  it("stubbed every output first", () => {
    expect(outputs).toHaveLength(RESTORES);
    const stubs = s.session.sessionManager
      .getBranch()
      .filter((e) => e.type === "context_edit" && textOf(e.replacement?.content).startsWith("[context-guard]"));
    expect(stubs).toHaveLength(RESTORES);
  });

  it("pins each restore and shows every original in the next request", () => {
    const pins = s.session.sessionManager.getBranch().filter((e) => e.type === "custom" && e.customType === PIN_TYPE);
    expect(pins).toHaveLength(RESTORES);
    const after = shownResults(seen[1]);
    expect(after).toEqual(outputs.map((o) => o.text));
  });

  it("appended one restoring edit per output", () => {
    const edits = s.session.sessionManager.getBranch().filter((e) => e.type === "context_edit");
    // One stub and one restore per output.
    expect(edits.length).toBe(2 * RESTORES);
  });
});
