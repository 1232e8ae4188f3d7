// keepReads (on by default) in the real Pi: with a classifier that would drop everything, a read's output
// is never sent to it and the model still sees it whole, while a command's output of the same size is
// stubbed; once the read's file changes on disk, the read goes for its changed-on-disk stub all the same.
import { mkdir, mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { GuardRecord } from "../../src/core/shared/types.ts";
import { dropAllPolicy } from "../kit/fault-session.ts";
import { type LoopbackClassifier, startLoopbackClassifier } from "../kit/loopback-classifier.ts";
import { createTestSession, type TestSession } from "../kit/sdk-session.ts";

const EXTENSION = resolve(import.meta.dirname, "../../src/main/index.ts");
const lines = (word: string) => Array.from({ length: 40 }, (_, i) => `export const ${word}${i} = ${i};`).join("\n");

let classifier: LoopbackClassifier;
let s: TestSession;
/** What the model saw in the request of the second prompt, before the file changed. */
let secondRequest = "";

function results(label: string) {
  return s.session.sessionManager
    .getBranch()
    .filter((e) => e.type === "custom" && e.customType === "context-guard")
    .flatMap((e) => (e as { data: GuardRecord }).data.results.filter((r) => r.label === label));
}

function toolResults(context: unknown[] | undefined): string {
  return ((context ?? []) as Array<{ role: string; content?: Array<{ text?: string }> }>)
    .filter((m) => m.role === "toolResult")
    .map((m) => m.content?.map((b) => b.text ?? "").join("\n"))
    .join("\n---\n");
}

beforeAll(async () => {
  classifier = await startLoopbackClassifier({ policy: dropAllPolicy });
  const agentDir = await mkdtemp(join(tmpdir(), "cg-keep-reads-"));
  const configPath = join(agentDir, "guard.json");
  // Defaults otherwise: keepReads is not set here.
  await writeFile(configPath, JSON.stringify({ pruneExchanges: false, midRun: false, exchangeBreakEven: false }));
  process.env.PI_CONTEXT_GUARD_CONFIG = configPath;
  s = await createTestSession({
    agentDir,
    extensionPaths: [EXTENSION],
    classifierBaseUrl: classifier.baseUrl,
    responses: [
      {
        toolCalls: [
          { name: "read", arguments: { path: "src/a.ts" } },
          { name: "bash", arguments: { command: "cat src/b.ts" } },
        ],
      },
      "a.ts and b.ts export forty constants each.",
      "Still the same.",
      "Noted.",
      "Done.",
    ],
  });
  await mkdir(join(s.cwd, "src"));
  await writeFile(join(s.cwd, "src/a.ts"), lines("alpha"));
  await writeFile(join(s.cwd, "src/b.ts"), lines("beta"));
  await s.session.prompt("What do src/a.ts and src/b.ts export?");
  await s.session.prompt("Anything else?");
  secondRequest = toolResults(s.contexts.at(-1));
  await writeFile(join(s.cwd, "src/a.ts"), lines("changed"));
  await s.session.prompt("Thanks.");
  await s.session.prompt("Bye.");
});
afterAll(async () => {
  await s?.dispose();
  await classifier?.close();
});

describe("keepReads by default in the real Pi", () => {
  it("never sends the read to the classifier, and the model still sees it whole", () => {
    expect(classifier.requests.length).toBeGreaterThan(0);
    expect(classifier.requests.some((r) => JSON.stringify(r).includes("alpha7"))).toBe(false);
    expect(secondRequest).toContain(lines("alpha"));
  });

  it("stubs the command's output of the same size", () => {
    expect(results("bash `cat src/b.ts`")[0]).toMatchObject({ outcome: "removed", reason: "not-needed" });
    expect(secondRequest).not.toContain("beta7");
  });

  it("replaces the read once its file changed on disk", () => {
    expect(results("read src/a.ts").at(-1)).toMatchObject({ outcome: "removed", reason: "changed-on-disk" });
    expect(toolResults(s.contexts.at(-1))).not.toContain("alpha7");
  });
});
