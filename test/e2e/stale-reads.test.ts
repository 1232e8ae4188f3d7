// Reads whose file changed on disk, outside the agent, end to end in the real Pi: one changed between
// runs (an earlier run's read, replaced at the next run end with no request) and one changed during the
// run that read it (sent as superseded, judged not needed, stubbed). Both stubs ask for a new read, and
// the next request shows them. The cache gate is off: with it, the earlier read waits until its rewrite
// pays (core/distill/finish.ts; tested in test/unit/core/items/stale-reads.test.ts).
import { mkdir, mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { GuardRecord } from "../../src/core/shared/types.ts";
import {
  type AnswerPolicy,
  keywordPolicy,
  type LoopbackClassifier,
  startLoopbackClassifier,
  stateObject,
  type WireAnswer,
} from "../kit/loopback-classifier.ts";
import { createTestSession, type TestSession } from "../kit/sdk-session.ts";

const EXTENSION = resolve(import.meta.dirname, "../../src/main/index.ts");

/** Every output is needed unless it is marked superseded. */
const policy: AnswerPolicy = (body) => {
  const out: Record<string, WireAnswer> = { ...keywordPolicy(/./)(body) };
  const items = (stateObject(body).items ?? {}) as Record<string, { superseded?: string }>;
  for (const id of Object.keys(body.questions))
    if (id.startsWith("item_")) out[id] = { type: "noul", noul: items[id]?.superseded ? 0.05 : 0.9 };
  return out;
};

const lines = (word: string) => Array.from({ length: 40 }, (_, i) => `export const ${word}${i} = ${i};`).join("\n");

let classifier: LoopbackClassifier;
let s: TestSession;

function records(): GuardRecord[] {
  return s.session.sessionManager
    .getBranch()
    .filter((e) => e.type === "custom" && e.customType === "context-guard")
    .map((e) => (e as { data: GuardRecord }).data);
}

function resultsFor(label: string) {
  return records().flatMap((r) => r.results.filter((x) => x.label === label));
}

/** The text the model saw last for the tool result of the read of `path`. */
function lastSeen(path: string): string {
  const messages = s.contexts.at(-1) as Array<{
    role: string;
    toolCallId?: string;
    content?: Array<{ type: string; text?: string; id?: string; arguments?: { path?: string } }>;
  }>;
  const callId = messages
    .flatMap((m) => (m.role === "assistant" ? (m.content ?? []) : []))
    .find((b) => b.type === "toolCall" && b.arguments?.path === path)?.id;
  const result = messages.find((m) => m.role === "toolResult" && m.toolCallId === callId);
  return result?.content?.[0]?.text ?? "";
}

beforeAll(async () => {
  classifier = await startLoopbackClassifier({ policy });
  const agentDir = await mkdtemp(join(tmpdir(), "cg-stale-agent-"));
  const configPath = join(agentDir, "guard.json");
  await writeFile(
    configPath,
    JSON.stringify({ pruneExchanges: false, midRun: false, exchangeBreakEven: false, keepReads: false }),
  );
  process.env.PI_CONTEXT_GUARD_CONFIG = configPath;
  s = await createTestSession({
    agentDir,
    extensionPaths: [EXTENSION],
    classifierBaseUrl: classifier.baseUrl,
    responses: [
      { toolCalls: [{ name: "read", arguments: { path: "src/first.ts" } }] },
      "first.ts exports first0 to first39.",
      { toolCalls: [{ name: "read", arguments: { path: "src/second.ts" } }] },
      // The file changes while the run goes on, not through the agent (a formatter, another process).
      async () => {
        await writeFile(join(s.cwd, "src/second.ts"), lines("formatted"));
        return "second.ts exports second0 to second39.";
      },
      "Noted.",
    ],
  });
  await mkdir(join(s.cwd, "src"));
  await writeFile(join(s.cwd, "src/first.ts"), lines("first"));
  await writeFile(join(s.cwd, "src/second.ts"), lines("second"));
  await s.session.prompt("What does src/first.ts export?");
  // Between runs, outside the agent: `git checkout` of another version.
  await writeFile(join(s.cwd, "src/first.ts"), lines("checkedOut"));
  await s.session.prompt("And src/second.ts?");
  await s.session.prompt("Thanks.");
});
afterAll(async () => {
  await s?.dispose();
  await classifier?.close();
});

describe("reads whose file changed on disk", () => {
  it("keeps a read while its file is unchanged", () => {
    expect(resultsFor("read src/first.ts")[0]).toMatchObject({ kind: "small", outcome: "kept", reason: "needed" });
  });

  it("replaces an earlier run's read once its file changed, asking for a new read", () => {
    expect(resultsFor("read src/first.ts").at(-1)).toMatchObject({ outcome: "removed", reason: "changed-on-disk" });
    const seen = lastSeen("src/first.ts");
    expect(seen).toMatch(
      /^\[context-guard\] Omitted the output of read src\/first\.ts \([\d.k]+ chars\): the file changed on disk after this read; read it again/,
    );
    expect(seen).not.toContain("first0");
  });

  it("sends a read changed during its run as superseded, and stubs it the same way", () => {
    const superseded = classifier.requests.some((r) =>
      Object.values((stateObject(r).items ?? {}) as Record<string, { label?: string; superseded?: string }>).some(
        (item) => item.label === "read src/second.ts" && /changed on disk/.test(item.superseded ?? ""),
      ),
    );
    expect(superseded).toBe(true);
    expect(resultsFor("read src/second.ts").at(-1)).toMatchObject({ outcome: "removed", reason: "not-needed" });
    expect(lastSeen("src/second.ts")).toContain("the file changed on disk after this read; read it again");
  });
});
