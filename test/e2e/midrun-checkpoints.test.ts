// Mid-run checkpoints end to end in the real Pi: a long scripted run whose older outputs are judged at a
// turn boundary, so later requests of the same run are smaller, while the newest outputs stay untouched.
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { JsonObject } from "@earendil-works/pi-ai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { GuardRecord } from "../../src/core/shared/types.ts";
import { keywordPolicy, type LoopbackClassifier, startLoopbackClassifier } from "../kit/loopback-classifier.ts";
import { createTestSession, type FauxResponse, type TestSession } from "../kit/sdk-session.ts";

const EXTENSION = resolve(import.meta.dirname, "../../src/main/index.ts");
const TURNS = 14;
const TURN_MS = 250;

/** A 6 KB test log: passing lines, and for log 3 only failures (a log the work still needs whole). */
function testLog(n: number): string {
  const lines = Array.from({ length: 160 }, (_, i) =>
    n === 3 || i === 50
      ? `FAIL src/case${n}_${i}.test.ts > broken_${n}_${i} expected 1 to be 2`
      : `PASS src/case${n}_${i}.test.ts (${i} ms)`,
  );
  return `${lines.join("\n")}\n`;
}

type Msg = { role: string; toolCallId?: string; content?: string | Array<{ type: string; text?: string }> };
const textOf = (m: Msg) =>
  typeof m.content === "string" ? m.content : (m.content ?? []).map((b) => b.text ?? "").join("");
const contextChars = (messages: Msg[]) => messages.reduce((n, m) => n + textOf(m).length, 0);

let classifier: LoopbackClassifier;
let s: TestSession;

beforeAll(async () => {
  classifier = await startLoopbackClassifier({ policy: keywordPolicy(/FAIL/) });
  const agentDir = await mkdtemp(join(tmpdir(), "cg-midrun-agent-"));
  const configPath = join(agentDir, "guard.json");
  await writeFile(
    configPath,
    JSON.stringify({ midRunBatchChars: 20_000, midRunMinAgeTurns: 3, midRunBreakEven: false }),
  );
  process.env.PI_CONTEXT_GUARD_CONFIG = configPath;
  const responses: FauxResponse[] = [];
  for (let i = 0; i < TURNS; i++) {
    // Every third turn re-runs the whole suite (a superseded command); the others read one log.
    const command = i % 3 === 2 ? "cat all.log" : `cat log${i}.txt`;
    // A checkpoint runs while the model works: a turn that takes a while lets it land within the run.
    responses.push(async () => {
      await new Promise((r) => setTimeout(r, TURN_MS));
      return { toolCalls: [{ name: "bash", arguments: { command } as JsonObject }] };
    });
  }
  responses.push("Fixed: the failing cases were in src/case3_*.");
  s = await createTestSession({
    agentDir,
    extensionPaths: [EXTENSION],
    classifierBaseUrl: classifier.baseUrl,
    responses,
  });
  for (let i = 0; i < TURNS; i++) await writeFile(join(s.cwd, `log${i}.txt`), testLog(i));
  await writeFile(join(s.cwd, "all.log"), testLog(99));
  await s.session.prompt("Fix all failing tests");
});
afterAll(async () => {
  await s?.dispose();
  await classifier.close();
});

function records(): GuardRecord[] {
  return s.session.sessionManager
    .getBranch()
    .filter((e) => e.type === "custom" && e.customType === "context-guard")
    .map((e) => (e as { data: GuardRecord }).data);
}

describe("mid-run checkpoints", () => {
  it("lands a checkpoint during the run that edits only outputs old enough", () => {
    const midRun = records().filter((r) => r.phase === "mid-run");
    expect(midRun.length).toBeGreaterThan(0);
    const distilled = midRun[0]?.results.filter((r) => r.outcome !== "kept") ?? [];
    expect(distilled.length).toBeGreaterThan(0);
    // Each edited output was produced at least midRunMinAgeTurns turns before the checkpoint.
    const branch = s.session.sessionManager.getBranch();
    const checkpointAt = branch.findIndex(
      (e) => e.type === "custom" && (e as { data: GuardRecord }).data?.phase === "mid-run",
    );
    const turnsAfter = (id: string) =>
      branch
        .slice(
          branch.findIndex((e) => e.id === id),
          checkpointAt,
        )
        .filter((e) => e.type === "message" && e.message.role === "assistant").length;
    for (const r of distilled) expect(turnsAfter(r.entryId)).toBeGreaterThanOrEqual(3);
  });

  it("makes the next request of the same run smaller and keeps the newest output unedited", () => {
    const branch = s.session.sessionManager.getBranch();
    const edit = branch.find((e) => e.type === "context_edit");
    expect(edit).toBeDefined();
    // Find the first model call whose context contains the replacement.
    const after = s.contexts.findIndex((c) =>
      (c as Msg[]).some((m) => m.role === "toolResult" && textOf(m).startsWith("[context-guard]")),
    );
    expect(after).toBeGreaterThan(0);
    const before = s.contexts[after - 1] as Msg[];
    const next = s.contexts[after] as Msg[];
    expect(contextChars(next)).toBeLessThan(contextChars(before));
    // The newest tool result (the turn that just ended) reached the model raw.
    const newest = next.filter((m) => m.role === "toolResult").at(-1) as Msg;
    expect(textOf(newest).startsWith("[context-guard]")).toBe(false);
    expect(textOf(newest)).toMatch(/^(PASS|FAIL) src\/case/);
  });

  it("judges again at run end what the checkpoint kept, and never re-asks it mid-run", () => {
    const all = records();
    const midRunKept = all
      .filter((r) => r.phase === "mid-run")
      .flatMap((r) => r.results.filter((x) => x.outcome === "kept" && x.kind !== "exchange"));
    expect(midRunKept.length).toBeGreaterThan(0);
    const runEnd = all.find((r) => r.phase === "run-end");
    const runEndIds = new Set(runEnd?.results.map((r) => r.entryId));
    for (const r of midRunKept) expect(runEndIds.has(r.entryId)).toBe(true);
    const judgedMidRun = all.filter((r) => r.phase === "mid-run").flatMap((r) => r.results.map((x) => x.entryId));
    expect(new Set(judgedMidRun).size).toBe(judgedMidRun.length);
  });
});
