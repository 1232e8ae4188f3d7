// Bad input everywhere: a settings file with every value wrong (or unreadable, or not JSON), recall
// arguments a model might send, a 50 MB line, images with corrupt headers, and session entries the
// extension does not know. Nothing crashes, nothing is lost, and every error says what to do. The same
// through the real Pi (/guard, Pi's tool validation, NUL bytes, lone surrogates, CRLF, binary) is in
// test/e2e/bad-input.test.ts.
import { chmod, mkdir, mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SessionManager } from "@earendil-works/pi-coding-agent";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { summarizeRecord } from "../../src/core/records/record.ts";
import { lifetime } from "../../src/core/records/stats.ts";
import { CONFIG_KEYS, DEFAULT_CONFIG, type GuardConfig } from "../../src/core/shared/config.ts";
import { imageChars, imageSize } from "../../src/core/shared/size.ts";
import type { ContextEditDraft, GuardRecord, SnapEntry } from "../../src/core/shared/types.ts";
import { runPass } from "../../src/main/pass/library-run-pass.ts";
import { type ProjectedLike, SnapshotBuilder } from "../../src/main/pass/snapshot.ts";
import { validateEdits } from "../../src/main/pass/validate.ts";
import { createTaskRunner, type TaskRunner } from "../../src/main/platform/pool.ts";
import { loadSettings } from "../../src/main/platform/settings.ts";
import { executeRecall } from "../../src/main/session/recall-tool.ts";
import { dropAll } from "../kit/answers.ts";
import { imageArb, propertyParams } from "../kit/arbitraries.ts";
import { NO_USAGE } from "../kit/pi-messages.ts";

// The settings as a user gets them: without the test run's environment default (vitest.config.ts).
const envBudget = process.env.PI_CONTEXT_GUARD_SETTLE_BUDGET_MS;
delete process.env.PI_CONTEXT_GUARD_SETTLE_BUDGET_MS;
afterAll(() => {
  if (envBudget !== undefined) process.env.PI_CONTEXT_GUARD_SETTLE_BUDGET_MS = envBudget;
});

let dir: string;
let runner: TaskRunner;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "cg-bad-"));
  runner = await createTaskRunner({ minThreads: 1, maxThreads: 1 });
});
afterAll(async () => {
  await runner.destroy();
});

// ------------------------------------------------------------------------------------------------------------
// Settings

/** A value of the wrong type for each key. */
function wrongValue(key: keyof GuardConfig): unknown {
  const d = DEFAULT_CONFIG[key];
  if (typeof d === "boolean") return "yes";
  if (typeof d === "number") return key.endsWith("Threshold") || key === "maxKeepRatio" ? 1.5 : -7.25;
  if (typeof d === "string") return 12345;
  if (Array.isArray(d)) return { not: "an array" };
  return 7;
}

describe("a settings file", () => {
  it("with every value wrong: the defaults, one warning per key that names it", async () => {
    const path = join(dir, "all-wrong.json");
    const raw = Object.fromEntries(CONFIG_KEYS.map((k) => [k, wrongValue(k)]));
    await writeFile(path, JSON.stringify(raw));
    const loaded = await loadSettings(path);
    expect(loaded.config).toEqual(DEFAULT_CONFIG);
    expect(loaded.warnings).toHaveLength(CONFIG_KEYS.length);
    CONFIG_KEYS.forEach((k, i) => {
      expect(loaded.warnings[i]?.startsWith(`${k}: `)).toBe(true);
    });
  });

  it("unreadable, not JSON, or not an object: the defaults and one warning", async () => {
    const cases: Array<[string, string | undefined, RegExp]> = [
      ["not-json.json", "{ nope", /is not valid JSON/],
      ["array.json", "[1, 2]", /settings must be a JSON object, got an array/],
      ["number.json", "42", /settings must be a JSON object/],
      ["a-directory", undefined, /cannot read .* \(EISDIR\)/],
    ];
    for (const [name, text, warning] of cases) {
      const path = join(dir, name);
      if (text === undefined) await mkdir(path, { recursive: true });
      else await writeFile(path, text);
      const loaded = await loadSettings(path);
      expect(loaded.config).toEqual(DEFAULT_CONFIG);
      expect(loaded.warnings).toHaveLength(1);
      expect(loaded.warnings[0]).toMatch(warning);
    }
    if (process.getuid?.() !== 0) {
      const path = join(dir, "no-permission.json");
      await writeFile(path, "{}");
      await chmod(path, 0o000);
      const loaded = await loadSettings(path);
      expect(loaded.warnings[0]).toMatch(/cannot read .*EACCES/);
    }
  });
});

// ------------------------------------------------------------------------------------------------------------
// Recall arguments

describe("recall with bad arguments", () => {
  const sm = SessionManager.inMemory("/tmp/cg-recall");
  const text = Array.from({ length: 50 }, (_, i) => `line ${i + 1} ${"a".repeat(30)}`).join("\n");
  sm.appendMessage({ role: "user", content: [{ type: "text", text: "go" }], timestamp: 1 } as never);
  const assistantId = sm.appendMessage({
    role: "assistant",
    content: [{ type: "toolCall", id: "c1", name: "bash", arguments: { command: "x" } }],
    api: "faux",
    provider: "faux",
    model: "m",
    usage: NO_USAGE,
    stopReason: "toolUse",
    timestamp: 2,
  } as never);
  const outputId = sm.appendMessage({
    role: "toolResult",
    toolCallId: "c1",
    toolName: "bash",
    content: [{ type: "text", text: `${text}\n${"a".repeat(40)}!` }],
    isError: false,
    timestamp: 3,
  } as never);
  const recall = (args: unknown, timeoutMs = 300) =>
    executeRecall(args, { sessionManager: sm } as never, { runner: () => runner, timeoutMs: () => timeoutMs });

  it.each([
    [
      "unknown id",
      { entryId: "nope1234" },
      /^recall: no entry "nope1234" on this branch\. Use the entryId from a \[context-guard\] note/,
    ],
    ["blank id", { entryId: "   " }, /^recall: entryId: entryId is empty/],
    ["1000-char id", { entryId: "x".repeat(1000) }, /^recall: entryId: entryId is too long/],
    ["no id", {}, /^recall: entryId: /],
    ["id not a string", { entryId: 42 }, /^recall: entryId: /],
    ["id of an assistant message", { entryId: "ASSISTANT" }, /is neither a tool output nor an earlier prompt/],
    ["empty pattern", { entryId: "OUTPUT", pattern: "" }, /^recall: pattern: pattern is empty/],
    [
      "10k-char pattern",
      { entryId: "OUTPUT", pattern: "a".repeat(10_000) },
      /^recall: pattern: pattern is longer than 500 characters/,
    ],
    ["invalid pattern", { entryId: "OUTPUT", pattern: "([" }, /^recall: invalid pattern: /],
    ["invalid flags", { entryId: "OUTPUT", pattern: "/x/zz" }, /^recall: invalid pattern: .*flags/i],
    [
      "catastrophic pattern",
      { entryId: "OUTPUT", pattern: "(a+)+$" },
      /^recall: the pattern took longer than 300 ms; use a simpler pattern/,
    ],
    ["negative offset", { entryId: "OUTPUT", offset: -1 }, /^recall: offset: offset starts at 1/],
    ["offset 0", { entryId: "OUTPUT", offset: 0 }, /^recall: offset: offset starts at 1/],
    ["fractional offset", { entryId: "OUTPUT", offset: 1.5 }, /^recall: offset: offset must be a whole number/],
    ["NaN offset", { entryId: "OUTPUT", offset: Number.NaN }, /^recall: offset: /],
    ["offset as a string", { entryId: "OUTPUT", offset: "5" }, /^recall: offset: /],
    ["limit 0", { entryId: "OUTPUT", limit: 0 }, /^recall: limit: limit must be at least 1/],
    ["negative limit", { entryId: "OUTPUT", limit: -3 }, /^recall: limit: limit must be at least 1/],
    ["fractional limit", { entryId: "OUTPUT", limit: 2.5 }, /^recall: limit: limit must be a whole number/],
    ["infinite limit", { entryId: "OUTPUT", limit: Number.POSITIVE_INFINITY }, /^recall: limit: /],
  ])("recall, %s", async (_label, args, message) => {
    const resolved: Record<string, unknown> = { ...args };
    if (resolved.entryId === "ASSISTANT") resolved.entryId = assistantId;
    if (resolved.entryId === "OUTPUT") resolved.entryId = outputId;
    await expect(recall(resolved)).rejects.toThrow(message);
  });

  it("an offset past the end says how many lines there are", async () => {
    const out = await recall({ entryId: outputId, offset: 999 });
    expect(out.content[0]).toEqual({ type: "text", text: "[offset 999 is past the end: there are 51 lines]" });
  });
});

describe("a huge tool output", () => {
  it("a 50 MB single line passes through the worker and is judged in pieces, quickly", async () => {
    const line = "q".repeat(50 * 1024 * 1024);
    const entries: SnapEntry[] = [
      { id: "u", type: "message", role: "user", visible: true, text: "go", images: 0 },
      {
        id: "a",
        type: "message",
        role: "assistant",
        visible: true,
        text: "",
        images: 0,
        toolCalls: [{ id: "c", name: "bash", args: { command: "cat big" } }],
      },
      {
        id: "t",
        type: "message",
        role: "toolResult",
        visible: true,
        text: line,
        images: 0,
        toolCallId: "c",
        toolName: "bash",
      },
      { id: "z", type: "message", role: "assistant", visible: true, text: "done", images: 0 },
    ];
    const out = await runPass(
      entries,
      { runner, classify: dropAll, config: DEFAULT_CONFIG, modelRef: "t/t" },
      {
        phase: "run-end",
      },
    );
    // Cut into pieces that fit the requests, the line is judged like any output (issue 23: it was never
    // sent, and left no record): the record says what happened to it, and an edit replaces it shorter.
    expect(out.status).toBe("done");
    if (out.status !== "done") return;
    const result = out.record.results.find((r) => r.entryId === "t");
    expect(result?.reason).toBeTruthy();
    for (const edit of out.edits) {
      const text = JSON.stringify(edit.replacement);
      expect(text.length).toBeLessThan(line.length);
    }
  });
});

describe("images with corrupt or truncated headers", () => {
  it("size estimates never throw and stay finite and positive", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          imageArb,
          fc.record({ data: fc.string({ maxLength: 200 }), mimeType: fc.string({ maxLength: 20 }) }),
          fc.record({
            data: fc.uint8Array({ maxLength: 300 }).map((b) => Buffer.from(b).toString("base64")),
            mimeType: fc.constant("image/png"),
          }),
        ),
        (img) => {
          const head = { mimeType: img.mimeType, head: img.data };
          const chars = imageChars(head);
          expect(Number.isFinite(chars) && chars > 0).toBe(true);
          const size = imageSize(head);
          if (size) expect(size.width > 0 && size.height > 0).toBe(true);
        },
      ),
      propertyParams(300),
    );
  });
});

// ------------------------------------------------------------------------------------------------------------
// Session entries the extension does not know, and damaged records of its own

describe("unknown and damaged session entries", () => {
  it("a session with future entry types and damaged records: passes, stats and recall all work", async () => {
    const ts = "2026-01-01T00:00:00.000Z";
    const big = Array.from({ length: 600 }, (_, i) => `src/u${i % 25}.ts:${i}:unknown ${i}`).join("\n");
    const file = [
      { type: "session", version: 3, id: "s1", timestamp: ts, cwd: "/tmp" },
      { type: "hologram", id: "h1", parentId: null, timestamp: ts, payload: { x: 1 } },
      {
        type: "message",
        id: "u1",
        parentId: "h1",
        timestamp: ts,
        message: { role: "user", content: "go", timestamp: 1 },
      },
      {
        type: "custom",
        id: "r0",
        parentId: "u1",
        timestamp: ts,
        customType: "context-guard",
        data: { results: "damaged" },
      },
      {
        type: "custom",
        id: "r1",
        parentId: "r0",
        timestamp: ts,
        customType: "context-guard",
        data: { phase: "mid-run", results: [null, 3, { kind: "exchange" }] },
      },
      { type: "custom", id: "r2", parentId: "r1", timestamp: ts, customType: "context-guard", data: null },
      {
        type: "message",
        id: "a1",
        parentId: "r2",
        timestamp: ts,
        message: {
          role: "assistant",
          content: [
            { type: "toolCall", id: "c1", name: "bash", arguments: { command: "rg" } },
            { type: "telepathy", x: 1 },
          ],
          api: "faux",
          provider: "faux",
          model: "m",
          usage: NO_USAGE,
          stopReason: "toolUse",
          timestamp: 2,
        },
      },
      {
        type: "message",
        id: "t1",
        parentId: "a1",
        timestamp: ts,
        message: {
          role: "toolResult",
          toolCallId: "c1",
          toolName: "bash",
          content: [{ type: "text", text: big }, { type: "hologram" }],
          isError: false,
          timestamp: 3,
        },
      },
      { type: "quantum_state", id: "q1", parentId: "t1", timestamp: ts, spin: "up" },
      {
        type: "message",
        id: "z1",
        parentId: "q1",
        timestamp: ts,
        message: {
          role: "assistant",
          content: [{ type: "text", text: "done" }],
          api: "faux",
          provider: "faux",
          model: "m",
          usage: NO_USAGE,
          stopReason: "stop",
          timestamp: 4,
        },
      },
    ];
    const path = join(dir, "future.jsonl");
    await writeFile(path, `${file.map((e) => JSON.stringify(e)).join("\n")}\n`);
    const sm = SessionManager.open(path, dir);
    const context = sm.buildSessionProjection().entries as unknown as ProjectedLike[];
    const entries = new SnapshotBuilder().entries(context);
    for (const phase of ["run-end", "mid-run"] as const) {
      const out = await runPass(
        entries,
        {
          runner,
          classify: dropAll,
          config: { ...DEFAULT_CONFIG, midRunBatchChars: 0, midRunBreakEven: false, midRunMinAgeTurns: 1 },
          modelRef: "t/t",
          validate: (e) => validateEdits(e, context),
        },
        { phase, cache: { family: "other" } },
      );
      if (out.status === "done")
        for (const d of out.edits as ContextEditDraft[]) expect(sm.getEntry(d.targetId)).toBeDefined();
    }
    const branch = sm.getBranch();
    expect(() => lifetime(branch)).not.toThrow();
    for (const e of branch) {
      if (e.type === "custom" && e.customType === "context-guard" && e.data && typeof e.data === "object") {
        expect(() => summarizeRecord(e.data as GuardRecord)).not.toThrow();
      }
    }
    const recalled = await executeRecall({ entryId: "u1" }, { sessionManager: sm } as never, {
      runner: () => runner,
      timeoutMs: () => 1000,
    });
    expect((recalled.content[0] as { text: string }).text).toMatch(/^## user\ngo/);
  });
});
