import { describe, expect, it } from "vitest";
import { chunkOutput } from "../../../../src/core/distill/chunk.ts";
import { formatChars, GUARD_MARKER, renderRemoved, renderReplacement } from "../../../../src/core/distill/render.ts";
import type { Chunk } from "../../../../src/core/shared/types.ts";

/** Chunks of `perChunk` lines each, built by hand so tests control every boundary. */
function chunksOf(
  lines: string[],
  perChunk: number,
  filesOf?: (n: number) => string[],
): { text: string; chunks: Chunk[] } {
  const chunks: Chunk[] = [];
  let pos = 0;
  for (let i = 0; i < lines.length; i += perChunk) {
    const text = lines
      .slice(i, i + perChunk)
      .map((l) => `${l}\n`)
      .join("");
    const n = chunks.length + 1;
    const chunk: Chunk = {
      n,
      start: pos,
      end: pos + text.length,
      text,
      firstLine: i + 1,
      lastLine: Math.min(i + perChunk, lines.length),
    };
    if (filesOf) chunk.files = filesOf(n);
    chunks.push(chunk);
    pos += text.length;
  }
  return { text: chunks.map((c) => c.text).join(""), chunks };
}

const numbered = (count: number, prefix = "line") => Array.from({ length: count }, (_, i) => `${prefix} ${i + 1}`);

describe("renderReplacement", () => {
  it("writes the header, kept chunks verbatim and one output-line omission per removed run", () => {
    const { text, chunks } = chunksOf(numbered(30), 5); // chunks 1..6, lines 1-5, 6-10, …
    const out = renderReplacement({
      entryId: "e1",
      label: "bash `make test`",
      text,
      chunks,
      keep: new Set([2, 5]),
      grep: false,
    });
    expect(out).toBe(
      [
        `[context-guard] Distilled the output of bash \`make test\` (${text.length} → ${out.length} chars): kept 10 of 30 lines; the rest was judged not needed for the answer. Full output: recall({"entryId":"e1"}).`,
        "[… 5 lines omitted: output lines 1–5 …]",
        "line 6\nline 7\nline 8\nline 9\nline 10",
        "[… 10 lines omitted: output lines 11–20 …]",
        "line 21\nline 22\nline 23\nline 24\nline 25",
        "[… 5 lines omitted: output lines 26–30 …]",
      ].join("\n"),
    );
    expect(out.startsWith(GUARD_MARKER)).toBe(true);
  });

  it("uses the singular for a single omitted line", () => {
    const { text, chunks } = chunksOf(numbered(3), 1);
    const out = renderReplacement({ entryId: "e", label: "x", text, chunks, keep: new Set([1, 3]), grep: false });
    expect(out.split("\n").slice(1)).toEqual(["line 1", "[… 1 line omitted: output line 2 …]", "line 3"]);
  });

  it("gives file line numbers for read output, shifted by the offset", () => {
    const { text, chunks } = chunksOf(numbered(20), 5);
    const out = renderReplacement({
      entryId: "r",
      label: "read src/a.ts",
      text,
      chunks,
      keep: new Set([1, 4]),
      grep: false,
      lineOffset: 101,
    });
    expect(out.split("\n")[6]).toBe("[… 10 lines omitted: lines 106–115 of the file …]");
    const single = chunksOf(numbered(3), 1);
    const one = renderReplacement({
      entryId: "r",
      label: "read",
      text: single.text,
      chunks: single.chunks,
      keep: new Set([1]),
      grep: false,
      lineOffset: 1,
    });
    expect(one.split("\n").at(-1)).toBe("[… 2 lines omitted: lines 2–3 of the file …]");
  });

  it("names the files of a removed grep run, at most five and then how many more", () => {
    const files = ["src/a.ts", "src/b.ts", "src/c.ts", "src/d.ts", "src/e.ts", "src/f.ts", "src/g.ts", "src/h.ts"];
    const lines = files.flatMap((f) => [`${f}:1:hit`, `${f}:2:hit`]);
    // One file per chunk, except chunk 3 which has two files (one shared with chunk 2).
    const { text, chunks } = chunksOf([...lines, "src/z.ts:9:kept"], 2, (n) => {
      if (n === 9) return ["src/z.ts"];
      return n === 3 ? ["src/b.ts", "src/c.ts"] : [files[n - 1]!];
    });
    const out = renderReplacement({
      entryId: "g",
      label: "bash `rg -n hit`",
      text,
      chunks,
      keep: new Set([9]),
      grep: true,
    });
    expect(out.split("\n").slice(1)).toEqual([
      // The files past the first five are the line's key facts.
      "[… 16 lines omitted: matches in src/a.ts, src/b.ts, src/c.ts, src/d.ts, src/e.ts and 3 more; held src/f.ts, src/g.ts, src/h.ts …]",
      "src/z.ts:9:kept",
    ]);
    const few = renderReplacement({ entryId: "g", label: "rg", text, chunks, keep: new Set([3, 9]), grep: true });
    expect(few.split("\n")[1]).toBe("[… 4 lines omitted: matches in src/a.ts, src/b.ts …]");
  });

  it("falls back to output line numbers for a grep run without file names", () => {
    const { text, chunks } = chunksOf(["header", "a.ts:1:x", "b.ts:2:y"], 1, (n) => (n === 1 ? [] : ["x"]));
    const out = renderReplacement({ entryId: "g", label: "rg", text, chunks, keep: new Set([2, 3]), grep: true });
    expect(out.split("\n")[1]).toBe("[… 1 line omitted: output line 1 …]");
  });

  it("copies kept text byte for byte, CRLF, tabs and trailing spaces included", () => {
    const text = `${"noise line\n".repeat(200)}keep\tthis  \r\nand ünïcode ✓ \r\n\r\n${"more noise\n".repeat(200)}`;
    const chunks = chunkOutput(text, false);
    const target = chunks.find((c) => c.text.includes("keep\tthis"))!;
    const out = renderReplacement({ entryId: "v", label: "x", text, chunks, keep: new Set([target.n]), grep: false });
    expect(out).toContain(target.text.slice(0, -1));
    expect(out).toContain("keep\tthis  \r\nand ünïcode ✓ \r\n\r");
    const body = out.split("\n[… ").length;
    expect(body).toBe(target.n === 1 || target.n === chunks.length ? 2 : 3);
  });

  it("keeps a final chunk that has no trailing newline unchanged", () => {
    const text = "one\ntwo\nthree";
    const chunks: Chunk[] = [
      { n: 1, start: 0, end: 8, text: "one\ntwo\n", firstLine: 1, lastLine: 2 },
      { n: 2, start: 8, end: 13, text: "three", firstLine: 3, lastLine: 3 },
    ];
    const out = renderReplacement({ entryId: "t", label: "x", text, chunks, keep: new Set([2]), grep: false });
    expect(out.split("\n").slice(1)).toEqual(["[… 2 lines omitted: output lines 1–2 …]", "three"]);
    expect(out).toContain(`(13 → ${out.length} chars): kept 1 of 3 lines`);
  });

  it("formats large character counts compactly in the header", () => {
    const { text, chunks } = chunksOf(numbered(3000, "some output text that is long"), 100);
    const out = renderReplacement({ entryId: "big", label: "x", text, chunks, keep: new Set([1]), grep: false });
    expect(text.length).toBeGreaterThan(100_000);
    // The header states the replacement's own size, as /guard does for the same edit.
    expect(out.split("\n")[0]).toContain(
      `(${formatChars(text.length)} → ${formatChars(out.length)} chars): kept 100 of 3000 lines`,
    );
    expect(formatChars(text.length)).toMatch(/^\d+(\.\d)?k$/);
  });
});

describe("renderReplacement with a line cut into pieces", () => {
  // Lines 1–2 short, line 3 a 20-char line in four 5-char pieces (chunks 2–5), line 4 short.
  const text = "alpha\nbeta\nAAAAABBBBBCCCCCDDDDD\ngamma\n";
  const piece = (n: number, start: number, end: number, firstLine: number, lastLine: number): Chunk => ({
    n,
    start,
    end,
    text: text.slice(start, end),
    firstLine,
    lastLine,
  });
  const chunks: Chunk[] = [
    piece(1, 0, 11, 1, 2),
    piece(2, 11, 16, 3, 3),
    piece(3, 16, 21, 3, 3),
    piece(4, 21, 26, 3, 3),
    piece(5, 26, 38, 3, 4),
  ];
  const render = (keep: number[], lineOffset?: number) =>
    renderReplacement({ entryId: "p", label: "x", text, chunks, keep: new Set(keep), grep: false, lineOffset })
      .split("\n")
      .slice(1);

  it("joins kept neighbouring pieces without a break, so they read as the original line", () => {
    expect(render([2, 3])).toEqual([
      "[… 2 lines omitted: output lines 1–2 …]",
      "AAAAABBBBB",
      "[… 1 line and part of line 3 omitted: output lines 3–4 …]",
    ]);
    expect(render([1, 2, 3, 4, 5].filter((n) => n !== 1))).toEqual([
      "[… 2 lines omitted: output lines 1–2 …]",
      "AAAAABBBBBCCCCCDDDDD",
      "gamma",
    ]);
  });

  it("says how much of a line an omission inside it stands for", () => {
    expect(render([1, 2, 4, 5])).toEqual([
      "alpha",
      "beta",
      "AAAAA",
      "[… 5 chars omitted: part of output line 3 …]",
      "CCCCCDDDDD",
      "gamma",
    ]);
    expect(render([1, 2, 4, 5], 10)[3]).toBe("[… 5 chars omitted: part of line 12 of the file …]");
    expect(render([1, 3])).toEqual([
      "alpha",
      "beta",
      "[… 5 chars omitted: part of output line 3 …]",
      "BBBBB",
      "[… 1 line and part of line 3 omitted: output lines 3–4 …]",
    ]);
  });

  it("counts a line kept in pieces once in the header", () => {
    const out = renderReplacement({ entryId: "p", label: "x", text, chunks, keep: new Set([2, 3, 4]), grep: false });
    expect(out.split("\n")[0]).toContain(`(38 → ${out.length} chars): kept 1 of 4 lines`);
  });

  it("renders real pieces of chunkOutput verbatim", () => {
    const line = `${"x=1;".repeat(12_000)}`;
    const long = `head\n${line}\ntail\n`;
    const real = chunkOutput(long, false);
    expect(real.length).toBeGreaterThan(3);
    const keep = new Set(real.map((c) => c.n).filter((n) => n !== 2));
    const out = renderReplacement({ entryId: "r", label: "x", text: long, chunks: real, keep, grep: false });
    const body = out.split("\n").slice(1);
    expect(body[0]).toBe("head");
    expect(out).toContain(`[… ${formatChars(real[1]!.text.length)} chars omitted: part of output line 2 …]`);
    // Everything but the omitted piece is there, in order.
    expect(out.replace(/\n\[… [^\n]* …\]\n/, "")).toContain(
      real
        .slice(2, -1)
        .map((c) => c.text)
        .join(""),
    );
  });
});

describe("renderRemoved", () => {
  it("writes a single line with size and recall hint", () => {
    expect(renderRemoved({ entryId: "abc", label: "bash `ls -R`", lines: 410, chars: 36_100 })).toBe(
      '[context-guard] Removed the output of bash `ls -R`: 410 lines (36.1k chars) judged not needed for the answer. Full output: recall({"entryId":"abc"}).',
    );
  });

  it("uses the singular for one line and escapes the entry id as JSON", () => {
    const out = renderRemoved({ entryId: 'a"b', label: "read x", lines: 1, chars: 5000 });
    expect(out).toBe(
      '[context-guard] Removed the output of read x: 1 line (5k chars) judged not needed for the answer. Full output: recall({"entryId":"a\\"b"}).',
    );
    expect(out.includes("\n")).toBe(false);
  });
});
