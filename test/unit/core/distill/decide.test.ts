import { describe, expect, it } from "vitest";
import { chunkFiles, chunkOutput, isGrepStyle } from "../../../../src/core/distill/chunk.ts";
import { citedFiles, type DecideInput, decideResult } from "../../../../src/core/distill/decide.ts";
import { renderRemoved } from "../../../../src/core/distill/render.ts";
import { formatCount } from "../../../../src/core/shared/text.ts";
import type { Candidate, Chunk, SegmentDecision, SegmentReason } from "../../../../src/core/shared/types.ts";

function candidate(text: string, label = "bash `cmd`"): Candidate {
  return { entryId: "entry-1", tool: "bash", label, args: {}, isError: false, text };
}

function decision(keep: number[], reason: SegmentReason = "chunks"): SegmentDecision {
  return { keep: new Set(keep), reason, trace: "" };
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

/** 100 lines of 80 chars: ten chunks of ten lines, 800 chars each. */
const plainText = Array.from({ length: 100 }, (_, i) => `${`output line ${i + 1} `.padEnd(79, ".")}\n`).join("");
const plainChunks = chunkOutput(plainText);

function input(decisions: SegmentDecision[], extra: Partial<DecideInput> = {}): DecideInput {
  return {
    candidate: candidate(plainText),
    chunks: plainChunks,
    grep: false,
    decisions,
    keepCitedFiles: false,
    maxKeepRatio: 0.6,
    ...extra,
  };
}

describe("decideResult", () => {
  it("uses ten 800-char chunks for the plain fixture", () => {
    expect(plainChunks.map((c) => c.text.length)).toEqual(Array(10).fill(800));
  });

  it("leaves the output alone when every chunk is kept", () => {
    const all = decideResult(input([decision(range(1, 5)), decision(range(6, 10))]));
    expect(all).toEqual({
      outcome: "kept",
      reason: "all-chunks",
      beforeChars: 8000,
      afterChars: 8000,
      keptChunks: 10,
      totalChunks: 10,
    });
    const whole = decideResult(input([decision(range(1, 5), "whole-needed"), decision(range(6, 10))]));
    expect(whole.outcome).toBe("kept");
    expect(whole.replacement).toBeUndefined();
    expect(whole.reason).toBe("whole-needed,all-chunks");
  });

  it("distills to the kept chunks with the joined segment reasons", () => {
    const result = decideResult(input([decision([2, 3]), decision([7], "chunks")]));
    expect(result.outcome).toBe("distilled");
    expect(result.reason).toBe("chunks");
    expect(result.keptChunks).toBe(3);
    expect(result.totalChunks).toBe(10);
    expect(result.beforeChars).toBe(8000);
    expect(result.afterChars).toBe(result.replacement!.length);
    expect(result.afterChars).toBeLessThan(3000); // 2,400 kept + header + three omission lines
    const lines = result.replacement!.split("\n");
    expect(lines[0]).toContain(`(8k → ${formatCount(result.afterChars)} chars): kept 30 of 100 lines`);
    expect(lines[1]).toBe("[… 10 lines omitted: output lines 1–10 …]");
    expect(result.replacement).toContain(plainChunks[1]!.text + plainChunks[2]!.text.slice(0, -1));
    expect(lines.at(-1)).toBe("[… 30 lines omitted: output lines 71–100 …]");
  });

  it("keeps the output when the kept chunks exceed maxKeepRatio", () => {
    const over = decideResult(input([decision(range(1, 7))]));
    expect(over).toMatchObject({ outcome: "kept", reason: "not-worth", afterChars: 8000, keptChunks: 10 });
    expect(over.replacement).toBeUndefined();
    // Exactly at the ratio is still worth it.
    expect(decideResult(input([decision(range(1, 6))])).outcome).toBe("distilled");
  });

  it("keeps the output when the replacement would not be shorter", () => {
    const text = "a\nb\nc\n";
    const chunks: Chunk[] = [
      { n: 1, start: 0, end: 2, text: "a\n", firstLine: 1, lastLine: 1 },
      { n: 2, start: 2, end: 4, text: "b\n", firstLine: 2, lastLine: 2 },
      { n: 3, start: 4, end: 6, text: "c\n", firstLine: 3, lastLine: 3 },
    ];
    const kept = decideResult(input([decision([1])], { candidate: candidate(text), chunks, maxKeepRatio: 1 }));
    expect(kept).toMatchObject({ outcome: "kept", reason: "not-worth", beforeChars: 6, afterChars: 6 });
    const removed = decideResult(input([decision([], "none-needed")], { candidate: candidate(text), chunks }));
    expect(removed.outcome).toBe("kept");
    expect(removed.reason).toBe("not-worth");
  });

  it("replaces the output with one line when nothing is kept", () => {
    const result = decideResult(input([decision([], "none-needed"), decision([], "none-needed")]));
    const expected = renderRemoved({ entryId: "entry-1", label: "bash `cmd`", lines: 100, chars: 8000 });
    expect(result).toEqual({
      outcome: "removed",
      reason: "none-needed",
      replacement: expected,
      beforeChars: 8000,
      afterChars: expected.length,
      keptChunks: 0,
      totalChunks: 10,
    });
  });

  it("keeps every chunk of a failed segment and still uses the other segments", () => {
    const result = decideResult(
      input([decision(range(1, 5), "timeout"), decision([7], "chunks")], { maxKeepRatio: 0.8 }),
    );
    expect(result.outcome).toBe("distilled");
    expect(result.reason).toBe("timeout,chunks");
    expect(result.keptChunks).toBe(6);
    const body = result.replacement!.split("\n").slice(1).join("\n");
    expect(body).toBe(
      [
        plainChunks
          .slice(0, 5)
          .map((c) => c.text)
          .join("")
          .slice(0, -1),
        "[… 10 lines omitted: output lines 51–60 …]",
        plainChunks[6]!.text.slice(0, -1),
        "[… 30 lines omitted: output lines 71–100 …]",
      ].join("\n"),
    );
  });

  it("uses file line numbers for read output", () => {
    const result = decideResult(input([decision([1])], { lineOffset: 201 }));
    expect(result.replacement!.split("\n").at(-1)).toBe("[… 90 lines omitted: lines 211–300 of the file …]");
  });

  describe("with grep output", () => {
    const block = (file: string, count: number) =>
      Array.from({ length: count }, (_, i) => `${file}:${i + 1}:${"m".repeat(50)}\n`).join("");
    const files = ["src/a.ts", "src/b.ts", "src/c.ts", "src/d.ts", "src/e.ts"];
    const text = files.map((f) => block(f, 12)).join("");
    const chunks = chunkOutput(text);

    it("gives one chunk per file", () => {
      expect(isGrepStyle(text)).toBe(true);
      expect(chunks.map((c) => c.files)).toEqual(files.map((f) => [f]));
    });

    it("adds chunks of files the answer cites only when keepCitedFiles is on", () => {
      const base: Partial<DecideInput> = { candidate: candidate(text), chunks, grep: true, citedFiles: ["src/d.ts"] };
      const off = decideResult(input([decision([1])], { ...base, keepCitedFiles: false }));
      expect(off.keptChunks).toBe(1);
      expect(off.replacement).not.toContain("src/d.ts:1:");
      expect(off.replacement!.split("\n").at(-1)).toBe(
        "[… 48 lines omitted: matches in src/b.ts, src/c.ts, src/d.ts, src/e.ts …]",
      );
      const on = decideResult(input([decision([1])], { ...base, keepCitedFiles: true }));
      expect(on.outcome).toBe("distilled");
      expect(on.keptChunks).toBe(2);
      expect(on.replacement).toContain(chunks[3]!.text.slice(0, -1));
      expect(on.replacement!.split("\n").at(-1)).toBe("[… 12 lines omitted: matches in src/e.ts …]");
    });

    it("turns a removal into a distillation when a cited file is added", () => {
      const result = decideResult(
        input([decision([], "none-needed")], {
          candidate: candidate(text),
          chunks,
          grep: true,
          citedFiles: ["src/a.ts"],
          keepCitedFiles: true,
        }),
      );
      expect(result.outcome).toBe("distilled");
      expect(result.keptChunks).toBe(1);
    });
  });
});

describe("citedFiles", () => {
  const known = ["src/api/status.ts", "src/store/status.ts", "src/pages/OrdersPage.tsx", "./lib/util.js", "README.md"];

  it("finds full paths, with or without a leading directory or ./", () => {
    const answer = "The badge is in src/pages/OrdersPage.tsx:35 and /repo/src/api/status.ts; see lib/util.js.";
    expect(citedFiles(answer, known)).toEqual(["src/api/status.ts", "src/pages/OrdersPage.tsx", "./lib/util.js"]);
  });

  it("accepts a basename only when no other known file shares it", () => {
    expect(citedFiles("Look at `OrdersPage.tsx` and `util.js`.", known)).toEqual([
      "src/pages/OrdersPage.tsx",
      "./lib/util.js",
    ]);
    expect(citedFiles("It is defined in status.ts.", known)).toEqual([]);
  });

  it("ignores names that are only part of a longer word or path", () => {
    expect(citedFiles("See NotOrdersPage.tsx, OrdersPage.tsx.bak and other/util.js", known)).toEqual([]);
    expect(citedFiles("READMEs and README.mdx", known)).toEqual([]);
    expect(citedFiles("Updated README.md.", known)).toEqual(["README.md"]);
  });

  it("works with the files of real grep chunks", () => {
    const text = "src/x.ts:1:foo\nsrc/y.ts:2:foo\nsrc/z.ts:3:foo\n";
    const files = chunkFiles(chunkOutput(text));
    expect(files).toEqual(["src/x.ts", "src/y.ts", "src/z.ts"]);
    expect(citedFiles("Only src/y.ts matters.", files)).toEqual(["src/y.ts"]);
  });
});
