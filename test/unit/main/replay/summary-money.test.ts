// Dollar figures as the footer, the terminal summary and the HTML report print them: never an exponent,
// NaN or Infinity, and a session whose figures are beyond any bill shows no dollars, as an unpriced one.
import { describe, expect, it } from "vitest";
import type { SessionMoney, Split } from "../../../../src/core/replay/money.ts";
import type { ReplayReport, SessionMetrics } from "../../../../src/core/replay/replay-metrics.ts";
import { moneySection } from "../../../../src/main/replay/report-money.ts";
import {
  dollars,
  MAX_SHOWN_DOLLARS,
  moneyLines,
  moneyShown,
  moneyTotalLine,
  shownDollars,
} from "../../../../src/main/replay/summary-money.ts";

const BAD = /\d[eE][+-]?\d|NaN|Infinity/;

describe("dollars", () => {
  it("prints today's figures as before", () => {
    expect(dollars(0)).toBe("$0");
    expect(dollars(30.344)).toBe("$30.34");
    expect(dollars(0.0271)).toBe("$0.027");
    expect(dollars(0.009)).toBe("$0.0090");
    expect(dollars(-1.2)).toBe("−$1.20");
    expect(dollars(0.000045)).toBe("$0.000045");
  });

  it("never prints an exponent, NaN or Infinity", () => {
    expect(dollars(1.2e-7)).toBe("$0.00000012");
    expect(dollars(-3e-9)).toBe("−$0.0000000030");
    expect(dollars(1e-30)).toBe("$0.00000000000000000000");
    for (const x of [2.69e294, -2.69e294, Number.MAX_VALUE, Number.NaN, Infinity, -Infinity, MAX_SHOWN_DOLLARS, 1e21]) {
      expect(shownDollars(x)).toBe(false);
      expect(dollars(x)).toBe("–");
    }
    for (let e = -25; e < 6; e++) for (const m of [1, 4.99, 9.999]) expect(dollars(m * 10 ** e)).not.toMatch(BAD);
  });
});

const split = (dollars: number): Split => ({ input: 10, cacheRead: 20, cacheWrite: 30, output: 5, dollars });

function session(off: number, on: number): SessionMetrics {
  const money: SessionMoney = {
    calibrated: true,
    priced: true,
    unpriced: [],
    models: [],
    off: split(off),
    on: split(on),
    recorded: split(1),
    error: { input: 0, cacheRead: 0, cacheWrite: 0, dollars: (off - 1) / 1 },
    classifier: { dollars: 0.01, source: "the guard's records" },
    net: off - on - 0.01,
    cumulative: [
      { n: 1, off: off / 2, on: on / 2 },
      { n: 2, off, on },
    ],
    passes: [{ pass: 1, afterRequest: 1, classifier: 0.01, rewrite: off, paidBackAt: 2 }],
  } as SessionMoney;
  return { money } as SessionMetrics;
}

describe("a session whose dollars are beyond any bill", () => {
  it("shows no dollar figure in the terminal, the HTML or the folder's total, as an unpriced session", () => {
    const sane = session(2, 1.5);
    expect(moneyShown(sane.money as SessionMoney)).toBe(true);
    expect(moneyLines(sane).join("\n")).toContain("$2.00 → $1.50");
    for (const [off, on] of [
      [2.69e294, 1],
      [Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY],
      [Number.NaN, 1],
      [2e6, 1e6],
    ] as const) {
      const s = session(off, on);
      expect(moneyShown(s.money as SessionMoney)).toBe(false);
      const terminal = moneyLines(s).join("\n");
      expect(terminal).toMatch(/dollars\s+not priced: its dollar figures are beyond any bill/);
      expect(terminal).not.toMatch(BAD);
      const html = moneySection(s);
      expect(html).toContain("not priced");
      expect(html).not.toMatch(BAD);
      expect(html).not.toContain("<svg");
      // The folder's total counts only the sessions it can show.
      expect(moneyTotalLine({ sessions: [s, sane, sane] } as unknown as ReplayReport)).toMatch(
        /^all 2 priced sessions: \$4\.00 → \$3\.00/,
      );
    }
  });
});

describe("calibration lines", () => {
  it("say which requests calibrated a session recorded with the guard on, and name a model that misses", () => {
    const s = session(1.05, 0.5);
    const m = s.money as SessionMoney;
    m.fit = { requests: 12, of: 40, firstEdited: 13, off: split(1.05) };
    m.models = [
      {
        model: "minimax/MiniMax-M2.7",
        family: "anthropic",
        behaviour: "explicit",
        behaviourWhy: "test",
        priceSource: "recorded",
        ttlMs: 300_000,
        requests: 40,
        aside: [],
        calibration: {
          sim: split(1.2),
          recorded: split(1),
          error: { input: 0, cacheRead: 0, cacheWrite: 0, dollars: 0.2 },
          partings: [],
          partialMisses: 0,
          requests: 12,
          of: 40,
          honour: { cacheWrite: 0.14, cacheRead: 1 },
          misses: true,
        },
      },
    ];
    const text = moneyLines(s).join("\n");
    expect(text).toContain("calibrated on     12 of 40 billed requests");
    expect(text).toContain("request 13 was the first with a guard edit in its prompt");
    expect(text).toContain("honours 14.0% of the simulated cache writes");
    expect(text).toMatch(/model misses\s+minimax\/MiniMax-M2\.7 \+20\.0% against the recorded dollars/);
    // A session recorded without the guard says nothing of the kind.
    delete m.fit;
    m.models = [];
    expect(moneyLines(s).join("\n")).not.toMatch(/calibrated on|model misses/);
  });
});
