// Stubs that carry their key facts, end to end in the real Pi: an output the classifier judges not needed
// is removed at the run end, the next request the main model receives shows its stub with the job id, the
// URL and the path it held, and recall still returns the original whole.
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { GuardRecord } from "../../src/core/shared/types.ts";
import { keywordPolicy, type LoopbackClassifier, startLoopbackClassifier } from "../kit/loopback-classifier.ts";
import { createTestSession, type TestSession } from "../kit/sdk-session.ts";

const EXTENSION = resolve(import.meta.dirname, "../../src/main/index.ts");
const JOB_ID = "636322f1-f10c-4d50-8af4-325bcb8721c0";
const URL = "https://hooks.example.com/v1/nudge/business-todo";
const FILE = "notes/anthony-business-todos.md";

/** A job listing: the job's id three times, its URL and its file once, and plain lines around them. */
const listing = [
  `job ${JOB_ID} business-todo-nudge`,
  ...Array.from({ length: 70 }, (_, i) => `entry ${i}: the weekly job ran on schedule and finished without errors`),
  `  target ${URL}`,
  `  reads ${FILE}`,
  `  next run of ${JOB_ID} is Monday`,
  `  last run of ${JOB_ID} took four seconds`,
].join("\n");

type Message = TestSession["contexts"][number][number];

function textOf(m: Message): string {
  const content = (m as { content?: unknown }).content;
  if (typeof content === "string") return content;
  return ((content ?? []) as Array<{ type: string; text?: string }>).map((b) => b.text ?? "").join("\n");
}

let classifier: LoopbackClassifier;
let s: TestSession;

beforeAll(async () => {
  // Nothing matches: every chunk is judged not needed, so the listing is removed whole.
  classifier = await startLoopbackClassifier({ policy: keywordPolicy(/needle/) });
  const agentDir = await mkdtemp(join(tmpdir(), "cg-facts-agent-"));
  const configPath = join(agentDir, "guard.json");
  // The run end waits for its pass, so the stub is in the very next request.
  await writeFile(configPath, JSON.stringify({ settleBudgetMs: 8000, minRunChars: 0 }));
  process.env.PI_CONTEXT_GUARD_CONFIG = configPath;
  s = await createTestSession({
    agentDir,
    extensionPaths: [EXTENSION],
    classifierBaseUrl: classifier.baseUrl,
    responses: [
      { toolCalls: [{ name: "bash", arguments: { command: "cat jobs.txt" } }] },
      "There is one weekly job.",
      "Noted.",
    ],
  });
  await writeFile(join(s.cwd, "jobs.txt"), listing);
  await s.session.prompt("Which cron jobs are there?");
  await s.session.prompt("Thanks.");
});
afterAll(async () => {
  await s?.dispose();
  await classifier?.close();
});

function removedEntryId(): string {
  const results = s.session.sessionManager
    .getBranch()
    .filter((e) => e.type === "custom" && e.customType === "context-guard")
    .flatMap((e) => (e as { data: GuardRecord }).data.results);
  const removed = results.find((r) => r.outcome === "removed" && r.label.includes("cat jobs.txt"));
  expect(removed).toBeDefined();
  return removed?.entryId as string;
}

describe("a removed output's stub in the real Pi", () => {
  it("shows the job id, URL and path it held in the next request", () => {
    const id = removedEntryId();
    const next = s.contexts.at(-1) ?? [];
    const stub = next.map(textOf).find((t) => t.includes(`recall({"entryId":"${id}"})`));
    expect(stub).toBeDefined();
    expect(stub).toContain("[context-guard] Removed the output of bash `cat jobs.txt`");
    expect(stub).toContain(`It held: ${URL}, ${JOB_ID}, ${FILE}.`);
    expect(stub).not.toContain("entry 12: the weekly job ran");
  });

  it("still recalls the original whole", async () => {
    const id = removedEntryId();
    s.addResponses({ toolCalls: [{ name: "recall", arguments: { entryId: id } }] }, "Recalled.");
    await s.session.prompt("Show me the full listing again.");
    // What recall returned, as the session file holds it.
    const branch = s.session.sessionManager.getBranch() as unknown as Array<{
      type: string;
      message?: { role: string; toolName?: string; content?: Array<{ text?: string }> };
    }>;
    const recalled = branch.filter((e) => e.message?.role === "toolResult" && e.message.toolName === "recall");
    expect(recalled.at(-1)?.message?.content?.[0]?.text).toBe(listing);
    // A whole recall brings the original back in place for the requests after it.
    s.addResponses("Done.");
    await s.session.prompt("Thanks again.");
    expect((s.contexts.at(-1) ?? []).some((m) => textOf(m) === listing)).toBe(true);
  });
});
