// The needed-later proxy and the evidence tokens it shares with the local classifier.
import { describe, expect, it } from "vitest";
import { chunkOutput } from "../../../../src/core/distill/chunk.ts";
import { decideResult } from "../../../../src/core/distill/decide.ts";
import {
  callSignature,
  findSuspects,
  type LaterMessage,
  type RemovedPiece,
  removedChunks,
  visibleTokens,
} from "../../../../src/core/replay/proxy.ts";
import { distinctiveTokens } from "../../../../src/core/shared/tokens.ts";

const piece = (over: Partial<RemovedPiece>): RemovedPiece => ({
  key: "r1#2",
  kind: "chunk",
  entryId: "r1",
  pass: 1,
  after: 5,
  text: "",
  calls: [],
  visible: new Set(),
  ...over,
});

const later = (index: number, text: string, calls: string[] = []): LaterMessage => ({
  index,
  role: "user",
  text,
  calls,
});

describe("distinctiveTokens", () => {
  it("finds paths, file names, code identifiers, quoted strings and long numbers, not plain words", () => {
    const tokens = distinctiveTokens(
      'src/core/a.ts:12: const parseHeader = load("cache-key v2"); // see docs/GUIDE.md, took 15230 ms, version 1.4.2 of the parser',
    );
    expect(tokens.get("src/core/a.ts")).toBe("path");
    expect(tokens.get("a.ts")).toBeUndefined(); // file names shorter than 5 characters are too common
    expect(tokens.get("docs/GUIDE.md")).toBe("path");
    expect(tokens.get("GUIDE.md")).toBe("path");
    // Names like index.js or package.json point at no file in particular.
    expect(distinctiveTokens("see index.js and package.json").size).toBe(0);
    expect(tokens.get("parseHeader")).toBe("identifier");
    expect(tokens.get("cache-key v2")).toBe("quoted");
    expect(tokens.get("15230")).toBe("number");
    expect(tokens.get("1.4.2")).toBe("number");
    for (const word of ["const", "load", "parser", "took", "see"]) expect(tokens.has(word)).toBe(false);
  });
});

describe("findSuspects", () => {
  it("flags a removed chunk whose identifier is quoted later", () => {
    const removed = piece({ text: "lib/file3.ts:40: export const needle_value = computeShipping(order);" });
    const suspects = findSuspects(
      [removed],
      [
        later(3, "something earlier mentions `computeShipping` before the removal"),
        later(9, "What does `computeShipping` return?"),
      ],
    );
    expect(suspects).toHaveLength(1);
    expect(suspects[0]).toMatchObject({ key: "r1#2", reasons: ["tokens"], at: 9 });
    expect(suspects[0]?.tokens).toContain("computeShipping");
  });

  it("does not flag a removed chunk whose tokens never reappear", () => {
    const removed = piece({ text: "lib/file7.ts:80: const unrelatedHelper = makeWidget(42);" });
    const suspects = findSuspects(
      [removed],
      [later(8, "Thanks, the tests pass now. Please commit the change to computeShipping."), later(12, "done")],
    );
    expect(suspects).toEqual([]);
  });

  it("ignores tokens the model could still see after the pass", () => {
    const removed = piece({
      text: "src/cart/ship.ts:3: computeShipping(order)",
      visible: new Set(["computeShipping", "src/cart/ship.ts", "ship.ts"]),
    });
    expect(findSuspects([removed], [later(9, "Look at `computeShipping` in src/cart/ship.ts")])).toEqual([]);
  });

  it("needs two numbers when numbers are the only evidence", () => {
    const one = piece({ key: "a", text: "took 15230 ms" });
    const two = piece({ key: "b", text: "took 15230 ms, 88123 bytes" });
    const suspects = findSuspects([one, two], [later(9, "why 15230 ms and 88123 bytes?")]);
    expect(suspects.map((s) => s.key)).toEqual(["b"]);
  });

  it("flags an output whose tool call is made again later, not earlier", () => {
    const sig = callSignature("bash", { command: "npm test  2>&1" });
    expect(sig).toBe(callSignature("bash", { command: "npm test" }));
    const removed = piece({ kind: "small", key: "r2", text: "ok", calls: [sig] });
    expect(findSuspects([removed], [{ ...later(2, ""), role: "assistant", calls: [sig] }])).toEqual([]);
    const again = findSuspects([removed], [{ ...later(11, ""), role: "assistant", calls: [sig] }]);
    expect(again).toMatchObject([{ key: "r2", reasons: ["same-call"], at: 11 }]);
    expect(callSignature("read", { path: "a.ts", limit: 5 })).toBe(callSignature("read", { limit: 5, path: "a.ts" }));
  });

  it("collects what stays visible", () => {
    const seen = visibleTokens(["keep `parseHeader` and src/a/b.ts", "nothing"]);
    expect(seen.has("parseHeader")).toBe(true);
    expect(seen.has("src/a/b.ts")).toBe(true);
  });
});

describe("removedChunks", () => {
  it("recovers exactly the chunks a distilled replacement left out", () => {
    const text = `${Array.from({ length: 300 }, (_, i) => `lib/file${Math.floor(i / 10)}.ts:${i}:const v${i} = ${i};`).join("\n")}\n`;
    const chunks = chunkOutput(text);
    expect(chunks.length).toBeGreaterThan(4);
    const keep = new Set([2, 3, chunks.length]);
    const decision = decideResult({
      candidate: { entryId: "r1", tool: "bash", label: "bash `rg v`", args: {}, isError: false, text },
      chunks,
      grep: true,
      decisions: [{ keep, reason: "chunks", trace: "t" }],
      citedFiles: [],
      keepCitedFiles: false,
      maxKeepRatio: 0.9,
    });
    expect(decision.outcome).toBe("distilled");
    const removed = removedChunks(text, decision.replacement as string);
    expect(removed.map((c) => c.n)).toEqual(chunks.filter((c) => !keep.has(c.n)).map((c) => c.n));
  });

  it("recovers the removed pieces of a line too long for one chunk, with kept pieces glued together", () => {
    const line = Array.from({ length: 6000 }, (_, i) => `v${i}=${i};`).join(""); // about 60,000 chars
    const text = `head\n${line}\ntail\n`; // line 2 is cut into pieces
    const chunks = chunkOutput(text);
    const pieces = chunks.filter((c) => c.firstLine === 2 && c.lastLine <= 3);
    expect(pieces.length).toBeGreaterThan(10);
    // Kept: the head, two neighbouring pieces, and a later piece; the rest is removed.
    const keep = new Set([1, pieces[3]!.n, pieces[4]!.n, pieces[8]!.n]);
    const decision = decideResult({
      candidate: { entryId: "r1", tool: "bash", label: "bash `cat min.js`", args: {}, isError: false, text },
      chunks,
      grep: false,
      decisions: [{ keep, reason: "chunks", trace: "t" }],
      citedFiles: [],
      keepCitedFiles: false,
      maxKeepRatio: 0.9,
    });
    expect(decision.outcome).toBe("distilled");
    const removed = removedChunks(text, decision.replacement as string);
    expect(removed.map((c) => c.n)).toEqual(chunks.filter((c) => !keep.has(c.n)).map((c) => c.n));
  });

  it("counts every chunk of a removed output", () => {
    const text = "a\n".repeat(3000);
    const removed = removedChunks(text, "[context-guard] Removed the output of bash `x`: 3000 lines.");
    expect(removed.length).toBe(chunkOutput(text).length);
  });
});
