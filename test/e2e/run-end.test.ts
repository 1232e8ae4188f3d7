// End to end in the real Pi: an AgentSession with a scripted main model, the extension loaded from the
// checkout through Pi's own loader, and the real pi-ai System One client talking to a loopback Jev.
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { SWITCH_TYPE } from "../../src/core/records/off-spans.ts";
import type { GuardRecord } from "../../src/core/shared/types.ts";
import { keywordPolicy, type LoopbackClassifier, startLoopbackClassifier } from "../kit/loopback-classifier.ts";
import { createTestSession, type TestSession } from "../kit/sdk-session.ts";

const EXTENSION = resolve(import.meta.dirname, "../../src/main/index.ts");

/** A grep-style output: 40 files × 12 matches, with the answer's evidence in src/core/target.ts. */
function grepOutput(): string {
  const lines: string[] = [];
  for (let f = 0; f < 40; f++) {
    const file = f === 17 ? "src/core/target.ts" : `src/module${f}/handler${f}.ts`;
    for (let l = 1; l <= 12; l++) {
      const body =
        f === 17
          ? `export function target_fn(arg${l}: number) { return arg${l} * ${l}; }`
          : `const status${l} = readStatus(${f}, ${l});`;
      lines.push(`${file}:${l * 7}:${body}`);
    }
  }
  return `${lines.join("\n")}\n`;
}

function toolResultText(messages: unknown[]): string[] {
  const out: string[] = [];
  for (const m of messages as Array<{ role?: string; content?: Array<{ type: string; text?: string }> }>) {
    if (m.role !== "toolResult") continue;
    out.push(
      (m.content ?? [])
        .filter((b) => b.type === "text")
        .map((b) => b.text ?? "")
        .join("\n"),
    );
  }
  return out;
}

let classifier: LoopbackClassifier;
let agentDir: string;
const output = grepOutput();

beforeAll(async () => {
  classifier = await startLoopbackClassifier({ policy: keywordPolicy(/target_fn/) });
  agentDir = await mkdtemp(join(tmpdir(), "cg-e2e-agent-"));
});
afterAll(async () => {
  await classifier.close();
});

async function session(
  config: Record<string, unknown>,
  responses: Parameters<typeof createTestSession>[0]["responses"],
) {
  const configPath = join(agentDir, `guard-${Math.random().toString(36).slice(2)}.json`);
  await writeFile(configPath, JSON.stringify(config));
  process.env.PI_CONTEXT_GUARD_CONFIG = configPath;
  const s = await createTestSession({
    agentDir,
    extensionPaths: [EXTENSION],
    classifierBaseUrl: classifier.baseUrl,
    responses,
  });
  await writeFile(join(s.cwd, "results.txt"), output);
  return s;
}

function branchOf(s: TestSession) {
  return s.session.sessionManager.getBranch();
}

describe("run-end distillation in the real Pi", () => {
  let s: TestSession;
  afterAll(async () => s?.dispose());

  it("replaces the large output with the needed lines, verbatim, and records the pass", async () => {
    classifier.set({ behaviour: "answer", policy: keywordPolicy(/target_fn/) });
    const before = classifier.requests.length;
    s = await session({}, [
      { toolCalls: [{ name: "bash", arguments: { command: "cat results.txt" } }] },
      "target_fn is defined in src/core/target.ts.",
    ]);
    await s.session.prompt("Where is target_fn defined?");
    expect(classifier.requests.length).toBeGreaterThan(before);

    const branch = branchOf(s);
    const result = branch.find((e) => e.type === "message" && e.message.role === "toolResult");
    expect(result).toBeDefined();
    const edit = branch.find((e) => e.type === "context_edit");
    expect(edit).toMatchObject({ targetId: result?.id });
    const record = branch.find((e) => e.type === "custom" && e.customType === "context-guard");
    const data = (record as { data: GuardRecord }).data;
    expect(data).toMatchObject({ v: 1, phase: "run-end", model: "openrouter/~typesafe/jev-latest", timedOut: false });
    expect(data.results[0]).toMatchObject({ entryId: result?.id, outcome: "distilled", kind: "large" });
    expect(data.savedChars).toBeGreaterThan(output.length / 2);

    // The raw entry is untouched: recall reads it.
    const raw = s.session.sessionManager.getEntry(result?.id as string) as {
      message: { content: Array<{ text: string }> };
    };
    expect(raw.message.content[0]?.text).toContain("src/module0/handler0.ts:7:");
  });

  it("sends the replacement on the next request, keeps lines verbatim, and recall returns the raw output", async () => {
    const resultId = branchOf(s).find((e) => e.type === "message" && e.message.role === "toolResult")?.id as string;
    let seen = "";
    s.addResponses(
      (context) => {
        seen = toolResultText(context.messages)[0] ?? "";
        return { toolCalls: [{ name: "recall", arguments: { entryId: resultId, pattern: "target_fn" } }] };
      },
      { toolCalls: [{ name: "recall", arguments: { entryId: resultId } }] },
      "done",
    );
    await s.session.prompt("Show me the target_fn lines again.");

    expect(seen.startsWith("[context-guard] Distilled the output of bash `cat results.txt`")).toBe(true);
    expect(seen).toContain(`recall({"entryId":"${resultId}"})`);
    const originalLines = new Set(output.split("\n"));
    const body = seen.split("\n").slice(1);
    const kept = body.filter((l) => !l.startsWith("[… "));
    expect(kept.length).toBe(12);
    for (const line of kept) expect(originalLines.has(line)).toBe(true);
    expect(kept.every((l) => l.includes("target_fn"))).toBe(true);
    expect(body.some((l) => /^\[… \d+ lines omitted: matches in src\/module0\/handler0\.ts/.test(l))).toBe(true);
    expect(seen.length).toBeLessThan(output.length / 3);

    // What recall returned, as the session file holds it.
    const recallResults = branchOf(s)
      .filter((e) => e.type === "message" && e.message.role === "toolResult" && e.message.toolName === "recall")
      .map((e) => toolResultText([(e as { message: unknown }).message])[0] ?? "");
    expect(recallResults[0]?.split("\n")).toHaveLength(12);
    expect(recallResults[0]).toMatch(/^\d+: src\/core\/target\.ts:7:export function target_fn/);
    expect(recallResults[1]).toBe(output.slice(0, -1));
    // A second recall in the run (a whole one) brought the original back where it was (issue 21): the last
    // request shows it in place of the replacement, and the recalls as notes.
    const last = toolResultText(s.contexts.at(-1) ?? []);
    expect(last[0]).toBe(output);
    expect(last.slice(1).every((t) => t.startsWith(`[context-guard] This recall of ${resultId}`))).toBe(true);
  });

  it("gives the model an actionable error for an unknown id and a bad pattern", async () => {
    s.addResponses(
      { toolCalls: [{ name: "recall", arguments: { entryId: "nope1234" } }] },
      { toolCalls: [{ name: "recall", arguments: { entryId: "nope1234", pattern: "([" } }] },
      "ok",
    );
    await s.session.prompt("try recall");
    const last = s.contexts.at(-1) ?? [];
    const errors = (last as Array<{ role?: string; isError?: boolean; content?: Array<{ text?: string }> }>)
      .filter((m) => m.role === "toolResult" && m.isError)
      .map((m) => m.content?.[0]?.text ?? "");
    expect(errors.at(-2)).toMatch(/no entry "nope1234" on this branch.*\[context-guard\] note/);
    expect(errors.at(-1)).toMatch(/no entry "nope1234"/);
  });
});

describe("a classifier that hangs", () => {
  it("settles within the deadline with no edit, and records the timeout", async () => {
    classifier.set({ behaviour: "hang" });
    const s = await session({ timeoutMs: 800 }, [
      { toolCalls: [{ name: "bash", arguments: { command: "cat results.txt" } }] },
      "target_fn is in src/core/target.ts.",
    ]);
    try {
      // The server never answers: the prompt returns only because the deadline ended the pass.
      await s.session.prompt("Where is target_fn defined?");
      const branch = branchOf(s);
      expect(branch.some((e) => e.type === "context_edit")).toBe(false);
      const record = branch.find((e) => e.type === "custom" && e.customType === "context-guard") as {
        data: GuardRecord;
      };
      expect(record.data.timedOut).toBe(true);
      expect(record.data.savedChars).toBe(0);
      expect(record.data.results[0]).toMatchObject({ outcome: "kept", reason: "timeout" });
    } finally {
      classifier.set({ behaviour: "answer" });
      await s.dispose();
    }
  });
});

describe("the classifier calls' deadline", () => {
  it("is the pass's own: a call that has answered leaves no timer behind", async () => {
    // pi-ai's per-call timeoutMs would arm AbortSignal.timeout, whose timer, signal and listeners stay on
    // Pi's heap for the whole deadline after the answer: 1.6 MiB for a 1,200-request pass.
    classifier.set({ behaviour: "answer", policy: keywordPolicy(/target_fn/) });
    const before = classifier.requests.length;
    const s = await session({ timeoutMs: 60_000, midRun: false }, [
      { toolCalls: [{ name: "bash", arguments: { command: "cat results.txt" } }] },
      "target_fn is in src/core/target.ts.",
    ]);
    const timeouts = vi.spyOn(AbortSignal, "timeout");
    try {
      await s.session.prompt("Where is target_fn defined?");
      expect(classifier.requests.length).toBeGreaterThan(before);
      expect(branchOf(s).some((e) => e.type === "context_edit")).toBe(true);
      expect(timeouts).not.toHaveBeenCalled();
    } finally {
      timeouts.mockRestore();
      await s.dispose();
    }
  });
});

describe("guard off", () => {
  it("makes no classifier request and no edit; it only marks the branch off", async () => {
    const before = classifier.requests.length;
    const s = await session({ enabled: false }, [
      { toolCalls: [{ name: "bash", arguments: { command: "cat results.txt" } }] },
      "done",
    ]);
    try {
      await s.session.prompt("Where is target_fn defined?");
      expect(classifier.requests.length).toBe(before);
      const guardEntries = branchOf(s).filter((e) => e.type === "context_edit" || e.type === "custom");
      // The run was made with the guard off: a later pass never judges it (core/records/off-spans.ts).
      expect(guardEntries.map((e) => (e.type === "custom" ? e.customType : e.type))).toEqual([SWITCH_TYPE]);
    } finally {
      await s.dispose();
    }
  });
});
