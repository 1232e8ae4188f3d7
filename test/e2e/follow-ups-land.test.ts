// The census with follow-ups (issue 41), small: a fast run calls `bash` on many large outputs while the
// classifier holds every answer until the model's last reply, so a checkpoint is still pending at the run
// end. With a short settle budget the run end cannot wait for it: its own pass follows the checkpoint
// behind the agent, and both land at the follow-up prompts' boundaries. What lands after two follow-ups
// must reach what the same workload lands when the run end is awaited (print mode's default).
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { JsonObject } from "@earendil-works/pi-ai";
import { afterEach, describe, expect, it } from "vitest";
import type { GuardRecord } from "../../src/core/shared/types.ts";
import { keywordPolicy, type LoopbackClassifier, startLoopbackClassifier } from "../kit/loopback-classifier.ts";
import { createTestSession, type FauxResponse, type TestSession } from "../kit/sdk-session.ts";
import { testLog } from "../kit/test-log.ts";

const EXTENSION = resolve(import.meta.dirname, "../../src/main/index.ts");
/** Another extension, loaded before the guard, that appends an entry at every run end. */
const SETTLE_NOTE = resolve(import.meta.dirname, "../kit/settle-note.ts");
/** Tool turns of the run, each `cat` of a log of about 16 KB. */
const TURNS = 12;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type Entry = {
  id: string;
  type: string;
  customType?: string;
  targetId?: string;
  data?: GuardRecord;
  message?: unknown;
};

interface Outcome {
  edits: number;
  targets: string[];
  records: GuardRecord[];
  /** Branch positions of the follow-up prompts and of each record. */
  prompts: number[];
  recordsAt: number[];
  outputs: string[];
}

let open: { s: TestSession; classifier: LoopbackClassifier } | undefined;
afterEach(async () => {
  await open?.s.dispose();
  await open?.classifier.close();
  open = undefined;
  delete process.env.PI_CONTEXT_GUARD_CONFIG;
});

/** Waits until every request the classifier got is answered and none came for a while (not asserted). */
async function quiet(classifier: LoopbackClassifier): Promise<void> {
  let seen = -1;
  let still = 0;
  for (let i = 0; i < 600 && still < 8; i++) {
    await sleep(250);
    const n = classifier.requests.length;
    still = n === seen && classifier.answered >= n ? still + 1 : 0;
    seen = n;
  }
}

async function census(mode: "awaited" | "follow-ups", before: string[] = []): Promise<Outcome> {
  let release: () => void = () => undefined;
  const hold = new Promise<void>((r) => {
    release = r;
  });
  const classifier = await startLoopbackClassifier({ policy: keywordPolicy(/FAIL/), hold });
  const agentDir = await mkdtemp(join(tmpdir(), "cg-follow-ups-"));
  const configPath = join(agentDir, "guard.json");
  // No settle budget: print mode (the SDK) waits for the run end whole. 0: nothing waits for a pass.
  const budget = mode === "awaited" ? {} : { settleBudgetMs: 0 };
  await writeFile(
    configPath,
    JSON.stringify({
      timeoutMs: 30_000,
      telemetry: false,
      ...budget,
    }),
  );
  process.env.PI_CONTEXT_GUARD_CONFIG = configPath;
  const responses: FauxResponse[] = [];
  for (let i = 0; i < TURNS; i++) {
    responses.push({ toolCalls: [{ name: "bash", arguments: { command: `cat log${i}.txt` } as JsonObject }] });
  }
  // The answers go once the run is over: the checkpoint started in it is pending at its end.
  responses.push(
    () => {
      release();
      return "Done.";
    },
    "Ok.",
    "Thanks.",
  );
  const s = await createTestSession({
    agentDir,
    extensionPaths: [...before, EXTENSION],
    classifierBaseUrl: classifier.baseUrl,
    responses,
  });
  open = { s, classifier };
  for (let i = 0; i < TURNS; i++) await writeFile(join(s.cwd, `log${i}.txt`), testLog(i, 400));
  await s.session.prompt("Find the failing tests");
  if (mode === "follow-ups") {
    for (const text of ["Next", "Thanks"]) {
      await quiet(classifier);
      await s.session.prompt(text);
    }
  }
  const branch = s.session.sessionManager.getBranch() as unknown as Entry[];
  const isPrompt = (e: Entry) => (e.message as { role?: string } | undefined)?.role === "user";
  const isRecord = (e: Entry) => e.type === "custom" && e.customType === "context-guard";
  const indexOf = (keep: (e: Entry) => boolean) => branch.flatMap((e, i) => (keep(e) ? [i] : []));
  const targets = branch.filter((e) => e.type === "context_edit").map((e) => e.targetId as string);
  return {
    edits: targets.length,
    targets,
    records: branch.filter(isRecord).map((e) => e.data as GuardRecord),
    prompts: indexOf(isPrompt).slice(1),
    recordsAt: indexOf(isRecord),
    outputs: branch.filter((e) => (e.message as { role?: string } | undefined)?.role === "toolResult").map((e) => e.id),
  };
}

describe("judged work lands after follow-up prompts", () => {
  it("lands at least what an awaited run end lands, each output once, the run end's pass recorded", async () => {
    const awaited = await census("awaited");
    await open?.s.dispose();
    await open?.classifier.close();
    open = undefined;
    const followed = await census("follow-ups");
    console.log(`edits: awaited run end ${awaited.edits}, after two follow-ups ${followed.edits}`);

    expect(awaited.edits).toBeGreaterThan(0);
    expect(followed.edits).toBeGreaterThanOrEqual(awaited.edits);
    // No entry is edited twice, and every edit is of one of the run's outputs.
    expect(new Set(followed.targets).size).toBe(followed.targets.length);
    for (const id of followed.targets) expect(followed.outputs).toContain(id);
    // Nothing waited at the run end; the run end's own pass (behind the checkpoint pending there) landed
    // at the first follow-up's boundaries, the first after it had ended: before the second was typed.
    const [next, thanks] = followed.prompts as [number, number];
    for (const at of followed.recordsAt) expect(at).toBeGreaterThan(next);
    const runEnd = followed.records.findIndex((r) => r.phase === "run-end" && r.results.length > 0);
    expect(runEnd).toBeGreaterThanOrEqual(0);
    expect(followed.recordsAt[runEnd]).toBeLessThan(thanks);
    // It judged the first run's outputs, each once with its own record.
    const judged = (followed.records[runEnd] as GuardRecord).results.map((r) => r.entryId);
    for (const id of judged) expect(followed.outputs).toContain(id);
    expect(judged.length).toBe(new Set(judged).size);
  }, 180_000);

  it("lands the run end's pass when another extension's run-end draft is in the context it judged", async () => {
    // That draft is the context's last entry, under an id the branch never holds: the pass is still
    // judged on this branch.
    const followed = await census("follow-ups", [SETTLE_NOTE]);
    console.log(`edits after two follow-ups, another extension's draft at each run end: ${followed.edits}`);
    const runEnd = followed.records.find((r) => r.phase === "run-end" && r.results.length > 0);
    expect(runEnd?.results.some((r) => r.outcome !== "kept")).toBe(true);
    expect(runEnd?.results.some((r) => r.reason.includes("another branch"))).toBe(false);
    expect(followed.edits).toBeGreaterThan(0);
  }, 180_000);
});
