// The prompt-cache model on small sessions computed by hand. Prices: Anthropic-like $3 in, $15 out, $0.30
// read, $3.75 write (per million); OpenAI-like $2 in, $8 out, $0.50 cached.
import { describe, expect, it } from "vitest";
import { type PromptBlock, PromptCache } from "../../../../src/core/cache/prompt-cache.ts";

const ANTHROPIC = { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 };
const OPENAI = { input: 2, output: 8, cacheRead: 0.5, cacheWrite: 0 };
const MIN = 60_000;

const b = (key: string, tokens: number): PromptBlock => ({ key, tokens });
/** Pi's Anthropic breakpoints: the system block, the last tool, the last block of the last message. */
const piBreakpoints = (blocks: PromptBlock[]) => [0, 1, blocks.length - 1];

describe("anthropic", () => {
  it("reads what the previous request wrote and writes only the new tail", () => {
    const cache = new PromptCache("anthropic", ANTHROPIC);
    const first = [b("sys", 2000), b("tools", 1000), b("u1", 500)];
    const r1 = cache.request({ at: 0, blocks: first, breakpoints: piBreakpoints(first), output: 100 });
    expect(r1).toMatchObject({ cacheRead: 0, cacheWrite: 3500, input: 0, output: 100 });
    expect(r1.dollars).toBeCloseTo((3500 * 3.75 + 100 * 15) / 1e6, 10);
    const second = [...first, b("a1", 300), b("t1", 4000)];
    const r2 = cache.request({ at: MIN, blocks: second, breakpoints: piBreakpoints(second), output: 50 });
    expect(r2).toMatchObject({ cacheRead: 3500, cacheWrite: 4300, input: 0 });
  });

  it("an edit rewrites from the first changed block: only the prefix before it is read", () => {
    const cache = new PromptCache("anthropic", ANTHROPIC);
    const before = [b("sys", 2000), b("tools", 1000), b("u1", 500), b("a1", 300), b("t1", 20_000), b("a2", 200)];
    cache.request({ at: 0, blocks: before, breakpoints: piBreakpoints(before), output: 10 });
    // t1 replaced by a 500-token distillation, then a new prompt.
    const after = [...before.slice(0, 4), b("t1-distilled", 500), b("a2", 200), b("u2", 100)];
    const r = cache.request({ at: MIN, blocks: after, breakpoints: piBreakpoints(after), output: 10 });
    // Read: sys + tools (the breakpoint at block 1); rewritten: u1..u2.
    expect(r).toMatchObject({ cacheRead: 3000, cacheWrite: 500 + 300 + 500 + 200 + 100, input: 0 });
  });

  it("a breakpoint on the question still reads after an edit behind it", () => {
    const cache = new PromptCache("anthropic", ANTHROPIC);
    const before = [b("sys", 2000), b("tools", 1000), b("u1", 500), b("a1", 300), b("t1", 20_000)];
    // The guard's pin on the question (block 2) in addition to Pi's.
    cache.request({ at: 0, blocks: before, breakpoints: [0, 1, 2, 4], output: 10 });
    const after = [...before.slice(0, 4), b("t1-distilled", 500), b("a2", 100)];
    const r = cache.request({ at: MIN, blocks: after, breakpoints: [0, 2, 5], output: 10 });
    expect(r).toMatchObject({ cacheRead: 3500, cacheWrite: 300 + 500 + 100 });
  });

  it("an entry expires ttl after its last use: a gap just under reads, just over writes it all again", () => {
    const blocks = [b("sys", 2000), b("tools", 1000), b("u1", 500)];
    const under = new PromptCache("anthropic", ANTHROPIC);
    under.request({ at: 0, blocks, breakpoints: piBreakpoints(blocks), output: 0 });
    expect(under.request({ at: 5 * MIN - 1, blocks, breakpoints: piBreakpoints(blocks), output: 0 }).cacheRead).toBe(
      3500,
    );
    const over = new PromptCache("anthropic", ANTHROPIC);
    over.request({ at: 0, blocks, breakpoints: piBreakpoints(blocks), output: 0 });
    expect(over.request({ at: 5 * MIN + 1, blocks, breakpoints: piBreakpoints(blocks), output: 0 })).toMatchObject({
      cacheRead: 0,
      cacheWrite: 3500,
    });
    // A read refreshes: three requests 4 minutes apart all read.
    const refreshed = new PromptCache("anthropic", ANTHROPIC);
    refreshed.request({ at: 0, blocks, breakpoints: piBreakpoints(blocks), output: 0 });
    refreshed.request({ at: 4 * MIN, blocks, breakpoints: piBreakpoints(blocks), output: 0 });
    expect(refreshed.request({ at: 8 * MIN, blocks, breakpoints: piBreakpoints(blocks), output: 0 }).cacheRead).toBe(
      3500,
    );
  });

  it("the long retention keeps an entry for an hour", () => {
    const blocks = [b("sys", 2000), b("tools", 1000), b("u1", 500)];
    const cache = new PromptCache("anthropic", ANTHROPIC, { ttlMs: 60 * MIN });
    cache.request({ at: 0, blocks, breakpoints: piBreakpoints(blocks), output: 0 });
    expect(cache.request({ at: 59 * MIN, blocks, breakpoints: piBreakpoints(blocks), output: 0 }).cacheRead).toBe(3500);
  });

  it("liveBefore finds the last entry before an edit, and clear forgets them all", () => {
    const cache = new PromptCache("anthropic", ANTHROPIC);
    const blocks = [b("sys", 2000), b("tools", 1000), b("u1", 500), b("a1", 300), b("t1", 20_000)];
    cache.request({ at: 0, blocks, breakpoints: [1, 2, 4], output: 0 });
    // An edit of t1 (block 4): the entry ending at u1 (block 2) is the read point; none before block 1.
    expect(cache.liveBefore(blocks, 4, MIN)).toBe(2);
    expect(cache.liveBefore(blocks, 1, MIN)).toBe(-1);
    expect(cache.liveBefore(blocks, 4, 10 * MIN)).toBe(-1);
    cache.clear();
    expect(cache.liveBefore(blocks, 5, MIN)).toBe(-1);
    expect(cache.request({ at: MIN, blocks, breakpoints: [4], output: 0 }).cacheRead).toBe(0);
  });

  it("a prefix below the provider's minimum is not cached", () => {
    const cache = new PromptCache("anthropic", ANTHROPIC);
    const blocks = [b("sys", 300), b("tools", 200), b("u1", 100)];
    expect(cache.request({ at: 0, blocks, breakpoints: piBreakpoints(blocks), output: 0 })).toMatchObject({
      cacheWrite: 0,
      input: 600,
    });
  });
});

describe("openai", () => {
  it("reads the shared prefix in 128-token steps from 1,024, with no write premium", () => {
    const cache = new PromptCache("openai", OPENAI);
    const first = [b("sys", 1500), b("u1", 700)];
    expect(cache.request({ at: 0, blocks: first, output: 10 })).toMatchObject({
      cacheRead: 0,
      cacheWrite: 0,
      input: 2200,
    });
    const second = [...first, b("a1", 50), b("t1", 1000)];
    // Shared: 2,200 tokens → 1,024 + 9 × 128 = 2,176 read.
    const r = cache.request({ at: MIN, blocks: second, output: 10 });
    expect(r).toMatchObject({ cacheRead: 2176, input: 3250 - 2176, cacheWrite: 0 });
    expect(r.dollars).toBeCloseTo((2176 * 0.5 + (3250 - 2176) * 2 + 10 * 8) / 1e6, 10);
  });

  it("an edit keeps the prefix before it", () => {
    const cache = new PromptCache("openai", OPENAI);
    cache.request({ at: 0, blocks: [b("sys", 3000), b("t1", 9000), b("a1", 100)], output: 0 });
    const r = cache.request({ at: MIN, blocks: [b("sys", 3000), b("t1-distilled", 200), b("a1", 100)], output: 0 });
    expect(r.cacheRead).toBe(1024 + Math.floor((3000 - 1024) / 128) * 128);
  });
});

describe("openai-codex", () => {
  it("reads nothing on the request after an edit, and reads again after that", () => {
    const cache = new PromptCache("openai-codex", OPENAI);
    const first = [b("sys", 3000), b("t1", 9000), b("a1", 100)];
    cache.request({ at: 0, blocks: first, output: 0 });
    const edited = [b("sys", 3000), b("t1-distilled", 200), b("a1", 100)];
    expect(cache.request({ at: MIN, blocks: edited, output: 0 }).cacheRead).toBe(0);
    expect(cache.request({ at: 2 * MIN, blocks: [...edited, b("u2", 50)], output: 0 }).cacheRead).toBe(3200);
  });
});

describe("none", () => {
  it("bills every input token at the input price", () => {
    const cache = new PromptCache("none", ANTHROPIC);
    const blocks = [b("sys", 2000), b("u1", 500)];
    cache.request({ at: 0, blocks, output: 0 });
    expect(cache.request({ at: 1, blocks, output: 100 })).toMatchObject({ input: 2500, cacheRead: 0, cacheWrite: 0 });
  });
});
