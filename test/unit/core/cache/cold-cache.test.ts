import { describe, expect, it } from "vitest";
import { type CheckpointBatch, decideCheckpoint } from "../../../../src/core/cache/checkpoint.ts";
import { cacheTtlMs, coldCache } from "../../../../src/core/cache/cold-cache.ts";
import { DEFAULT_CONFIG } from "../../../../src/core/shared/config.ts";
import type { SnapEntry } from "../../../../src/core/shared/types.ts";
import {
  assistantEntry,
  compactionEntry,
  hiddenEntry,
  toolCall,
  toolResultEntry,
  userEntry,
} from "../../../kit/snap.ts";

const MINUTE = 60_000;

function run(n: number, size = 6000): SnapEntry[] {
  const out: SnapEntry[] = [userEntry("u", "fix the tests")];
  for (let i = 1; i <= n; i++) {
    out.push(
      assistantEntry(`a${i}`, "", [toolCall(`c${i}`, "bash", { command: `cmd ${i}` })]),
      toolResultEntry(`t${i}`, `c${i}`, "bash", "x".repeat(size)),
    );
  }
  return out;
}

describe("the cache TTL per provider", () => {
  it("is five minutes for Anthropic, an hour with the long retention; an hour or a day for OpenAI", () => {
    expect(cacheTtlMs("anthropic")).toBe(5 * MINUTE);
    expect(cacheTtlMs("anthropic", true)).toBe(60 * MINUTE);
    expect(cacheTtlMs("openai-codex")).toBe(60 * MINUTE);
    expect(cacheTtlMs("openai-codex", true)).toBe(24 * 60 * MINUTE);
    expect(cacheTtlMs("other")).toBe(Number.POSITIVE_INFINITY);
  });

  it("calls the cache cold only for a gap longer than the TTL", () => {
    const entries = run(3);
    expect(coldCache(entries, { family: "anthropic", sinceRequestMs: 5 * MINUTE - 1 }).cold).toBe(false);
    expect(coldCache(entries, { family: "anthropic", sinceRequestMs: 5 * MINUTE }).cold).toBe(false);
    expect(coldCache(entries, { family: "anthropic", sinceRequestMs: 5 * MINUTE + 1 })).toMatchObject({
      cold: true,
      reason: "300 s since the last request > 300 s TTL",
    });
    const long = { family: "anthropic" as const, longRetention: true };
    expect(coldCache(entries, { ...long, sinceRequestMs: 60 * MINUTE - 1 }).cold).toBe(false);
    expect(coldCache(entries, { ...long, sinceRequestMs: 60 * MINUTE + 1 }).cold).toBe(true);
    expect(coldCache(entries, { family: "openai-codex", sinceRequestMs: 60 * MINUTE - 1 }).cold).toBe(false);
    expect(coldCache(entries, { family: "openai-codex", sinceRequestMs: 60 * MINUTE + 1 }).cold).toBe(true);
    expect(coldCache(entries, { family: "other", sinceRequestMs: 1e12 }).cold).toBe(false);
    // Unknown or nonsense gaps prove nothing.
    expect(coldCache(entries, { family: "anthropic" }).cold).toBe(false);
    expect(coldCache(entries, { family: "anthropic", sinceRequestMs: Number.NaN }).cold).toBe(false);
  });

  it("calls it cold after a compaction or a model change since the last request, not before", () => {
    const entries = run(3);
    const compacted = [...entries, compactionEntry("k", "summary")];
    expect(coldCache(compacted, { family: "other" })).toMatchObject({
      cold: true,
      reason: "compaction since the last request",
    });
    const switched = [...entries, hiddenEntry("m", "model_change")];
    expect(coldCache(switched, { family: "anthropic" })).toMatchObject({
      cold: true,
      reason: "model change since the last request",
    });
    const older = [...run(1), hiddenEntry("m", "model_change"), assistantEntry("a9", "later")];
    expect(coldCache(older, { family: "anthropic" }).cold).toBe(false);
  });
});

describe("a checkpoint at a cold cache", () => {
  const entries = run(10);
  const batch: CheckpointBatch = {
    outputIds: ["t2"],
    outputChars: 6000,
    exchanges: [],
    exchangeChars: 0,
    images: [],
    imageChars: 0,
  };

  it("runs what the batch and break-even rules held back, only past the TTL", () => {
    const under = decideCheckpoint(entries, batch, 2, 0, DEFAULT_CONFIG, {
      family: "anthropic",
      sinceRequestMs: 5 * MINUTE - 1,
    });
    expect(under.run).toBe(false);
    const over = decideCheckpoint(entries, batch, 2, 0, DEFAULT_CONFIG, {
      family: "anthropic",
      sinceRequestMs: 5 * MINUTE + 1,
    });
    expect(over).toMatchObject({ run: true, tier: "all" });
    expect(over.reason).toMatch(/^cold cache/);
  });

  it("still skips when nothing is eligible", () => {
    const empty = { ...batch, outputIds: [], outputChars: 0 };
    expect(
      decideCheckpoint(entries, empty, 2, 0, DEFAULT_CONFIG, { family: "anthropic", sinceRequestMs: 1e9 }).run,
    ).toBe(false);
  });
});
