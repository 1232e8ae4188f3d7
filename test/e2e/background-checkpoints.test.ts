// Background checkpoints in the real Pi: a checkpoint starts at one turn_end and the agent goes on while
// the (slow) classifier answers; its drafts land at a later turn_end, re-validated against that context.
// A second extension edits one of the judged outputs meanwhile: that draft is dropped, the rest applies.
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { JsonObject } from "@earendil-works/pi-ai";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { GuardRecord } from "../../src/core/shared/types.ts";
import { keywordPolicy, type LoopbackClassifier, startLoopbackClassifier } from "../kit/loopback-classifier.ts";
import { createTestSession, type FauxResponse, type TestSession } from "../kit/sdk-session.ts";
import { testLog } from "../kit/test-log.ts";

const EXTENSION = resolve(import.meta.dirname, "../../src/main/index.ts");
// Long enough that a checkpoint asked in waves ends before the run does, on a loaded machine too.
const TURNS = 30;
/** Slower than a few turns of the main model, so the run goes on while the checkpoint is asked. */
const CLASSIFIER_MS = 600;
const TURN_MS = 120;
const OTHER_TEXT = "[other extension] log0 trimmed";

type Msg = { role: string; content?: string | Array<{ type: string; text?: string }> };
const textOf = (m: Msg) =>
  typeof m.content === "string" ? m.content : (m.content ?? []).map((b) => b.text ?? "").join("");

let classifier: LoopbackClassifier;
let s: TestSession;
/** Per model call: classifier requests seen so far, and mid-run records on the branch. */
const calls: Array<{ asked: number; records: number }> = [];
/** The entry the other extension edited, once it has. */
let otherTarget: string | undefined;

function records(): GuardRecord[] {
  return s.session.sessionManager
    .getBranch()
    .filter((e) => e.type === "custom" && e.customType === "context-guard")
    .map((e) => (e as { data: GuardRecord }).data);
}

/** Edits the run's first output once the guard's checkpoint is being asked and has not landed yet. */
function otherExtension(pi: ExtensionAPI): void {
  pi.on("turn_end", (event) => {
    if (otherTarget || classifier.requests.length === 0 || records().length > 0) return;
    const first = event.context.contextEntries.find(
      (e) => e.sourceEntry.type === "message" && e.sourceEntry.message.role === "toolResult",
    );
    if (!first) return;
    otherTarget = first.sourceEntry.id;
    return {
      entries: [
        ...event.entries,
        { type: "context_edit", targetId: otherTarget, replacement: { content: [{ type: "text", text: OTHER_TEXT }] } },
      ],
    };
  });
}

beforeAll(async () => {
  classifier = await startLoopbackClassifier({ policy: keywordPolicy(/FAIL/), latencyMs: CLASSIFIER_MS });
  const agentDir = await mkdtemp(join(tmpdir(), "cg-bg-agent-"));
  const configPath = join(agentDir, "guard.json");
  await writeFile(
    configPath,
    JSON.stringify({ midRunBatchChars: 20_000, midRunMinAgeTurns: 3, midRunBreakEven: false, concurrency: 2 }),
  );
  process.env.PI_CONTEXT_GUARD_CONFIG = configPath;
  const responses: FauxResponse[] = [];
  for (let i = 0; i < TURNS; i++) {
    responses.push(async () => {
      calls.push({ asked: classifier.requests.length, records: records().length });
      await new Promise((r) => setTimeout(r, TURN_MS));
      return { toolCalls: [{ name: "bash", arguments: { command: `cat log${i}.txt` } as JsonObject }] };
    });
  }
  responses.push("Done.");
  s = await createTestSession({
    agentDir,
    extensionPaths: [EXTENSION],
    extensionFactories: [otherExtension],
    classifierBaseUrl: classifier.baseUrl,
    responses,
  });
  for (let i = 0; i < TURNS; i++) await writeFile(join(s.cwd, `log${i}.txt`), testLog(i, 160));
  await s.session.prompt("Fix all failing tests");
}, 120_000);
afterAll(async () => {
  await s?.dispose();
  await classifier.close();
});

describe("background checkpoints", () => {
  it("lets the main model go on while the checkpoint is asked", () => {
    // Awaited, a checkpoint's record would be on the branch before the next model call.
    expect(calls.some((c) => c.asked > 0 && c.records === 0)).toBe(true);
    expect(records().some((r) => r.phase === "mid-run")).toBe(true);
  });

  it("lands the checkpoint's edit at a later boundary, and a later request of the run carries it", () => {
    const firstMidRun = records().findIndex((r) => r.phase === "mid-run");
    expect(firstMidRun).toBe(0);
    const edited = s.contexts.findIndex((c) =>
      (c as Msg[]).some((m) => m.role === "toolResult" && textOf(m).startsWith("[context-guard]")),
    );
    // The first model call made while the checkpoint was being asked came before it.
    const asking = calls.findIndex((c) => c.asked > 0);
    expect(asking).toBeGreaterThan(0);
    expect(edited).toBeGreaterThan(asking);
  });

  it("drops the draft whose target another extension edited meanwhile, and applies the rest", () => {
    expect(otherTarget).toBeDefined();
    const midRun = records().find((r) => r.phase === "mid-run") as GuardRecord;
    const forOther = midRun.results.find((r) => r.entryId === otherTarget);
    expect(forOther?.outcome).toBe("kept");
    expect(forOther?.reason).toBe("rejected: changed since it was judged");
    expect(midRun.results.some((r) => r.entryId !== otherTarget && r.outcome !== "kept")).toBe(true);
    const branch = s.session.sessionManager.getBranch();
    const edits = branch.filter((e) => e.type === "context_edit") as Array<{ targetId: string }>;
    // Only the other extension's edit on that target; the guard's others landed (Pi kept the drafts).
    expect(edits.filter((e) => e.targetId === otherTarget)).toHaveLength(1);
    expect(edits.filter((e) => e.targetId !== otherTarget).length).toBeGreaterThan(0);
    // The model saw the other extension's text for it.
    const last = s.contexts.at(-1) as Msg[];
    expect(last.some((m) => m.role === "toolResult" && textOf(m) === OTHER_TEXT)).toBe(true);
  });

  it("asks nothing twice: each output is judged at most once mid-run", () => {
    const judged = records()
      .filter((r) => r.phase === "mid-run")
      .flatMap((r) => r.results.filter((x) => x.kind !== "exchange").map((x) => x.entryId));
    expect(new Set(judged).size).toBe(judged.length);
  });
});
