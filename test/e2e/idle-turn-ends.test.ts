// Turn ends the guard does not need, in the real Pi: Pi skips a turn_end boundary that no extension
// listens to, and otherwise rebuilds its context from the whole branch before and after each handler.
// On turns where the guard has nothing to land the boundary runs no handler and builds nothing; a
// background checkpoint still starts while the run goes on and its drafts land at a later turn_end.
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { JsonObject } from "@earendil-works/pi-ai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { GuardRecord } from "../../src/core/shared/types.ts";
import { keywordPolicy, type LoopbackClassifier, startLoopbackClassifier } from "../kit/loopback-classifier.ts";
import { createTestSession, type FauxResponse, type TestSession } from "../kit/sdk-session.ts";
import { testLog } from "../kit/test-log.ts";

const EXTENSION = resolve(import.meta.dirname, "../../src/main/index.ts");
const TURNS = 24;
const CLASSIFIER_MS = 150;
const TURN_MS = 120;

/** One turn_end dispatch as Pi ran it. */
interface Dispatch {
  /** Some extension listened to turn_end when Pi dispatched it. */
  listened: boolean;
  /** Times Pi built the boundary's context for it (a copy of the branch and its projection each). */
  builds: number;
  /** Guard records the boundary appended. */
  records: GuardRecord[];
}

let classifier: LoopbackClassifier;
let s: TestSession;
const dispatches: Dispatch[] = [];

type Msg = { role: string; content?: string | Array<{ type: string; text?: string }> };
const textOf = (m: Msg) =>
  typeof m.content === "string" ? m.content : (m.content ?? []).map((b) => b.text ?? "").join("");

function records(): GuardRecord[] {
  return s.session.sessionManager
    .getBranch()
    .filter((e) => e.type === "custom" && e.customType === "context-guard")
    .map((e) => (e as { data: GuardRecord }).data);
}

/** Watches Pi's turn_end dispatch from outside (no turn_end handler of its own, which would count). */
function probe(session: TestSession["session"]): void {
  const pi = session as unknown as {
    _extensionRunner: { hasHandlers(event: string): boolean };
    _dispatchTurnEndBoundary: (...args: unknown[]) => Promise<boolean>;
    _buildBoundaryContext: (entries: unknown, boundary: string) => unknown;
  };
  let current: Dispatch | undefined;
  const build = pi._buildBoundaryContext.bind(pi);
  pi._buildBoundaryContext = (entries, boundary) => {
    if (boundary === "turn_end" && current) current.builds++;
    return build(entries, boundary);
  };
  const dispatch = pi._dispatchTurnEndBoundary.bind(pi);
  pi._dispatchTurnEndBoundary = async (...args) => {
    const before = records().length;
    current = { listened: pi._extensionRunner.hasHandlers("turn_end"), builds: 0, records: [] };
    const d = current;
    try {
      return await dispatch(...args);
    } finally {
      d.records = records().slice(before);
      dispatches.push(d);
      current = undefined;
    }
  };
}

beforeAll(async () => {
  classifier = await startLoopbackClassifier({ policy: keywordPolicy(/FAIL/), latencyMs: CLASSIFIER_MS });
  const agentDir = await mkdtemp(join(tmpdir(), "cg-idle-agent-"));
  const configPath = join(agentDir, "guard.json");
  await writeFile(
    configPath,
    JSON.stringify({ midRunBatchChars: 20_000, midRunMinAgeTurns: 3, midRunBreakEven: false, concurrency: 2 }),
  );
  process.env.PI_CONTEXT_GUARD_CONFIG = configPath;
  const responses: FauxResponse[] = [];
  for (let i = 0; i < TURNS; i++) {
    responses.push(async () => {
      await new Promise((r) => setTimeout(r, TURN_MS));
      return { toolCalls: [{ name: "bash", arguments: { command: `cat log${i}.txt` } as JsonObject }] };
    });
  }
  responses.push("Done.");
  s = await createTestSession({
    agentDir,
    extensionPaths: [EXTENSION],
    classifierBaseUrl: classifier.baseUrl,
    responses,
  });
  probe(s.session);
  for (let i = 0; i < TURNS; i++) await writeFile(join(s.cwd, `log${i}.txt`), testLog(i, 160));
  await s.session.prompt("Fix all failing tests");
}, 120_000);
afterAll(async () => {
  await s?.dispose();
  await classifier.close();
});

describe("turn ends the guard does not need", () => {
  it("leaves most turn_end boundaries without a handler, and Pi builds no context for them", () => {
    expect(dispatches).toHaveLength(TURNS + 1);
    const idle = dispatches.filter((d) => !d.listened);
    // Only the boundaries that land a checkpoint's drafts (and the run's last, which waits for one
    // pending while the run end waits whole, as the tests' settings ask) need the guard.
    expect(idle.length).toBeGreaterThan(TURNS / 2);
    for (const d of idle) {
      expect(d.builds).toBe(0);
      expect(d.records).toEqual([]);
    }
  });

  it("starts a checkpoint while the run goes on and lands its drafts at a later turn_end", () => {
    expect(classifier.requests.length).toBeGreaterThan(0);
    const landed = dispatches.findIndex((d) => d.records.some((r) => r.phase === "mid-run"));
    expect(landed).toBeGreaterThan(0);
    expect(dispatches[landed]?.listened).toBe(true);
    // The turns while it was asked went by without the guard.
    expect(dispatches.slice(0, landed).some((d) => !d.listened)).toBe(true);
    const midRun = records().find((r) => r.phase === "mid-run") as GuardRecord;
    expect(midRun.results.some((r) => r.outcome !== "kept")).toBe(true);
    // A later request of the run carries the edit.
    expect(
      s.contexts.some((c) =>
        (c as Msg[]).some((m) => m.role === "toolResult" && textOf(m).startsWith("[context-guard]")),
      ),
    ).toBe(true);
  });

  it("asks nothing twice: each output is judged at most once mid-run", () => {
    const judged = records()
      .filter((r) => r.phase === "mid-run")
      .flatMap((r) => r.results.filter((x) => x.kind !== "exchange").map((x) => x.entryId));
    expect(new Set(judged).size).toBe(judged.length);
  });
});
