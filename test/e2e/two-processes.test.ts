// Two Pi sessions on one session file, each with the guard and its background checkpoints (as two `pi
// --session` processes, or two SDK sessions, would have it): each appends to the file without seeing
// the other's entries. Whatever each guard writes must target entries on its own branch, and the file,
// opened afresh, must give every leaf a context a strict provider accepts: no tool result without its
// call, no edit of a missing entry.
import { mkdtemp, readdir, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dropAllPolicy, EXTENSION, grepText, shutdown } from "../kit/fault-session.ts";
import { type LoopbackClassifier, startLoopbackClassifier } from "../kit/loopback-classifier.ts";
import { createTestSession, type FauxResponse, type TestSession } from "../kit/sdk-session.ts";
import { leafProjections, openCopy } from "../kit/session-copy.ts";

const TURNS = 6;

function busyRun(tag: string): FauxResponse[] {
  const out: FauxResponse[] = [];
  for (let t = 0; t < TURNS; t++)
    out.push({ toolCalls: [{ name: "bash", arguments: { command: `cat ${tag}${t}.txt` } }] });
  out.push(`${tag} done.`);
  return out;
}

let classifier: LoopbackClassifier;
let one: TestSession;
let two: TestSession;
let file = "";
let cwd = "";

beforeAll(async () => {
  classifier = await startLoopbackClassifier({ policy: dropAllPolicy });
  const agentDir = await mkdtemp(join(tmpdir(), "cg-two-agent-"));
  const sessionDir = await mkdtemp(join(tmpdir(), "cg-two-sessions-"));
  cwd = await mkdtemp(join(tmpdir(), "cg-two-cwd-"));
  for (const tag of ["a", "b", "c", "d", "e"])
    for (let t = 0; t < TURNS; t++) await writeFile(join(cwd, `${tag}${t}.txt`), grepText(12, `${tag}${t}`));
  const configPath = join(agentDir, "guard.json");
  await writeFile(
    configPath,
    JSON.stringify({ telemetry: false, midRunBatchChars: 20_000, midRunMinAgeTurns: 2, midRunBreakEven: false }),
  );
  process.env.PI_CONTEXT_GUARD_CONFIG = configPath;
  const base = { agentDir, cwd, extensionPaths: [EXTENSION], classifierBaseUrl: classifier.baseUrl };
  one = await createTestSession({
    ...base,
    sessionDir,
    responses: [...busyRun("a"), ...busyRun("c"), ...busyRun("e")],
  });
  await one.session.prompt("Read the a files");
  file = join(sessionDir, (await readdir(sessionDir)).find((f) => f.endsWith(".jsonl")) as string);
  two = await createTestSession({
    ...base,
    sessionDir,
    sessionFile: file,
    responses: [...busyRun("b"), ...busyRun("d")],
  });
  // Both at once: their background checkpoints and run-end passes overlap.
  await Promise.all([one.session.prompt("Read the c files"), two.session.prompt("Read the b files")]);
  await Promise.all([one.session.prompt("Read the e files"), two.session.prompt("Read the d files")]);
});
afterAll(async () => {
  for (const s of [one, two]) if (s) await shutdown(s);
  await one?.dispose();
  await two?.dispose();
  await classifier?.close();
});

type Entry = {
  type: string;
  id: string;
  parentId: string | null;
  targetId?: string;
  message?: Record<string, unknown>;
};

describe("two sessions on one session file", () => {
  it("ran background checkpoints and run-end passes in both", () => {
    for (const s of [one, two]) {
      const phases = s.session.sessionManager
        .getBranch()
        .filter((e) => e.type === "custom" && e.customType === "context-guard")
        .map((e) => (e as { data: { phase: string } }).data.phase);
      expect(new Set(phases)).toEqual(new Set(["mid-run", "run-end"]));
    }
  });

  it("each guard edits only entries on its own branch", () => {
    for (const s of [one, two]) {
      const branch = s.session.sessionManager.getBranch() as unknown as Entry[];
      const ids = new Set(branch.map((e) => e.id));
      const edits = branch.filter((e) => e.type === "context_edit");
      expect(edits.length).toBeGreaterThan(0);
      for (const e of edits) expect([e.id, ids.has(e.targetId as string)]).toEqual([e.id, true]);
    }
  });

  it("leaves a file whose every leaf projects to a well-formed context", async () => {
    const leaves = leafProjections(await openCopy(file, cwd));
    expect(leaves.length).toBeGreaterThanOrEqual(2);
    for (const { leafId, messages } of leaves) {
      const calls = new Set<string>();
      const problems: string[] = [];
      for (const m of messages) {
        if (m.role === "assistant" && Array.isArray(m.content))
          for (const b of m.content as Array<{ type: string; id?: string }>)
            if (b.type === "toolCall") calls.add(b.id as string);
        if (m.role === "toolResult" && !calls.has(m.toolCallId as string)) problems.push(`orphan ${m.toolCallId}`);
      }
      expect([leafId, problems]).toEqual([leafId, []]);
    }
  });
});
