// The keep rules end to end in the real Pi, with a classifier that judges every output not needed: a
// skill the work follows and a read of a file the run edits stay whole, with the rule as the record's
// reason (what `/guard list` shows), while an unrelated read goes. After "proceed" the next run end
// holds the first run's outputs again, and the model still sees them.
import { mkdir, mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { summarizeRecord } from "../../src/core/records/record.ts";
import type { GuardRecord } from "../../src/core/shared/types.ts";
import { keywordPolicy, type LoopbackClassifier, startLoopbackClassifier } from "../kit/loopback-classifier.ts";
import { createTestSession, type TestSession } from "../kit/sdk-session.ts";

const EXTENSION = resolve(import.meta.dirname, "../../src/main/index.ts");
const body = (word: string) =>
  Array.from({ length: 60 }, (_, i) => `${word} line ${i}: keep ${word}${i} in mind.`).join("\n");

let classifier: LoopbackClassifier;
let s: TestSession;

function records(): GuardRecord[] {
  return s.session.sessionManager
    .getBranch()
    .filter((e) => e.type === "custom" && e.customType === "context-guard")
    .map((e) => (e as { data: GuardRecord }).data);
}

const resultsFor = (label: string) => records().flatMap((r) => r.results.filter((x) => x.label === label));

/** Everything the model was sent last, as text. */
const lastContext = () => JSON.stringify(s.contexts.at(-1));

beforeAll(async () => {
  // Nothing matches: every item is judged not needed.
  classifier = await startLoopbackClassifier({ policy: keywordPolicy(/^$never/) });
  const agentDir = await mkdtemp(join(tmpdir(), "cg-keep-rules-"));
  const configPath = join(agentDir, "guard.json");
  await writeFile(
    configPath,
    JSON.stringify({
      pruneExchanges: false,
      midRun: false,
      exchangeBreakEven: false,
      // The rules' subject includes reads, which keepReads would keep unjudged.
      keepReads: false,
      // `continues` is off by default.
      keepRules: ["editing", "instructions", "continues", "shared-names"],
    }),
  );
  process.env.PI_CONTEXT_GUARD_CONFIG = configPath;
  s = await createTestSession({
    agentDir,
    extensionPaths: [EXTENSION],
    classifierBaseUrl: classifier.baseUrl,
    responses: [
      {
        toolCalls: [
          { name: "read", arguments: { path: "skills/release/SKILL.md" } },
          { name: "read", arguments: { path: "src/version.ts" } },
          { name: "read", arguments: { path: "src/unrelated.ts" } },
        ],
      },
      {
        toolCalls: [
          {
            name: "edit",
            arguments: {
              path: "src/version.ts",
              edits: [{ oldText: "version line 0:", newText: "version line zero:" }],
            },
          },
        ],
      },
      "Step 1 of the release skill is done: the version line is updated.",
      "Step 2 done: skillword12 checked.",
    ],
  });
  await mkdir(join(s.cwd, "skills/release"), { recursive: true });
  await mkdir(join(s.cwd, "src"));
  await writeFile(join(s.cwd, "skills/release/SKILL.md"), body("skillword"));
  await writeFile(join(s.cwd, "src/version.ts"), body("version"));
  await writeFile(join(s.cwd, "src/unrelated.ts"), body("unrelated"));
  await s.session.prompt("Start the release the way the skill says.");
  await s.session.prompt("proceed");
});
afterAll(async () => {
  await s?.dispose();
  await classifier?.close();
});

describe("keep rules in the real Pi", () => {
  it("removes what no rule holds", () => {
    expect(resultsFor("read src/unrelated.ts")[0]).toMatchObject({ outcome: "removed", reason: "not-needed" });
    expect(lastContext()).not.toContain("unrelated line 7");
  });

  it("keeps the skill and the edited file's read, naming the rule", () => {
    expect(resultsFor("read skills/release/SKILL.md")[0]).toMatchObject({
      outcome: "kept",
      reason: "keep:instructions",
    });
    expect(resultsFor("read src/version.ts")[0]).toMatchObject({ outcome: "kept", reason: "keep:editing" });
    const listed = records().flatMap((r) => summarizeRecord(r));
    expect(listed.some((l) => l.includes("read skills/release/SKILL.md") && l.includes("(keep:instructions)"))).toBe(
      true,
    );
  });

  it("after 'proceed', holds the first run's outputs again and the model still sees them", () => {
    expect(resultsFor("read src/version.ts").at(-1)).toMatchObject({ outcome: "kept", reason: "keep:continues" });
    expect(resultsFor("read skills/release/SKILL.md").at(-1)).toMatchObject({ reason: "keep:instructions" });
    const seen = lastContext();
    expect(seen).toContain("skillword59");
    expect(seen).toContain("version line 42");
  });
});
