// The session teaches the guard, in the real Pi: after the agent recalled two removed outputs, the next
// run end keeps whole an output it would otherwise remove (the same script without the recalls removes
// it), the pass's record says what it learned, and `/guard` shows the misses.
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { GuardRecord, RecordResult } from "../../src/core/shared/types.ts";
import { EXTENSION, grepText } from "../kit/fault-session.ts";
import { capturingUi } from "../kit/hook-probe.ts";
import { keywordPolicy, type LoopbackClassifier, startLoopbackClassifier } from "../kit/loopback-classifier.ts";
import { createTestSession, type FauxResponse, type TestSession } from "../kit/sdk-session.ts";

let classifier: LoopbackClassifier;
let agentDir: string;

beforeAll(async () => {
  // No chunk is needed, and keeping each output whole is 60% likely: under the default 0.7 an output is
  // removed, one step toward keeping (0.595) keeps it whole.
  classifier = await startLoopbackClassifier({ policy: keywordPolicy(/needle/, { keepWhole: 0.6 }) });
  agentDir = await mkdtemp(join(tmpdir(), "cg-misses-agent-"));
  const configPath = join(agentDir, "guard.json");
  await writeFile(
    configPath,
    JSON.stringify({ settleBudgetMs: 8000, minRunChars: 0, midRun: false, telemetry: false }),
  );
  process.env.PI_CONTEXT_GUARD_CONFIG = configPath;
});
afterAll(async () => classifier?.close());

const bash = (command: string): FauxResponse => ({ toolCalls: [{ name: "bash", arguments: { command } }] });
const recall = (entryId: string): FauxResponse => ({ toolCalls: [{ name: "recall", arguments: { entryId } }] });

function records(s: TestSession): GuardRecord[] {
  return s.session.sessionManager
    .getBranch()
    .filter((e) => e.type === "custom" && e.customType === "context-guard")
    .map((e) => (e as { data: GuardRecord }).data);
}

function resultFor(s: TestSession, command: string): RecordResult | undefined {
  return records(s)
    .flatMap((r) => r.results)
    .findLast((r) => r.label.includes(command));
}

/** Two runs that read a.txt and b.txt, then (with `recalls`) one that recalls both, then one that reads c.txt. */
async function run(recalls: boolean): Promise<TestSession> {
  const s = await createTestSession({
    agentDir,
    extensionPaths: [EXTENSION],
    classifierBaseUrl: classifier.baseUrl,
    responses: [bash("cat a.txt"), "Read a.", bash("cat b.txt"), "Read b."],
  });
  for (const tag of ["a", "b", "c"]) await writeFile(join(s.cwd, `${tag}.txt`), grepText(6, tag));
  await s.session.prompt("Look at a.txt");
  await s.session.prompt("Look at b.txt");
  const a = resultFor(s, "cat a.txt");
  const b = resultFor(s, "cat b.txt");
  expect(a?.outcome).toBe("removed");
  expect(b?.outcome).toBe("removed");
  if (recalls) s.addResponses(recall(a?.entryId as string), recall(b?.entryId as string), "Both are back.");
  else s.addResponses("Nothing to recall.");
  await s.session.prompt("Bring back what you read");
  s.addResponses(bash("cat c.txt"), "Read c.");
  await s.session.prompt("Look at c.txt");
  return s;
}

describe("a session that recalled two removed outputs", () => {
  let taught: TestSession;
  let control: TestSession;
  beforeAll(async () => {
    control = await run(false);
    taught = await run(true);
  });
  afterAll(async () => {
    await control?.dispose();
    await taught?.dispose();
  });

  it("keeps whole the next output that the same session without recalls removes", () => {
    expect(resultFor(control, "cat c.txt")).toMatchObject({ outcome: "removed" });
    expect(resultFor(taught, "cat c.txt")).toMatchObject({ outcome: "kept", reason: "whole-needed" });
  });

  it("records what it learned, and nothing without misses", () => {
    const last = records(taught).at(-1);
    expect(last?.learned).toEqual([{ kind: "output", misses: 2, removals: 2, level: 1 }]);
    for (const r of records(control)) expect(r.learned).toBeUndefined();
  });

  it("shows the misses in /guard", async () => {
    const { ui, notices } = capturingUi();
    taught.session.extensionRunner.setUIContext(ui, "rpc");
    await taught.session.prompt("/guard");
    const status = notices.at(-1)?.message ?? "";
    expect(status).toMatch(/Misses \(recalled or restored\): outputs 2 of 2 \([^)]*\); keeping more \(step 1 of 3\)\./);
    const quiet = capturingUi();
    control.session.extensionRunner.setUIContext(quiet.ui, "rpc");
    await control.session.prompt("/guard");
    expect(quiet.notices.at(-1)?.message ?? "").not.toContain("Misses");
  });
});
