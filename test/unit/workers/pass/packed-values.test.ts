import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { planRunEnd } from "../../../../src/core/distill/plan.ts";
import { DEFAULT_CONFIG } from "../../../../src/core/shared/config.ts";
import type { ClassifierRequest } from "../../../../src/core/shared/types.ts";
import { packedCount, packValues, unpackValue } from "../../../../src/workers/pass/packed-values.ts";
import { assistantEntry, toolCall, toolResultEntry, userEntry } from "../../../kit/snap.ts";

describe("packed values (how request windows cross from the pass worker)", () => {
  it("gives back each planned classifier request, as pi-ai will serialize it", () => {
    const grep = Array.from(
      { length: 400 },
      (_, i) => `src/f${i % 7}.ts:${i}: const naïve = "€${i}" // 🚀 ${"x".repeat(40)}`,
    );
    const entries = [
      userEntry("u1", "why does the build fail?"),
      assistantEntry("a1", "", [toolCall("c1", "bash", { command: "rg -n naïve" })]),
      toolResultEntry("t1", "c1", "bash", grep.join("\n")),
      assistantEntry("a2", "The failure is in f3.ts: the € sign."),
    ];
    const plan = planRunEnd(entries, DEFAULT_CONFIG);
    if (plan.status !== "run") throw new Error("the session planned no requests");
    expect(plan.requests.length).toBeGreaterThan(0);
    const pack = packValues(plan.requests);
    expect(packedCount(pack)).toBe(plan.requests.length);
    for (const [i, request] of plan.requests.entries()) {
      const back = unpackValue<ClassifierRequest>(pack, i);
      expect(back).toStrictEqual(request);
      expect(JSON.stringify(back)).toBe(JSON.stringify(request));
    }
  });

  it("gives back what a structured clone would, one value at a time and in any order", () => {
    fc.assert(
      fc.property(
        fc.array(fc.anything({ withMap: true, withSet: true, withDate: true }), { maxLength: 12 }),
        (values) => {
          const pack = packValues(values);
          expect(packedCount(pack)).toBe(values.length);
          for (let i = values.length - 1; i >= 0; i--) {
            expect(unpackValue(pack, i)).toStrictEqual(structuredClone(values[i]));
          }
        },
      ),
    );
  });

  it("keeps what a JSON round trip would lose", () => {
    const value = { gone: undefined, n: Number.NaN, big: 2n ** 70n, when: new Date(0) };
    expect(unpackValue(packValues([value]), 0)).toStrictEqual(value);
  });

  it("keeps text outside the Basic Multilingual Plane and lone surrogates", () => {
    const values = ["𝔘𝔫𝔦𝔠𝔬𝔡𝔢 😀", "\ud800 alone", { k: "\udfff" }, ""];
    const pack = packValues(values);
    for (const [i, v] of values.entries()) expect(unpackValue(pack, i)).toStrictEqual(v);
  });

  it("owns its bytes: no shared slab crosses the thread boundary with it", () => {
    const pack = packValues(["a", "b"]);
    expect(pack.bytes.byteOffset).toBe(0);
    expect(pack.bytes.buffer.byteLength).toBe(pack.bytes.byteLength);
  });

  it("says which index is missing instead of returning garbage", () => {
    const pack = packValues([1, 2]);
    expect(() => unpackValue(pack, 2)).toThrow(/no value 2 in a pack of 2/);
    expect(() => unpackValue(packValues([]), 0)).toThrow(RangeError);
  });
});
