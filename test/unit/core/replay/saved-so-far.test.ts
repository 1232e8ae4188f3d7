// The live footer's dollars on a branch whose recorded usage is absurd (issue 44): replies reporting 1e300
// tokens, or counts near Number.MAX_VALUE, are set aside when checked, so the branch prices to a finite,
// plausible net and the footer never shows an exponent, NaN or Infinity.
import { describe, expect, it } from "vitest";
import type { Prices } from "../../../../src/core/cache/prompt-cache.ts";
import type { PieceKind } from "../../../../src/core/replay/calibrate.ts";
import { type LedgerEntry, savedSoFar } from "../../../../src/core/replay/saved-so-far.ts";
import { type AssistantLike, learnProfiles } from "../../../../src/main/replay/money-log.ts";
import type { PriceBook } from "../../../../src/main/replay/prices.ts";
import { statusText } from "../../../../src/main/session/status.ts";

const MIN = 60_000;
const OPUS: Prices = { input: 5, output: 25, cacheRead: 0.5, cacheWrite: 6.25 };
const model = { api: "anthropic-messages", provider: "anthropic", id: "claude-opus-4-5" };
const book: PriceBook = { model: () => ({ info: model, list: OPUS }) };

/** An assistant message as Pi records it, its cost from the list (pi-ai's calculateCost). */
function reply(at: number, input: number, cacheRead: number, cacheWrite: number, output = 50): AssistantLike {
  const cost = {
    input: (input * OPUS.input) / 1e6,
    output: (output * OPUS.output) / 1e6,
    cacheRead: (cacheRead * OPUS.cacheRead) / 1e6,
    cacheWrite: (cacheWrite * OPUS.cacheWrite) / 1e6,
  };
  const total = cost.input + cost.output + cost.cacheRead + cost.cacheWrite;
  return {
    ...model,
    model: model.id,
    timestamp: at,
    usage: { input, output, cacheRead, cacheWrite, cost: { ...cost, total } },
  };
}

/** A message read from a session file: what JSON gives for these numbers. */
const fromFile = (m: AssistantLike): AssistantLike => JSON.parse(JSON.stringify(m)) as AssistantLike;

function entry(id: string, chars: number, kind: PieceKind, extra: Partial<LedgerEntry> = {}): LedgerEntry {
  return { id, type: "message", chars, messages: 1, kind, ...extra };
}

/** The branch as live-savings builds it: each reply's usage checked and each model's profile learned. */
function priced(branch: Array<LedgerEntry | AssistantLike>) {
  const replies: Array<{ n: number; message: AssistantLike; entryTime: number }> = [];
  for (const e of branch) {
    if (!("type" in e)) replies.push({ n: replies.length + 1, message: e, entryTime: e.timestamp as number });
  }
  const { profiles, heads } = learnProfiles(replies, book);
  let i = 0;
  const ledger = branch.map((e): LedgerEntry => {
    if ("type" in e) return e as LedgerEntry;
    const head = heads[i];
    i++;
    return entry(`a${i}`, 200, "other", {
      request: {
        at: head?.at ?? 0,
        model: "anthropic/claude-opus-4-5",
        outputChars: 200,
        ...(head?.usage ? { usage: head.usage } : {}),
      },
    });
  });
  return { saved: savedSoFar(ledger, profiles), profiles };
}

describe("the live dollars with absurd recorded usage", () => {
  const user = entry("u1", 4000, "question");
  const tool = entry("t1", 40_000, "toolResult");
  const edit: LedgerEntry = {
    id: "e1",
    type: "context_edit",
    chars: 0,
    messages: 0,
    kind: "other",
    edit: { targetId: "t1", chars: 400, messages: 1 },
  };
  const record: LedgerEntry = {
    id: "r1",
    type: "custom",
    chars: 0,
    messages: 0,
    kind: "other",
    record: { costUsd: 0.001 },
  };
  const sane = [reply(0, 3, 0, 3000), reply(MIN, 3, 3000, 10_050), edit, record, reply(2 * MIN, 3, 3000, 200)];
  const absurd = [
    fromFile({ ...reply(3 * MIN, 3, 0, 0), usage: { input: 1e300, output: 50 } }),
    fromFile({
      ...reply(4 * MIN, 3, 0, 0),
      usage: { input: Number.MAX_VALUE, cacheRead: Number.MAX_VALUE, output: 1 },
    }),
    fromFile({ ...reply(5 * MIN, 3, 0, 0), usage: { input: Number.MAX_VALUE * 0.9, output: 1 } }),
  ];

  it("sets the absurd replies aside: a finite, plausible net and a footer without exponent or NaN", () => {
    const base = priced([user, sane[0] as AssistantLike, tool, ...sane.slice(1)]);
    const { saved, profiles } = priced([user, sane[0] as AssistantLike, tool, ...sane.slice(1), ...absurd]);
    expect(base.saved.priced).toBe(true);
    expect(saved.priced).toBe(true);
    expect(saved.requests).toBe(6);
    for (const x of [saved.off, saved.on, saved.classifier, saved.net]) {
      expect(Number.isFinite(x)).toBe(true);
      // A branch of a few small requests costs cents, not sums beyond any bill.
      expect(Math.abs(x)).toBeLessThan(1);
    }
    // The set-aside replies were not billed: the branch costs what it cost without them.
    expect(saved.off).toBeCloseTo(base.saved.off, 9);
    expect(saved.on).toBeCloseTo(base.saved.on, 9);
    const footer = statusText({ kind: "ready", savings: { chars: 39_600, items: 1 }, dollars: saved });
    expect(footer).toMatch(/\$\d/);
    expect(footer).not.toMatch(/\de[+-]?\d|NaN|Infinity/);
    const profile = profiles.get("anthropic/claude-opus-4-5");
    expect(profile?.aside.map((a) => a.reason)).toEqual([
      expect.stringMatching(/token counts no context holds/),
      expect.stringMatching(/token counts no context holds/),
      expect.stringMatching(/token counts no context holds/),
    ]);
  });

  it("a figure beyond any bill shows no dollars in the footer, as an unpriced model", () => {
    const { saved } = priced([user, sane[0] as AssistantLike, tool, ...sane.slice(1)]);
    for (const net of [-2.69e294, Number.NaN, Number.POSITIVE_INFINITY, 5e6]) {
      const footer = statusText({ kind: "ready", savings: { chars: 39_600, items: 1 }, dollars: { ...saved, net } });
      expect(footer).not.toMatch(/\$|NaN|Infinity|\de[+-]?\d/);
      expect(footer).toMatch(/−9\.9k/);
    }
  });
});
