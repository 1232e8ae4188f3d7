// The needed-later proxy: its tiers, its evidence tokens, and the chunks a replacement left out.
import type { SessionEntry } from "@earendil-works/pi-coding-agent";
import { describe, expect, it } from "vitest";
import { chunkOutput } from "../../../../src/core/distill/chunk.ts";
import { decideResult } from "../../../../src/core/distill/decide.ts";
import {
  callSignature,
  combineProxy,
  findSuspects,
  type LaterCall,
  type LaterMessage,
  proxyRate,
  type RemovedPiece,
  removedChunks,
  visibleTokens,
} from "../../../../src/core/replay/proxy.ts";
import { proxyTokens, samePath } from "../../../../src/core/replay/proxy-tokens.ts";
import { distinctiveTokens } from "../../../../src/core/shared/tokens.ts";
import { laterMessages, splitCallArgs } from "../../../../src/main/replay/proxy-input.ts";

const piece = (over: Partial<RemovedPiece>): RemovedPiece => ({
  key: "1:r1",
  kind: "chunk",
  entryId: "r1",
  pass: 1,
  after: 5,
  text: "",
  calls: [],
  visible: new Set(),
  ...over,
});

const said = (index: number, text: string, calls: LaterCall[] = []): LaterMessage => ({
  index,
  role: "assistant",
  text,
  calls,
});
const typed = (index: number, text: string): LaterMessage => ({ index, role: "user", text, calls: [] });
const shown = (index: number, text: string): LaterMessage => ({ index, role: "toolResult", text, calls: [] });
const call = (name: string, args: Record<string, unknown>): LaterCall => ({
  signature: callSignature(name, args),
  text: `${name} ${JSON.stringify(args)}`,
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

describe("proxyTokens", () => {
  it("keeps paths as written and finds dotted names in plain text", () => {
    const tokens = proxyTokens('src/a/tasks.ts calls output.reconcile and the "package.json" e.g. here');
    expect(tokens.get("src/a/tasks.ts")).toBe("path");
    expect(tokens.has("tasks.ts")).toBe(false);
    expect(tokens.get("output.reconcile")).toBe("identifier");
    expect(tokens.has("package.json")).toBe(false);
    expect(tokens.has("e.g")).toBe(false);
  });

  it("compares paths by their tail, with import spellings of a source file", () => {
    expect(samePath("src/a/tasks.ts", "/home/u/p/src/a/tasks.ts")).toBe(true);
    expect(samePath("./tasks.js", "src/a/tasks.ts")).toBe(true);
    expect(samePath("src/a/tasks.ts", "src/b/tasks.ts")).toBe(false);
  });
});

describe("findSuspects", () => {
  it("finds a removed item likely needed when the agent uses its identifier before seeing it again", () => {
    const removed = piece({ text: "lib/file3.ts:40: export const needle_value = computeShipping(order);" });
    const suspects = findSuspects(
      [removed],
      [said(3, "earlier, `computeShipping` before the removal"), said(9, "So `computeShipping` returns the fee")],
    );
    expect(suspects).toHaveLength(1);
    expect(suspects[0]).toMatchObject({ key: "1:r1", tier: "likely-needed", at: 9 });
    expect(suspects[0]?.tokens).toContain("computeShipping");
  });

  it("says seen again when a later tool result showed the token before the agent used it", () => {
    const removed = piece({ text: "const computeShipping = (order) => order.fee;" });
    const suspects = findSuspects(
      [removed],
      [shown(7, "src/ship.ts: computeShipping(order)"), said(9, "`computeShipping` is the one")],
    );
    expect(suspects).toMatchObject([{ tier: "seen-again", at: 9 }]);
  });

  it("skips tokens the user typed, anywhere in the session", () => {
    const removed = piece({ text: "const computeShipping = (order) => order.fee;" });
    const messages = [typed(2, "look at computeShipping"), said(9, "`computeShipping` it is")];
    expect(findSuspects([removed], messages)).toEqual([]);
  });

  it("does not flag an item whose tokens never reappear", () => {
    const removed = piece({ text: "lib/file7.ts:80: const unrelatedHelper = makeWidget(42);" });
    const suspects = findSuspects([removed], [said(8, "Thanks, the tests pass now."), said(12, "done")]);
    expect(suspects).toEqual([]);
  });

  it("ignores tokens the model could still see, also under another spelling of the path", () => {
    const removed = piece({
      text: "src/cart/ship.ts:3: computeShipping(order), see @acme/pi-ai",
      visible: visibleTokens(['computeShipping in /repo/src/cart/ship.ts from "@acme/pi-ai/dist"']),
    });
    expect(findSuspects([removed], [said(9, "Look at `computeShipping` in src/cart/ship.ts, pi-ai")])).toEqual([]);
  });

  it("does not match a file name to a file of that name in another folder", () => {
    const removed = piece({ text: "src/a/tasks.ts:1: ok" });
    expect(findSuspects([removed], [said(9, "open src/b/tasks.ts")])).toEqual([]);
    expect(findSuspects([removed], [said(9, "open tasks.ts")])).toMatchObject([{ tier: "likely-needed" }]);
  });

  it("needs two weak tokens when numbers or relative imports are the only evidence", () => {
    const one = piece({ key: "a", text: "took 15230 ms" });
    const two = piece({ key: "b", text: "took 15230 ms, 88123 bytes" });
    const imports = piece({ key: "c", text: 'import { x } from "../src/utils.js"' });
    const suspects = findSuspects([one, two, imports], [said(9, "why 15230 ms and 88123 bytes? from ../src/utils.js")]);
    expect(suspects.map((s) => s.key)).toEqual(["b"]);
  });

  it("says re-ran when the same call is made again later, and a re-read is not a use of the output", () => {
    const read = call("read", { path: "src/cart/ship.ts" });
    expect(callSignature("bash", { command: "npm test  2>&1" })).toBe(callSignature("bash", { command: "npm test" }));
    expect(callSignature("read", { path: "a.ts", limit: 5 })).toBe(callSignature("read", { limit: 5, path: "a.ts" }));
    const removed = piece({ kind: "small", key: "r2", text: "src/cart/ship.ts: 3 lines", calls: [read.signature] });
    expect(findSuspects([removed], [said(2, "", [read])])).toEqual([]);
    expect(findSuspects([removed], [said(11, "", [read])])).toMatchObject([{ key: "r2", tier: "re-ran", at: 11 }]);
  });

  it("collects what stays visible, file names of paths included", () => {
    const seen = visibleTokens(["keep `parseHeader` and src/a/b/header.ts", "nothing"]);
    expect(seen.has("parseHeader")).toBe(true);
    expect(seen.has("src/a/b/header.ts")).toBe(true);
    expect(seen.has("header.ts")).toBe(true);
  });
});

describe("proxyRate", () => {
  it("counts items per tier and says how many the agent would likely have recalled", () => {
    const rate = proxyRate(20, [{ tier: "likely-needed" }, { tier: "likely-needed" }, { tier: "re-ran" }], {
      precision: 0.8,
      recall: 0.5,
    });
    expect(rate).toEqual({
      removed: 20,
      likelyNeeded: { items: 2, rate: 0.1, precision: 0.8, recall: 0.5, expected: 3.2 },
      reran: 1,
      seenAgain: 0,
    });
    expect(combineProxy([rate, rate])).toMatchObject({ removed: 40, likelyNeeded: { items: 4, rate: 0.1 }, reran: 2 });
  });
});

describe("removedChunks", () => {
  /** Distils `text` keeping the chunks in `keep`; removedChunks must then give back exactly the others. */
  function expectRemovedRecovered(text: string, label: string, grep: boolean, keep: Set<number>): void {
    const chunks = chunkOutput(text);
    const decision = decideResult({
      candidate: { entryId: "r1", tool: "bash", label, args: {}, isError: false, text },
      chunks,
      grep,
      decisions: [{ keep, reason: "chunks", trace: "t" }],
      citedFiles: [],
      keepCitedFiles: false,
      maxKeepRatio: 0.9,
    });
    expect(decision.outcome).toBe("distilled");
    const removed = removedChunks(text, decision.replacement as string);
    expect(removed.map((c) => c.n)).toEqual(chunks.filter((c) => !keep.has(c.n)).map((c) => c.n));
  }

  it("recovers exactly the chunks a distilled replacement left out", () => {
    const text = `${Array.from({ length: 300 }, (_, i) => `lib/file${Math.floor(i / 10)}.ts:${i}:const v${i} = ${i};`).join("\n")}\n`;
    const chunks = chunkOutput(text);
    expect(chunks.length).toBeGreaterThan(4);
    const keep = new Set([2, 3, chunks.length]);
    expectRemovedRecovered(text, "bash `rg v`", true, keep);
  });

  it("recovers the removed pieces of a line too long for one chunk, with kept pieces glued together", () => {
    const line = Array.from({ length: 6000 }, (_, i) => `v${i}=${i};`).join(""); // about 60,000 chars
    const text = `head\n${line}\ntail\n`; // line 2 is cut into pieces
    const chunks = chunkOutput(text);
    const pieces = chunks.filter((c) => c.firstLine === 2 && c.lastLine <= 3);
    expect(pieces.length).toBeGreaterThan(10);
    // Kept: the head, two neighbouring pieces, and a later piece; the rest is removed.
    const keep = new Set([1, pieces[3]!.n, pieces[4]!.n, pieces[8]!.n]);
    expectRemovedRecovered(text, "bash `cat min.js`", false, keep);
  });

  it("counts every chunk of a removed output", () => {
    const text = "a\n".repeat(3000);
    const removed = removedChunks(text, "[context-guard] Removed the output of bash `x`: 3000 lines.");
    expect(removed.length).toBe(chunkOutput(text).length);
  });
});

describe("findSuspects on what real sessions showed (issue 28)", () => {
  it("reads JSON escapes as breaks, so a \\n glued to a word is no token", () => {
    expect([...proxyTokens('"description": "Cancels all.\\nFor normal wagers"').keys()]).not.toContain("nFor");
    const removed = piece({ text: '{"doc": "line one\\nfetchUser"}' });
    expect(findSuspects([removed], [said(9, "see nfetchUser")])).toEqual([]);
  });

  it("skips a token the agent had named before the removed entry existed", () => {
    const removed = piece({ at: 3, text: "ok: computeShipping(order)" });
    const messages = [said(2, "I will call computeShipping"), said(9, "`computeShipping` again")];
    expect(findSuspects([removed], messages)).toEqual([]);
    expect(findSuspects([{ ...removed, at: 1 }], messages)).toMatchObject([{ tier: "likely-needed" }]);
  });

  it("weighs a name only in text the agent writes anew as weak, but an edit's old text as strong", () => {
    // As the replay reads a session: the agent's tool calls, through laterMessages.
    const agentCalls = (index: number, name: string, args: Record<string, unknown>) =>
      laterMessages([
        ...Array.from({ length: index }, (_, i) => ({ type: "label", id: `x${i}` }) as unknown as SessionEntry),
        {
          type: "message",
          id: "a1",
          parentId: null,
          timestamp: "",
          message: { role: "assistant", content: [{ type: "toolCall", id: "c1", name, arguments: args }] },
        } as unknown as SessionEntry,
      ]);
    const removed = piece({ text: "fn main() { Duration::from_millis(10); let planExpired = false; }" });
    const wrote = agentCalls(9, "write", { path: "src/new.rs", content: "let d = Duration::from_millis(5);" });
    expect(findSuspects([removed], wrote)).toEqual([]);
    const edited = agentCalls(9, "edit", { path: "src/a.rs", oldText: "let planExpired = false;", newText: "x" });
    expect(findSuspects([removed], edited)).toMatchObject([{ tier: "likely-needed", tokens: ["planExpired"] }]);
  });

  it("ignores uses after a compaction that had dropped the removed entry anyway", () => {
    const removed = piece({ at: 3, text: "see src/cart/ship.ts" });
    const messages = [said(9, "open src/cart/ship.ts")];
    expect(findSuspects([removed], messages, [{ index: 7, firstKept: 6 }])).toEqual([]);
    // A compaction that kept the entry changes nothing.
    expect(findSuspects([removed], messages, [{ index: 7, firstKept: 2 }])).toMatchObject([{ tier: "likely-needed" }]);
  });

  it("needs two common names, MIME types or small words with numbers, like numbers", () => {
    const removed = piece({ text: "OpenClaw 2026 uses base64 over application/json" });
    expect(findSuspects([removed], [said(9, "OpenClaw is fine")])).toEqual([]);
    expect(findSuspects([removed], [said(9, "application/json please")])).toEqual([]);
    expect(findSuspects([removed], [said(9, "OpenClaw sends base64")])).toMatchObject([{ tier: "likely-needed" }]);
  });
});

describe("splitCallArgs", () => {
  it("takes out what a call writes anew, nested edits included, and keeps what it refers to", () => {
    const { reference, fresh } = splitCallArgs({
      path: "a.ts",
      edits: [{ oldText: "old one", newText: "new one" }],
      content: "whole file",
    });
    expect(reference).toEqual({ path: "a.ts", edits: [{ oldText: "old one" }] });
    expect(fresh.split("\n").sort()).toEqual(["new one", "whole file"]);
  });
});
