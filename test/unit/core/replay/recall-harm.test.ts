// What the likely-needed removals cost: items, characters, and the recall round trip plus the recalled
// text kept in every later request.
import { describe, expect, it } from "vitest";
import { RECALL_CALL_TOKENS, recallHarm } from "../../../../src/core/replay/recall-harm.ts";

const prices = { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 };
const requests = [
  { line: 10, on: 40_000 },
  { line: 20, on: 40_000 },
  { line: 30, on: 40_000 },
  { line: 40, on: 40_000 },
];

describe("recallHarm", () => {
  it("counts likely-needed items and characters beside all removed ones", () => {
    const h = recallHarm([{ chars: 400 }, { chars: 4000, neededAtLine: 20 }, { chars: 600 }], requests, prices, true);
    expect(h).toMatchObject({ removedItems: 3, removedChars: 5000, items: 1, chars: 4000 });
  });

  it("charges one round trip at the request that used it, then the text written once and read after", () => {
    const h = recallHarm([{ chars: 4000, neededAtLine: 20 }], requests, prices, true);
    // Round trip: the 10k-token prompt read from cache and the call's output; then 1k tokens written at
    // request 2 and read by requests 3 and 4.
    const expected = (10_000 * 0.3 + RECALL_CALL_TOKENS * 15 + 1000 * 3.75 + 2 * 1000 * 0.3) / 1e6;
    expect(h.dollars).toBeCloseTo(expected, 12);
  });

  it("bills everything as input for a model without a prompt cache, and nothing without prices", () => {
    const uncached = recallHarm([{ chars: 4000, neededAtLine: 40 }], requests, prices, false);
    expect(uncached.dollars).toBeCloseTo((10_000 * 3 + RECALL_CALL_TOKENS * 15 + 1000 * 3) / 1e6, 12);
    expect(recallHarm([{ chars: 4000, neededAtLine: 40 }], requests, undefined, true).dollars).toBe(0);
  });

  it("charges nothing when no request follows the use", () => {
    expect(recallHarm([{ chars: 4000, neededAtLine: 99 }], requests, prices, true)).toMatchObject({
      items: 1,
      dollars: 0,
    });
  });

  it("stops charging the recalled text at the compaction that drops it", () => {
    // Used at request 1 (line 10); a compaction at line 25 drops it: only request 2 reads it again.
    const h = recallHarm([{ chars: 4000, neededAtLine: 10 }], requests, prices, true, [25]);
    const expected = (10_000 * 0.3 + RECALL_CALL_TOKENS * 15 + 1000 * 3.75 + 1 * 1000 * 0.3) / 1e6;
    expect(h.dollars).toBeCloseTo(expected, 12);
    // A compaction before the use changes nothing.
    const before = recallHarm([{ chars: 4000, neededAtLine: 30 }], requests, prices, true, [5]);
    expect(before.dollars).toBeCloseTo((10_000 * 0.3 + RECALL_CALL_TOKENS * 15 + 1000 * 3.75 + 1000 * 0.3) / 1e6, 12);
  });
});
