// A session that switches from a model billed $0 to a priced one: the terminal, the HTML and the JSON name
// the same models as priced and unpriced, with the same source for each price.
import { describe, expect, it } from "vitest";
import { checkRequest, learnProfile, type ModelInfo } from "../../../../src/core/cache/cache-behaviour.ts";
import type { Piece } from "../../../../src/core/replay/calibrate.ts";
import { type MoneyRequest, priceSession } from "../../../../src/core/replay/money.ts";
import type { SessionMetrics } from "../../../../src/core/replay/replay-metrics.ts";
import { moneySection } from "../../../../src/main/replay/report-money.ts";
import { moneyLines, priceText } from "../../../../src/main/replay/summary-money.ts";

const piece = (id: string, tokens: number): Piece => ({
  id,
  key: id,
  chars: tokens * 4,
  origChars: tokens * 4,
  kind: "other",
});

function model(info: ModelInfo, cost: number, from: number): { key: string; requests: MoneyRequest[]; msgs: object[] } {
  const key = `${info.provider}/${info.id}`;
  const msgs = [0, 1, 2].map((i) => ({
    provider: info.provider,
    model: info.id,
    timestamp: (from + i) * 60_000,
    usage: {
      input: 1000 * (i + 1),
      output: 10,
      cacheRead: 0,
      cacheWrite: 0,
      cost: { input: cost * (i + 1), total: cost * (i + 1) },
    },
  }));
  const requests = msgs.map((m, i) => {
    const c = checkRequest(from + i + 1, m, 0);
    const pieces = Array.from({ length: i + 1 }, (_, k) => piece(`${key}-${k}`, 1000));
    return {
      n: from + i + 1,
      at: c.at,
      model: key,
      off: pieces,
      on: pieces,
      outputChars: 0,
      ...(c.tokens ? { usage: { ...c.tokens, cost: c.cost?.total ?? 0 } } : {}),
    };
  });
  return { key, requests, msgs };
}

describe("one answer to which models have prices", () => {
  it("terminal, HTML and JSON agree", () => {
    const claude = { api: "anthropic-messages", provider: "anthropic", id: "claude-sonnet-4-6" };
    const codex = { api: "openai-codex-responses", provider: "openai-codex", id: "gpt-5.4" };
    const free = model(claude, 0, 0);
    const paid = model(codex, 0.00125, 3);
    const LIST = { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 };
    const profiles = new Map([
      [
        free.key,
        learnProfile(
          claude,
          free.msgs.map((m, i) => checkRequest(i + 1, m, 0, LIST)),
          LIST,
        ),
      ],
      [
        paid.key,
        learnProfile(
          codex,
          paid.msgs.map((m, i) => checkRequest(i + 4, m, 0)),
        ),
      ],
    ]);
    const money = priceSession([...free.requests, ...paid.requests], profiles, [], "t");
    const json = JSON.parse(JSON.stringify(money)) as typeof money;
    expect(json.unpriced).toEqual([free.key]);
    expect(json.models.map((m) => [m.model, m.priceSource])).toEqual([
      [free.key, "free"],
      [paid.key, "recorded"],
    ]);
    const s = { money } as SessionMetrics;
    const terminal = moneyLines(s).join("\n");
    const html = moneySection(s);
    for (const m of money.models) {
      expect(terminal).toContain(`${m.model}: `);
      expect(terminal).toContain(priceText(m));
      expect(html).toContain(priceText(m).replace(/&/g, "&amp;"));
    }
    // The priced model's dollars are shown; the free one is named as not in dollars, in both views.
    expect(terminal).toMatch(/not in dollars\s+anthropic\/claude-sonnet-4-6 \(\$0 billed/);
    expect(html).toContain("Not in dollars: anthropic/claude-sonnet-4-6 ($0 billed");
    expect(money.off.dollars).toBeCloseTo(0.00125 * 6, 9);
  });
});
