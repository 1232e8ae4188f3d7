// `/reload` while a run end's handed-over rest is still asked, in the real Pi (an SDK session, as Pi has
// no RPC reload), against a strict main model. The reload replaces the guard; the old guard's rest must
// not land on the session through it twice or name entries off the branch, and no request may carry a
// tool result apart from its call. (A pending checkpoint under /reload: tool-pairs.test.ts.)
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Asked, askedAbout, startFailClassifier, untilAnswered } from "../kit/fail-classifier.ts";
import { EXTENSION } from "../kit/fault-session.ts";
import type { LoopbackClassifier } from "../kit/loopback-classifier.ts";
import { createTestSession, type FauxResponse, type TestSession } from "../kit/sdk-session.ts";
import { testLog } from "../kit/test-log.ts";

const CLASSIFIER_MS = 2000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const bash = (command: string): FauxResponse => ({ toolCalls: [{ name: "bash", arguments: { command } }] });

type Entry = {
  id: string;
  parentId: string | null;
  type: string;
  customType?: string;
  targetId?: string;
  data?: { phase?: string; results?: Array<{ entryId: string; outcome: string }> };
};

let classifier: LoopbackClassifier;
let s: TestSession;
const asked: Asked[] = [];

beforeAll(async () => {
  classifier = await startFailClassifier(CLASSIFIER_MS, asked);
  const agentDir = await mkdtemp(join(tmpdir(), "cg-reload-rest-"));
  const configPath = join(agentDir, "guard.json");
  await writeFile(
    configPath,
    JSON.stringify({
      telemetry: false,
      timeoutMs: 30_000,
      settleBudgetMs: 150,
      midRun: false,
      exchangeBreakEven: false,
    }),
  );
  process.env.PI_CONTEXT_GUARD_CONFIG = configPath;
  s = await createTestSession({
    agentDir,
    extensionPaths: [EXTENSION],
    classifierBaseUrl: classifier.baseUrl,
    strict: true,
    responses: [
      bash("cat log0.txt"),
      bash("cat log1.txt"),
      bash("cat log2.txt"),
      "Three failing cases.",
      bash("echo after"),
      "done after",
      bash("echo later"),
      "done later",
    ],
  });
  for (let i = 0; i < 3; i++) await writeFile(join(s.cwd, `log${i}.txt`), testLog(i));
  await s.session.prompt("Find the failing tests");
  while (asked.length < 3) await sleep(10);
  await s.session.reload();
  await s.session.prompt("And after the reload?");
  // Once the old guard's requests have been answered, a run whose boundaries would land them.
  await untilAnswered(asked, CLASSIFIER_MS);
  await s.session.prompt("And later?");
}, 120_000);
afterAll(async () => {
  await s?.dispose();
  await classifier?.close();
});

const branch = () => s.session.sessionManager.getBranch() as unknown as Entry[];

describe("/reload while a handed-over rest is pending", () => {
  it("reloaded with the rest still asked", () => {
    expect(asked.length).toBeGreaterThanOrEqual(3);
    expect(s.contexts.length).toBe(8);
  });

  it("sends no request a strict provider rejects", () => {
    expect(s.rejected).toEqual([]);
  });

  it("edits each output at most once, and names only entries on the branch", () => {
    const entries = branch();
    const ids = new Set(entries.map((e) => e.id));
    const edits = entries.filter((e) => e.type === "context_edit");
    const targets = edits.map((e) => e.targetId as string);
    expect(new Set(targets).size).toBe(targets.length);
    for (const t of targets) expect(ids.has(t)).toBe(true);
    for (const e of entries)
      if (e.customType === "context-guard")
        for (const r of e.data?.results ?? []) expect(ids.has(r.entryId)).toBe(true);
  });

  it("asks about each output at most twice", () => {
    for (const n of [0, 1, 2]) {
      expect(askedAbout(asked, n), `log${n}`).toBeLessThanOrEqual(2);
    }
  });
});
