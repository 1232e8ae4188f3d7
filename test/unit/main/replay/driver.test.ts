// The replay driver: known content gives exact edits, later requests carry the edited context, bad
// lines are reported by number while the rest replays, hosted answers are cached, and the real
// sessions in test/fixtures/sessions replay without a crash or an invalid draft.
import { existsSync } from "node:fs";
import { mkdtemp, readdir, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildSessionProjection, type SessionEntry } from "@earendil-works/pi-coding-agent";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LOCAL_MODEL_REF } from "../../../../src/core/classifier/lexical.ts";
import { sumMessages } from "../../../../src/core/replay/replay-metrics.ts";
import { DEFAULT_CONFIG, type GuardConfig } from "../../../../src/core/shared/config.ts";
import type { Answer, ClassifierOutcome, ClassifierRequest } from "../../../../src/core/shared/types.ts";
import { localClassify } from "../../../../src/main/pass/classifier.ts";
import type { ClassifyFn } from "../../../../src/main/pass/classify-queue.ts";
import { createTaskRunner, type TaskRunner } from "../../../../src/main/platform/pool.ts";
import { cachedClassifier, cachePath, requestKey } from "../../../../src/main/replay/cache.ts";
import { ContextSize } from "../../../../src/main/replay/context-size.ts";
import { type ReplayOptions, replaySession } from "../../../../src/main/replay/driver.ts";
import { parseSessionText } from "../../../../src/main/replay/reader.ts";

const REPO_ROOT = join(import.meta.dirname, "../../../..");
/** Real Pi sessions from public repositories (copied verbatim from the workplace's shared/sessions). */
const SHARED_SESSIONS = join(REPO_ROOT, "test", "fixtures", "sessions");

// Short hand-built sessions: the cache gates would defer every edit (they are tested in core/cache/).
// The run end waits for its pass: the hand-over has a test of its own.
const CONFIG: GuardConfig = {
  ...DEFAULT_CONFIG,
  exchangeBreakEven: false,
  excludeTools: [...DEFAULT_CONFIG.excludeTools],
  settleBudgetMs: DEFAULT_CONFIG.timeoutMs,
};

// 30 files of 8 matches each; only src/billing/totals.ts holds what the answer is about.
const GREP_LINES = Array.from({ length: 240 }, (_, i) => {
  const f = Math.floor(i / 8);
  return f === 17
    ? `src/billing/totals.ts:${i}:export function computeTotals(items: Item[]) { return sumPrices(items, ${i}); }`
    : `src/module${f}/handler${f}.ts:${i}:const value${i} = readConfig("section${f}").entry${i};`;
});
const GREP = `${GREP_LINES.join("\n")}\n`;
const LISTING = Array.from({ length: 24 }, (_, i) => `-rw-r--r-- 1 dev dev ${1000 + i} Mar 2 zebraFile${i}.txt`).join(
  "\n",
);

let clock = Date.UTC(2026, 2, 2, 8, 0, 0);
function entry(id: string, parentId: string | null, fields: Record<string, unknown>): string {
  clock += 1000;
  return JSON.stringify({ id, parentId, timestamp: new Date(clock).toISOString(), ...fields });
}
const msg = (id: string, parentId: string | null, message: Record<string, unknown>) =>
  entry(id, parentId, { type: "message", message: { timestamp: clock, ...message } });
const assistant = (content: unknown[], stopReason: string) => ({
  role: "assistant",
  content,
  api: "anthropic-messages",
  provider: "anthropic",
  model: "claude-sonnet-4-5",
  stopReason,
});
const bash = (id: string, command: string) => ({ type: "toolCall", id, name: "bash", arguments: { command } });
const result = (callId: string, text: string) => ({
  role: "toolResult",
  toolCallId: callId,
  toolName: "bash",
  content: [{ type: "text", text }],
  isError: false,
});

/**
 * The hand-built session: two prompts; the first run greps, lists a folder, and answers. The second
 * prompt comes `promptGapMs` after that answer.
 */
function sessionLines(promptGapMs = 1000): string[] {
  clock = Date.UTC(2026, 2, 2, 8, 0, 0);
  const firstRun = [
    JSON.stringify({
      type: "session",
      version: 3,
      id: "replay-test",
      timestamp: "2026-03-02T08:00:00.000Z",
      cwd: "/p",
    }),
    entry("e01", null, { type: "model_change", provider: "anthropic", modelId: "claude-sonnet-4-5" }),
    msg("e02", "e01", { role: "user", content: "Where is the total of an order computed?" }),
    msg("e03", "e02", assistant([bash("c1", "rg -n total src")], "toolUse")),
    msg("e04", "e03", result("c1", GREP)),
    msg("e05", "e04", assistant([bash("c2", "ls -l data")], "toolUse")),
    msg("e06", "e05", result("c2", LISTING)),
    msg(
      "e07",
      "e06",
      assistant(
        [{ type: "text", text: "Order totals are computed by `computeTotals` in `src/billing/totals.ts`." }],
        "stop",
      ),
    ),
  ];
  clock += promptGapMs - 1000;
  return [
    ...firstRun,
    msg("e08", "e07", { role: "user", content: "Thanks. And what is `value27` for?" }),
    msg(
      "e09",
      "e08",
      assistant([{ type: "text", text: 'It is a config entry, read by `readConfig("section3")`.' }], "stop"),
    ),
  ];
}

/** Keeps the chunk that holds computeTotals, and judges every small output not needed. */
const keywordClassify: ClassifyFn = async (request: ClassifierRequest): Promise<ClassifierOutcome> => {
  const answers: Record<string, Answer> = {};
  const chunks = (request.state.chunks ?? {}) as Record<string, string>;
  const focus = Object.keys(chunks).find((id) => chunks[id]?.includes("computeTotals"));
  for (const [id, q] of Object.entries(request.questions)) {
    if (q.type === "choice") {
      const choice = focus ?? "none";
      const probabilities = Object.fromEntries(
        Object.keys(q.criteria).map((k) => [k, k === choice ? 0.7 : 0.3 / (Object.keys(q.criteria).length - 1)]),
      );
      answers[id] = { type: "choice", choice, probabilities, confidence: 0.7 };
    } else if (id === "keep_whole") answers[id] = { type: "bool", probability: 0.1 };
    else if (id.startsWith("chunk_"))
      answers[id] = { type: "bool", probability: chunks[id]?.includes("computeTotals") ? 0.9 : 0.05 };
    else answers[id] = { type: "bool", probability: 0.1 };
  }
  return { status: "stop", answers, inputTokens: 100, costUsd: 0.00001 };
};

let runner: TaskRunner;
beforeAll(async () => {
  runner = await createTaskRunner({ backend: "piscina", minThreads: 1, maxThreads: 1 });
});
afterAll(async () => {
  await runner.destroy();
});

/** The replacement text of a context_edit entry ("" when there is none). */
function editText(entry: SessionEntry | undefined): string {
  if (entry?.type !== "context_edit" || !entry.replacement) return "";
  const content = entry.replacement.content;
  return typeof content === "string" ? content : content.map((b) => ("text" in b ? b.text : "")).join("\n");
}

function options(classify: ClassifyFn, over: Partial<ReplayOptions> = {}): ReplayOptions {
  return { runner, classify, modelRef: "test/keyword", config: CONFIG, ...over };
}

describe("replaySession on a hand-built session", () => {
  it("with the hand-over, lands a run end's drafts at the next boundary when the next prompt came soon", async () => {
    const file = parseSessionText(`${sessionLines().join("\n")}\n`, "handed.jsonl");
    const applied: SessionEntry[][] = [];
    const config = { ...CONFIG, settleBudgetMs: DEFAULT_CONFIG.settleBudgetMs };
    const metrics = await replaySession(file, options(keywordClassify, { config, onApplied: (e) => applied.push(e) }));
    // The next prompt came seconds later: the drafts land at the second run's end, which then runs its own
    // pass (it finds nothing of its run to judge: the second run has no tool output).
    expect(metrics.passes.map((p) => [p.phase, p.line, p.status])).toEqual([
      ["run-end", 8, "done"],
      ["run-end", 10, "skipped"],
    ]);
    const [edits] = applied as [SessionEntry[]];
    expect(edits.map((e) => e.type)).toEqual(["context_edit", "context_edit", "custom"]);
    expect(edits[0]?.parentId).not.toBe("e07");
    expect(metrics.passes[0]?.drafts).toBe(2);
    expect(metrics.passes[0]?.landedLater).toBe(true);
  });

  it("with the hand-over, applies a run end's drafts before a next prompt that came after the pass ended", async () => {
    // Five seconds on: the pass's one wave of calls ended long before, at the default latency.
    const file = parseSessionText(`${sessionLines(5000).join("\n")}\n`, "handed-late.jsonl");
    const config = { ...CONFIG, settleBudgetMs: DEFAULT_CONFIG.settleBudgetMs };
    const applied: SessionEntry[][] = [];
    const metrics = await replaySession(file, options(keywordClassify, { config, onApplied: (e) => applied.push(e) }));
    expect(metrics.passes.map((p) => [p.phase, p.line, p.status])).toEqual([
      ["run-end", 8, "done"],
      ["run-end", 10, "skipped"],
    ]);
    expect(applied[0]?.[0]?.parentId).toBe("e07");
    expect(metrics.passes[0]?.landedLater).toBeUndefined();
    // At a latency of six seconds per wave the pass was still asking: its drafts land at the next boundary.
    const slow: SessionEntry[][] = [];
    await replaySession(file, options(keywordClassify, { config, waveMs: 6000, onApplied: (e) => slow.push(e) }));
    expect(slow[0]?.[0]?.parentId).not.toBe("e07");
  });

  it("applies exactly the expected edits at the run end, before the next prompt", async () => {
    const file = parseSessionText(`${sessionLines().join("\n")}\n`, "known.jsonl");
    expect(file.problems).toEqual([]);
    const applied: SessionEntry[][] = [];
    const metrics = await replaySession(file, options(keywordClassify, { onApplied: (e) => applied.push(e) }));

    // One run end edits (the second run has no tool output); the mid-run turns had nothing old enough.
    expect(metrics.passes.map((p) => [p.phase, p.line, p.status])).toEqual([
      ["run-end", 8, "done"],
      ["run-end", 10, "skipped"],
    ]);
    expect(applied).toHaveLength(1);
    const [edits] = applied as [SessionEntry[]];
    expect(edits.map((e) => e.type)).toEqual(["context_edit", "context_edit", "custom"]);

    const kept = GREP_LINES.slice(136, 144).join("\n");
    const grepEdit = edits[0] as Extract<SessionEntry, { type: "context_edit" }>;
    expect(grepEdit.targetId).toBe("e04");
    expect(grepEdit.parentId).toBe("e07");
    expect(grepEdit.replacement).toEqual({
      content: [
        {
          type: "text",
          text: [
            '[context-guard] Distilled the output of bash `rg -n total src` (19.1k → 1.6k chars): kept 8 of 240 lines; the rest was judged not needed for the answer. Full output: recall({"entryId":"e04"}).',
            "[… 136 lines omitted: matches in src/module0/handler0.ts, src/module1/handler1.ts, src/module2/handler2.ts, src/module3/handler3.ts, src/module4/handler4.ts and 12 more; held src/module5/handler5.ts, src/module6/handler6.ts, src/module7/handler7.ts, src/module8/handler8.ts …]",
            kept,
            "[… 96 lines omitted: matches in src/module18/handler18.ts, src/module19/handler19.ts, src/module20/handler20.ts, src/module21/handler21.ts, src/module22/handler22.ts and 7 more; held src/module23/handler23.ts, src/module24/handler24.ts, src/module25/handler25.ts …]",
          ].join("\n"),
        },
      ],
    });
    const smallEdit = edits[1] as Extract<SessionEntry, { type: "context_edit" }>;
    expect(smallEdit.targetId).toBe("e06");
    expect(smallEdit.replacement).toEqual({
      content: [
        {
          type: "text",
          text:
            "[context-guard] Omitted the output of bash `ls -l data` (1.1k chars): judged no longer needed. " +
            `It held: ${Array.from({ length: 17 }, (_, i) => `zebraFile${i}.txt`).join(", ")}. ` +
            'Full output: recall({"entryId":"e06"}).',
        },
      ],
    });
    const record = edits[2] as Extract<SessionEntry, { type: "custom" }>;
    expect(record.customType).toBe("context-guard");
    expect(record.data).toMatchObject({ phase: "run-end", model: "test/keyword", requests: 2 });

    // Requests 1–3 ran before the edits; the last one carries the distilled context.
    const [r1, r2, r3, r4] = metrics.requests;
    for (const r of [r1, r2, r3]) expect(r?.on).toBe(r?.off);
    expect(r4?.line).toBe(10);
    const saved = GREP.length - editText(grepEdit).length + (LISTING.length - editText(smallEdit).length);
    expect((r4?.off ?? 0) - (r4?.on ?? 0)).toBe(saved);
    expect(metrics.totals.edits).toEqual({ large: 1, small: 1 });
    expect(metrics.totals.classifierRequests).toBe(2);
    expect(metrics.totals.invalidDrafts).toBe(0);

    // The answer names section3 and readConfig, which only removed chunks held; value27 counts for nothing, as the
    // user typed it; zebraFile names never come back.
    expect(metrics.suspects.map((s) => [s.kind, s.tier, s.entryId, s.line, s.atLine, s.tokens])).toEqual([
      ["chunk", "likely-needed", "e04", 5, 10, ["section3", "readConfig"]],
    ]);
    expect(metrics.totals.proxy).toMatchObject({ removed: 2, likelyNeeded: { items: 1, rate: 0.5 } });
  });

  it("runs the local classifier through the same pipeline and keeps the chunk the answer is about", async () => {
    const file = parseSessionText(`${sessionLines().join("\n")}\n`, "known.jsonl");
    const applied: SessionEntry[][] = [];
    const metrics = await replaySession(
      file,
      options(localClassify(), { modelRef: LOCAL_MODEL_REF, onApplied: (e) => applied.push(e) }),
    );
    expect(metrics.totals.invalidDrafts).toBe(0);
    const text = editText(applied[0]?.find((e) => e.type === "context_edit" && e.targetId === "e04"));
    expect(text).toContain("src/billing/totals.ts:136:export function computeTotals");
    expect(text).not.toContain("src/module3/handler3.ts:24:");
  });

  it("reports a malformed line and a truncated last line by number, and replays the rest", async () => {
    const lines = sessionLines();
    lines[1] = '{"type":"model_change","id":"e01",';
    const text = `${lines.join("\n")}\n{"type":"message","id":"e10","parentId":"e09","timestamp":"2026-`;
    const file = parseSessionText(text, "broken.jsonl");
    expect(file.problems.map((p) => p.line)).toEqual([2, 11, 3]);
    expect(file.problems[0]?.message).toMatch(/^line 2 is not valid JSON/);
    expect(file.problems[1]?.message).toMatch(/^line 11 is truncated: the file ends in the middle of an entry/);
    expect(file.problems[2]?.message).toMatch(/^line 3: its parent entry "e01" is missing/);
    const applied: SessionEntry[][] = [];
    const metrics = await replaySession(file, options(keywordClassify, { onApplied: (e) => applied.push(e) }));
    expect(metrics.problems).toHaveLength(3);
    expect(metrics.requests).toHaveLength(4);
    expect(
      applied[0]?.filter((e) => e.type === "context_edit").map((e) => (e as { targetId: string }).targetId),
    ).toEqual(["e04", "e06"]);
  });
});

describe("ContextSize", () => {
  it("matches Pi's projection after edits and a compaction", () => {
    const file = parseSessionText(`${sessionLines().join("\n")}\n`, "known.jsonl");
    const list: SessionEntry[] = [];
    const size = new ContextSize();
    const check = () => {
      const full = sumMessages(buildSessionProjection(list, list.at(-1)?.id ?? null).messages);
      expect(size.current(list)).toBe(full);
    };
    let parent: string | null = null;
    const push = (e: SessionEntry) => {
      const linked = { ...e, parentId: parent } as SessionEntry;
      parent = linked.id;
      list.push(linked);
      size.add(linked);
      check();
    };
    for (const e of file.branch.slice(0, 7)) push(e);
    const stamp = "2026-03-02T09:00:00.000Z";
    push({
      type: "context_edit",
      id: "x1",
      parentId: null,
      timestamp: stamp,
      targetId: "e04",
      replacement: null,
    } as SessionEntry);
    push(file.branch[7] as SessionEntry);
    push({
      type: "compaction",
      id: "x2",
      parentId: null,
      timestamp: stamp,
      summary: "The user asked where totals are computed.",
      firstKeptEntryId: "e07",
      tokensBefore: 5000,
    } as SessionEntry);
    push(file.branch[8] as SessionEntry);
  });
});

describe("answer cache", () => {
  it("stores answered requests by hash and serves them again without asking", async () => {
    const dir = await mkdtemp(join(tmpdir(), "cg-cache-"));
    let asked = 0;
    const inner: ClassifyFn = async (request) => {
      asked++;
      return request.state.fail
        ? { status: "error", error: "boom" }
        : { status: "stop", answers: { a: { type: "bool", probability: 0.25 } }, inputTokens: 50, costUsd: 0.002 };
    };
    const request: ClassifierRequest = { state: { x: 1 }, questions: {} };
    const opts = { signal: new AbortController().signal, timeoutMs: 1000 };
    const first = cachedClassifier(inner, dir, "openrouter/~typesafe/jev-latest");
    expect((await first.classify(request, opts)).costUsd).toBe(0.002);
    const again = cachedClassifier(inner, dir, "openrouter/~typesafe/jev-latest");
    const hit = await again.classify(request, opts);
    expect(hit).toMatchObject({ status: "stop", answers: { a: { type: "bool", probability: 0.25 } }, costUsd: 0 });
    expect(asked).toBe(1);
    expect(again.stats).toEqual({ hits: 1, misses: 0, writes: 0 });
    const key = requestKey("openrouter/~typesafe/jev-latest", request);
    expect(key).not.toBe(requestKey("openrouter/other", request));
    expect(existsSync(cachePath(dir, key))).toBe(true);
    expect((await readFile(cachePath(dir, key))).length).toBeGreaterThan(0);
    // Errors are not stored: they are asked again next time.
    const failing: ClassifierRequest = { state: { fail: true }, questions: {} };
    await again.classify(failing, opts);
    await again.classify(failing, opts);
    expect(asked).toBe(3);
    expect((await readdir(dir)).length).toBe(1);
  });
});

describe("the real sessions in test/fixtures/sessions", () => {
  it("replay with the local classifier without a crash, a failed pass or an invalid draft", async () => {
    const names = (await readdir(SHARED_SESSIONS)).filter((n) => n.endsWith(".jsonl")).sort();
    expect(names.length).toBeGreaterThanOrEqual(3);
    for (const name of names) {
      const text = await readFile(join(SHARED_SESSIONS, name), "utf8");
      const file = parseSessionText(text, name);
      const metrics = await replaySession(file, options(localClassify(), { modelRef: LOCAL_MODEL_REF }));
      expect(metrics.requests.length, name).toBeGreaterThan(0);
      expect(
        metrics.passes.filter((p) => p.status === "failed"),
        name,
      ).toEqual([]);
      expect(metrics.totals.invalidDrafts, name).toBe(0);
      expect(metrics.totals.runEnds, name).toBeGreaterThan(0);
      for (const r of metrics.requests) expect(r.on, name).toBeLessThanOrEqual(r.off);
      if (name.includes("pi-mono")) expect(file.version).toBe(1);
    }
  });
});
