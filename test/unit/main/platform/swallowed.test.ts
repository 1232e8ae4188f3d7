// An error the guard goes past leaves a trace: kept for `/guard trace`, counted per site and message,
// bounded, and handed to every session's sink (its telemetry), without looping when a sink fails too.
import { beforeEach, describe, expect, it } from "vitest";
import {
  clearSwallowed,
  onSwallowed,
  type Swallowed,
  swallowedErrors,
  traceSwallowed,
} from "../../../../src/main/platform/swallowed.ts";

beforeEach(clearSwallowed);

describe("traceSwallowed", () => {
  it("keeps where and what, one line, with the error's class or code", () => {
    traceSwallowed("warm-up.worker", new TypeError("x is\n  undefined"));
    traceSwallowed("replay-cache.write", Object.assign(new Error("EACCES: permission denied"), { code: "EACCES" }));
    traceSwallowed("somewhere", "a string");
    expect(swallowedErrors()).toEqual([
      { where: "warm-up.worker", message: "TypeError: x is undefined", kind: "TypeError", count: 1 },
      {
        where: "replay-cache.write",
        message: "EACCES: permission denied",
        kind: "EACCES",
        count: 1,
      },
      { where: "somewhere", message: "string: a string", kind: "string", count: 1 },
    ]);
    // Nothing it is handed makes it throw.
    traceSwallowed("odd", Object.create(null));
    expect(swallowedErrors().at(-1)?.message).toBe("object: (no text)");
  });

  it("counts a repeat and moves it last; keeps the latest 20 distinct failures", () => {
    traceSwallowed("a", new Error("one"));
    traceSwallowed("b", new Error("two"));
    traceSwallowed("a", new Error("one"));
    expect(swallowedErrors().map((s) => [s.where, s.count])).toEqual([
      ["b", 1],
      ["a", 2],
    ]);
    for (let i = 0; i < 25; i++) traceSwallowed(`site-${i}`, new Error("x"));
    const kept = swallowedErrors();
    expect(kept).toHaveLength(20);
    expect(kept[0]?.where).toBe("site-5");
    expect(kept.at(-1)?.where).toBe("site-24");
  });

  it("hands each failure to the sinks until they unsubscribe", () => {
    const seen: Swallowed[] = [];
    const off = onSwallowed((s) => seen.push(s));
    traceSwallowed("a", new RangeError("r"));
    off();
    traceSwallowed("b", new Error("e"));
    expect(seen.map((s) => `${s.where} ${s.kind}`)).toEqual(["a RangeError"]);
  });

  it("a sink that fails is traced once, not sent round again", () => {
    let calls = 0;
    const off = onSwallowed(() => {
      calls++;
      throw new Error("sink broke");
    });
    try {
      traceSwallowed("a", new Error("first"));
    } finally {
      off();
    }
    expect(calls).toBe(1);
    expect(swallowedErrors().map((s) => `${s.where}: ${s.message}`)).toEqual([
      "a: Error: first",
      "swallowed.sink: Error: sink broke",
    ]);
  });
});
