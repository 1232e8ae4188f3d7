import { describe, expect, it } from "vitest";
import {
  DEFAULT_BREAK_EVEN_MARGIN,
  entryChars,
  exchangeGate,
  exchangeSaving,
  IMAGE_CHARS,
  REWRITE_FACTOR,
  rewriteChars,
  rewriteFactor,
  sessionRequests,
} from "../../../../src/core/cache/break-even.ts";
import { findRunStart } from "../../../../src/core/distill/run.ts";
import {
  collectExchanges,
  type Exchange,
  exchangeMemo,
  exchangeResult,
  interpretExchanges,
} from "../../../../src/core/items/exchanges.ts";
import type { RecordResult, SnapEntry, SnapRole, SnapToolCall } from "../../../../src/core/shared/types.ts";
import { assistantEntry, messageEntry, recordEntry, toolCall, userEntry } from "../../../kit/snap.ts";

let seq = 0;
const nextId = () => `b${++seq}`;

const entry = (role: SnapRole, text: string, extra: Partial<SnapEntry> = {}): SnapEntry =>
  messageEntry(nextId(), role, text, extra);
const user = (text: string) => userEntry(nextId(), text);
const assistant = (text: string, toolCalls?: SnapToolCall[]) => assistantEntry(nextId(), text, toolCalls);
const call = (): SnapToolCall => toolCall(`c${++seq}`, "bash", { command: "make" });
/** A tool result without isError (the break-even maths must not need it). */
const result = (c: SnapToolCall, text: string) => entry("toolResult", text, { toolCallId: c.id, toolName: c.name });
const record = (results: RecordResult[]): SnapEntry => recordEntry(nextId(), { v: 1, phase: "run-end", results });

/** A finished exchange whose tool output has `size` characters. */
function exchange(prompt: string, size: number): SnapEntry[] {
  const c = call();
  return [user(prompt), assistant("", [c]), result(c, "o".repeat(size)), assistant(`${prompt}: done`)];
}

/** The current run: prompt, one big tool output (the pass's other edit), the answer. */
function run(prompt: string, output = 20_000): SnapEntry[] {
  const c = call();
  return [user(prompt), assistant("", [c]), result(c, "r".repeat(output)), assistant(`${prompt}: answered`)];
}

const collect = (entries: SnapEntry[], keepRecentExchanges = 0): Exchange[] => {
  const start = findRunStart(entries);
  return collectExchanges(entries, start, { pruneExchanges: true, keepRecentExchanges }, exchangeMemo(entries, start));
};

const sum = (entries: SnapEntry[]) => entries.reduce((n, e) => n + entryChars(e), 0);

describe("entryChars", () => {
  it("counts visible text, tool calls, summaries and images at a flat rate", () => {
    expect(entryChars(user("hello"))).toBe(5);
    expect(entryChars({ ...user("hi"), images: 2 })).toBe(2 + 2 * IMAGE_CHARS);
    expect(IMAGE_CHARS).toBe(6400);
    const c: SnapToolCall = { id: "x", name: "read", args: { path: "a.ts" } };
    expect(entryChars(assistant("ok", [c]))).toBe(2 + 4 + JSON.stringify({ path: "a.ts" }).length);
    expect(entryChars(entry("compactionSummary", "", { type: "compaction", summary: "s".repeat(50) }))).toBe(50);
    expect(entryChars({ ...user("gone"), visible: false })).toBe(0);
  });

  it("counts requests as visible assistant messages", () => {
    const entries = [...exchange("a", 10), { ...assistant("omitted"), visible: false }, user("q")];
    expect(sessionRequests(entries)).toBe(2);
  });
});

describe("rewriteChars", () => {
  const entries = [...exchange("a", 1000), ...exchange("b", 2000), ...run("q", 3000)];
  const total = sum(entries);

  it("re-sends everything from the earliest edited entry", () => {
    const b = entries[4] as SnapEntry;
    const r = entries[10] as SnapEntry;
    expect(rewriteChars(entries, [r.id, b.id], "anthropic")).toBe(sum(entries.slice(4)));
    expect(rewriteChars(entries, [r.id], "other")).toBe(sum(entries.slice(10)));
    expect(rewriteChars(entries, [], "anthropic")).toBe(0);
    expect(rewriteChars(entries, ["missing"], "anthropic")).toBe(0);
  });

  it("re-sends the whole context on OpenAI Codex", () => {
    expect(rewriteChars(entries, [(entries[10] as SnapEntry).id], "openai-codex")).toBe(total);
    expect(rewriteChars(entries, [], "openai-codex")).toBe(0);
  });
});

describe("exchangeGate", () => {
  const base = { minSavingChars: 8000, sessionRequests: 40, family: "anthropic" as const };

  it("passes without cost when the other edits already start earlier", () => {
    const old = exchange("very old", 500);
    const entries = [...old, ...exchange("unrelated", 2500), ...run("q")];
    const omitted = collect(entries).filter((x) => x.prompt === "unrelated");
    expect(omitted).toHaveLength(1);
    // Another edit of this pass sits before the exchange (say an old image), so the rewrite starts there anyway.
    const gate = exchangeGate({
      ...base,
      entries,
      omitted,
      otherEditIds: [(old[2] as SnapEntry).id],
      sessionRequests: 1,
    });
    expect(gate).toMatchObject({ pass: true, marginalChars: 0 });
    expect(gate.savingChars).toBe(exchangeSaving(omitted));
    expect(gate.savingChars).toBeLessThan(base.minSavingChars);
  });

  it("passes trivially with nothing to omit", () => {
    expect(exchangeGate({ ...base, entries: run("q"), omitted: [], otherEditIds: [] })).toMatchObject({
      pass: true,
      marginalChars: 0,
      savingChars: 0,
    });
  });

  it("defers a saving below exchangeMinSavingChars", () => {
    const entries = [...exchange("small", 3000), ...run("q")];
    const omitted = collect(entries);
    const runResult = (entries[6] as SnapEntry).id;
    const gate = exchangeGate({ ...base, entries, omitted, otherEditIds: [runResult], sessionRequests: 1000 });
    expect(gate.marginalChars).toBe(sum(entries.slice(0, 4)) + sum(entries.slice(4, 6)));
    expect(gate.savingChars).toBeLessThan(8000);
    expect(gate.pass).toBe(false);
    expect(gate.reason).toMatch(/below 8k/);
  });

  it("weighs the saving over the session's requests against the marginal rewrite", () => {
    const entries = [...exchange("big", 12_000), ...run("q", 30_000)];
    const omitted = collect(entries);
    const gateFor = (requests: number) =>
      exchangeGate({
        ...base,
        entries,
        omitted,
        otherEditIds: [(entries[6] as SnapEntry).id],
        sessionRequests: requests,
      });
    const { marginalChars, savingChars } = gateFor(1);
    expect(marginalChars).toBe(sum(entries.slice(0, 6)));
    const needed = Math.ceil((REWRITE_FACTOR.anthropic * marginalChars) / savingChars);
    expect(gateFor(needed - 1).pass).toBe(false);
    expect(gateFor(needed - 1).reason).toMatch(/does not pay off/);
    expect(gateFor(needed).pass).toBe(true);
    // Without other edits the exchange pays for the whole rewrite from its prompt on.
    const alone = exchangeGate({ ...base, entries, omitted, otherEditIds: [], sessionRequests: needed });
    expect(alone.marginalChars).toBe(sum(entries));
    expect(alone.pass).toBe(false);
  });

  it("lets exchanges ride along for free on OpenAI Codex when the pass edits anything else", () => {
    const entries = [...exchange("small", 2500), ...run("q")];
    const omitted = collect(entries);
    const runResult = (entries[6] as SnapEntry).id;
    const codex = { ...base, family: "openai-codex" as const, entries, omitted, sessionRequests: 1 };
    expect(exchangeGate({ ...codex, otherEditIds: [runResult] })).toMatchObject({ pass: true, marginalChars: 0 });
    const alone = exchangeGate({ ...codex, otherEditIds: [] });
    expect(alone.marginalChars).toBe(sum(entries));
    expect(alone.pass).toBe(false);
    // Codex uses the lower factor once the saving is large enough.
    const requests = Math.ceil((13 * sum(entries)) / alone.savingChars);
    const lowMin = { ...codex, otherEditIds: [], minSavingChars: 0 };
    expect(exchangeGate({ ...lowMin, sessionRequests: requests }).pass).toBe(true);
    expect(exchangeGate({ ...lowMin, sessionRequests: requests - 1 }).pass).toBe(false);
  });

  it("accumulates deferred exchanges until together they pay off", () => {
    const unrelated = (ids: string[]) =>
      interpretExchanges(
        {
          status: "stop",
          answers: Object.fromEntries(ids.map((_, i) => [`exchange_${i + 1}`, { type: "bool", probability: 0.05 }])),
        },
        ids,
        0.2,
      );
    // Run 1: two small unrelated exchanges; together they save too little, so both are deferred.
    const session = [...exchange("first", 3000), ...exchange("second", 3000), ...run("run one", 3000)];
    const first = collect(session);
    expect(first.map((x) => x.prompt)).toEqual(["first", "second"]);
    const verdicts = unrelated(first.map((x) => x.promptId));
    const gate1 = exchangeGate({ ...base, entries: session, omitted: first, otherEditIds: [], sessionRequests: 3 });
    expect(gate1.pass).toBe(false);
    expect(gate1.savingChars).toBeLessThan(8000);
    session.push(record(first.map((x, i) => exchangeResult(x, verdicts[i]!, true))));

    // Run 2: the deferred pair is collected again (the record lies before this run), and run one's exchange
    // joins them; together they pass.
    session.push(...run("run two", 30_000));
    const second = collect(session);
    expect(second.map((x) => x.prompt)).toEqual(["first", "second", "run one"]);
    const runResult = (session[session.length - 2] as SnapEntry).id;
    const gate2 = exchangeGate({
      ...base,
      entries: session,
      omitted: second,
      otherEditIds: [runResult],
      sessionRequests: 40,
    });
    expect(gate2.savingChars).toBeGreaterThanOrEqual(8000);
    expect(gate2.pass).toBe(true);
    const pairOnly = exchangeGate({
      ...base,
      entries: session,
      omitted: second.slice(0, 2),
      otherEditIds: [runResult],
      sessionRequests: 40,
    });
    expect(pairOnly.pass).toBe(false);

    // A deferral recorded during the current run does not stop the next pass of that run from asking again.
    session.push(record(second.map((x, i) => exchangeResult(x, unrelated(second.map((y) => y.promptId))[i]!, true))));
    expect(collect(session).map((x) => x.prompt)).toEqual(["first", "second", "run one"]);
  });
});

describe("the break-even factor from the model's prices", () => {
  // List prices in dollars per million tokens, as Pi's registry gives them.
  const sonnet = { input: 3, cacheRead: 0.3, cacheWrite: 3.75 };
  const gpt = { input: 1.25, cacheRead: 0.125, cacheWrite: 0 };

  it("prices an Anthropic rewrite at the cache-write price over a cached read", () => {
    expect(rewriteFactor("anthropic", sonnet)).toBeCloseTo((1.4 * (3.75 - 0.3)) / 0.3, 6);
    // The 1-hour cache writes at twice the input price: a dearer rewrite needs more requests to pay.
    expect(rewriteFactor("anthropic", { ...sonnet, cacheWrite: 6 })).toBeGreaterThan(
      rewriteFactor("anthropic", sonnet),
    );
  });

  it("prices an OpenAI rewrite at the input price: no write premium, whatever the registry lists", () => {
    expect(rewriteFactor("openai-codex", gpt)).toBeCloseTo((1.4 * (1.25 - 0.125)) / 0.125, 6);
    expect(rewriteFactor("openai-codex", { ...gpt, cacheWrite: 9 })).toBe(rewriteFactor("openai-codex", gpt));
    expect(rewriteFactor("other", gpt)).toBe(rewriteFactor("openai-codex", gpt));
  });

  it("reproduces the fixed factors at list price ratios, and falls back to them without usable prices", () => {
    expect(Math.round(rewriteFactor("anthropic", sonnet))).toBe(REWRITE_FACTOR.anthropic);
    expect(Math.round(rewriteFactor("openai-codex", gpt))).toBe(REWRITE_FACTOR["openai-codex"]);
    expect(rewriteFactor("anthropic")).toBe(REWRITE_FACTOR.anthropic);
    expect(rewriteFactor("other", { input: 0, cacheRead: 0, cacheWrite: 0 })).toBe(REWRITE_FACTOR.other);
    // No cache discount listed: the prices say nothing about the cache, so the fixed factor stands.
    expect(rewriteFactor("other", { input: 2, cacheRead: 2, cacheWrite: 0 })).toBe(REWRITE_FACTOR.other);
  });

  it("scales with the margin", () => {
    const twice = 2 * DEFAULT_BREAK_EVEN_MARGIN;
    expect(rewriteFactor("anthropic", undefined, twice)).toBe(2 * REWRITE_FACTOR.anthropic);
    expect(rewriteFactor("anthropic", sonnet, twice)).toBeCloseTo(2 * rewriteFactor("anthropic", sonnet), 6);
  });

  it("moves the exchange gate", () => {
    const entries = [userEntry("u0", "old"), assistantEntry("a0", "x".repeat(20_000)), userEntry("u1", "now")];
    const omitted: Exchange[] = [
      { promptId: "u0", entryIds: ["a0"], chars: 20_003, stub: "[stub]" } as unknown as Exchange,
    ];
    const base = {
      entries,
      omitted,
      otherEditIds: [],
      sessionRequests: 17,
      minSavingChars: 0,
      family: "anthropic" as const,
    };
    expect(exchangeGate(base).pass).toBe(true);
    expect(exchangeGate({ ...base, factor: 40 }).pass).toBe(false);
  });
});
