import { describe, expect, it } from "vitest";
import {
  chunkFiles,
  chunkOutput,
  chunkTarget,
  isGrepStyle,
  segmentChunks,
} from "../../../../src/core/distill/chunk.ts";
import { countLines } from "../../../../src/core/shared/text.ts";
import type { Chunk } from "../../../../src/core/shared/types.ts";
import { mulberry32 } from "../../../kit/prng.ts";

/**
 * Checks every structural promise of chunkOutput (collects problems so big loops stay fast): the chunks
 * rebuild the text, none is longer than `maxChars`, cuts fall at line ends except inside a line longer
 * than `maxChars`, and line numbers run on (a chunk continuing a cut line starts on that line).
 */
function expectWellFormed(text: string, chunks: Chunk[], maxChars = 32_000): void {
  expect(chunks.map((c) => c.text).join("")).toBe(text);
  // Length of each line without its line end, by 0-based line index.
  const lengths = text.split("\n").map((l) => (l.endsWith("\r") ? l.length - 1 : l.length));
  const problems: string[] = [];
  let pos = 0;
  let next = 1;
  chunks.forEach((c, i) => {
    const at = `chunk ${i + 1}`;
    if (c.n !== i + 1) problems.push(`${at}: n=${c.n}`);
    if (c.start !== pos || c.end !== pos + c.text.length) problems.push(`${at}: range ${c.start}-${c.end}`);
    if (c.text.length === 0) problems.push(`${at}: empty`);
    if (c.text.length > maxChars) problems.push(`${at}: ${c.text.length} chars`);
    if (text.slice(c.start, c.end) !== c.text) problems.push(`${at}: text is not the slice`);
    const breaks = c.text.split("\n").length - 1;
    const last = c.firstLine + breaks - (c.text.endsWith("\n") ? 1 : 0);
    if (c.firstLine !== next || c.lastLine !== last) problems.push(`${at}: lines ${c.firstLine}-${c.lastLine}`);
    const inside = i < chunks.length - 1 && !c.text.endsWith("\n");
    // Cuts fall at line ends, except inside a line too long for one chunk.
    if (inside && (lengths[c.lastLine - 1] ?? 0) <= maxChars) problems.push(`${at}: cut inside a short line`);
    if (i > 0 && !chunks[i - 1]!.text.endsWith("\n") && c.text.startsWith("\n")) {
      problems.push(`${at}: a continuation starts with its line end`);
    }
    const cut = c.end;
    if (inside && cut < text.length && text.charCodeAt(cut) >= 0xdc00 && text.charCodeAt(cut) <= 0xdfff) {
      problems.push(`${at}: cut inside a surrogate pair`);
    }
    pos = c.end;
    next = inside ? c.lastLine : c.lastLine + 1;
  });
  expect(problems).toEqual([]);
  expect(pos).toBe(text.length);
  expect(chunks.length === 0 ? 0 : chunks.at(-1)!.lastLine).toBe(countLines(text));
}

function grepLine(file: string, n: number, match: boolean, body: string): string {
  return `${file}${match ? ":" : "-"}${n}${match ? ":" : "-"}${body}\n`;
}

/** `count` match lines of about `width` characters for one file. */
function fileBlock(file: string, count: number, width = 60): string {
  let out = "";
  for (let i = 1; i <= count; i++) {
    const prefix = `${file}:${i}:`;
    out += `${prefix}${"x".repeat(Math.max(1, width - prefix.length - 1))}\n`;
  }
  return out;
}

describe("chunkTarget", () => {
  it("is at least 800 and grows past 4000 only beyond 480k characters", () => {
    expect(chunkTarget(0)).toBe(800);
    expect(chunkTarget(50_000)).toBe(800);
    expect(chunkTarget(96_001)).toBe(801);
    expect(chunkTarget(480_000)).toBe(4000);
    expect(chunkTarget(480_001)).toBe(4001);
  });

  it("stops at a quarter of what one request carries, so several chunks fit a request", () => {
    // Before the cap a 20 MB output had 166,667-char chunks: all above maxSegmentChars, none sent.
    expect(chunkTarget(960_000)).toBe(8000);
    expect(chunkTarget(960_001)).toBe(8000);
    expect(chunkTarget(20_000_000)).toBe(8000);
    expect(chunkTarget(20_000_000, 2000)).toBe(500);
    expect(chunkTarget(10_000, 2000)).toBe(500);
  });
});

describe("isGrepStyle", () => {
  it("recognises rg output with matches, context lines and separators", () => {
    const text = [
      "src/a.ts-9-before",
      "src/a.ts:10:const status = 1;",
      "src/a.ts-11-after",
      "--",
      "src/b.ts:3:status()",
      "",
    ].join("\n");
    expect(isGrepStyle(text)).toBe(true);
  });

  it("needs at least three meaningful lines", () => {
    expect(isGrepStyle("a.ts:1:x\n--\n\nb.ts:2:y\n")).toBe(false);
    expect(isGrepStyle("a.ts:1:x\n--\nb.ts:2:y\nc.ts:3:z\n")).toBe(true);
  });

  it("needs 60% of the meaningful lines to look like grep lines", () => {
    const grep = "a.ts:1:x\nb.ts:2:y\nc.ts:3:z\n";
    expect(isGrepStyle(`${grep}plain one\nplain two\n`)).toBe(true); // 3 of 5
    expect(isGrepStyle(`${grep}plain one\nplain two\nplain three\n`)).toBe(false); // 3 of 6
  });

  it("does not take prose, compiler messages with spaces or timestamped logs for grep output", () => {
    expect(isGrepStyle("hello world\nthis is text\nmore text here\n")).toBe(false);
    expect(isGrepStyle("error in a.ts: 12: bad\nwarning in b.ts: 3: odd\nnote: 4: x\n")).toBe(false);
    const log = "2024-05-01T12:30:45 start\n2024-05-01T12:30:46 step\n2024-05-01 12:31:00 done\n2024-05-01-12-x\n";
    expect(isGrepStyle(log)).toBe(false);
  });

  it("accepts context lines of files whose names contain dashes and digits", () => {
    const text = "2024-05-01-post.md-11-a\n2024-05-01-post.md-12-b\n2024-05-01-post.md-13-c\n";
    expect(isGrepStyle(text)).toBe(true);
  });
});

describe("chunkOutput", () => {
  it("returns no chunks for empty text and one chunk for short text", () => {
    expect(chunkOutput("")).toEqual([]);
    const chunks = chunkOutput("one\ntwo");
    expect(chunks).toEqual([{ n: 1, start: 0, end: 7, text: "one\ntwo", firstLine: 1, lastLine: 2 }]);
  });

  it("rebuilds the exact text for many random outputs (fixed seed)", () => {
    const rand = mulberry32(20240501);
    const pick = <T>(items: T[]): T => items[Math.floor(rand() * items.length)]!;
    const files = ["src/a.ts", "2024-05-01-post.md", "notes", "notes-1-draft.md", "./lib/x y.js", "b.py"];
    for (let round = 0; round < 150; round++) {
      const grepish = rand() < 0.5;
      const crlf = rand() < 0.25;
      const eol = crlf ? "\r\n" : "\n";
      const lines = Math.floor(rand() * (rand() < 0.2 ? 4000 : 300));
      const parts: string[] = [];
      for (let i = 0; i < lines; i++) {
        const r = rand();
        if (r < 0.08) parts.push(eol);
        else if (r < 0.1) parts.push(`--${eol}`);
        else if (r < 0.12) parts.push(`${"L".repeat(500 + Math.floor(rand() * 6000))}${eol}`);
        else if (r < 0.14) parts.push(`  ${eol}`);
        else if (grepish) {
          const match = rand() < 0.6;
          const line = grepLine(pick(files), 1 + Math.floor(rand() * 500), match, "y".repeat(Math.floor(rand() * 120)));
          parts.push(crlf ? `${line.slice(0, -1)}\r\n` : line);
        } else parts.push(`${"word ".repeat(Math.floor(rand() * 30))}${eol}`);
      }
      let text = parts.join("");
      if (rand() < 0.4 && text.endsWith("\n")) text = text.slice(0, crlf ? -2 : -1);
      if (rand() < 0.1) text += "trailing fragment without newline";
      for (const grep of [undefined, true, false]) {
        const chunks = chunkOutput(text, grep);
        expectWellFormed(text, chunks);
        if (grep === true) for (const c of chunks) expect(Array.isArray(c.files)).toBe(true);
        if (grep === false) for (const c of chunks) expect(c.files).toBeUndefined();
      }
      // A small request limit: the long lines (500–6,500 chars) are cut into pieces.
      if (round % 3 === 0) expectWellFormed(text, chunkOutput(text, undefined, 2000), 2000);
    }
  });

  it("keeps CRLF line ends and a missing final newline intact", () => {
    const text = `${"alpha beta gamma\r\n".repeat(300)}\r\n${"delta\r\n".repeat(200)}last`;
    const chunks = chunkOutput(text);
    expect(chunks.length).toBeGreaterThan(3);
    expectWellFormed(text, chunks);
    expect(chunks.at(-1)!.text.endsWith("delta\r\nlast")).toBe(true);
  });

  describe("grep-style output", () => {
    it("matches a context line to the longest file name seen in match lines", () => {
      const text =
        fileBlock("notes", 10) +
        grepLine("notes-1-draft.md", 11, false, "context of the draft") +
        fileBlock("notes-1-draft.md", 10) +
        grepLine("2024-05-01-post.md", 11, false, "context before the first match") +
        fileBlock("2024-05-01-post.md", 10) +
        grepLine("2024-05-01-post.md", 12, false, "context after");
      expect(isGrepStyle(text)).toBe(true);
      expect(chunkTarget(text.length)).toBe(800);
      const chunks = chunkOutput(text);
      expectWellFormed(text, chunks);
      expect(chunks.map((c) => c.files)).toEqual([["notes"], ["notes-1-draft.md"], ["2024-05-01-post.md"]]);
      expect(chunks[1]!.text.startsWith("notes-1-draft.md-11-")).toBe(true);
      expect(chunks[2]!.text.startsWith("2024-05-01-post.md-11-")).toBe(true);
      expect(chunks[2]!.text.endsWith("2024-05-01-post.md-12-context after\n")).toBe(true);
    });

    it("keeps separators, blank lines and unmatched lines with the current file", () => {
      const text = `${fileBlock("src/a.ts", 8)}--\n\nsomething odd\n${fileBlock("src/b.ts", 8)}`;
      const chunks = chunkOutput(text, true);
      expectWellFormed(text, chunks);
      expect(chunks).toHaveLength(2);
      expect(chunks[0]!.files).toEqual(["src/a.ts"]);
      expect(chunks[0]!.text.endsWith("--\n\nsomething odd\n")).toBe(true);
      expect(chunks[1]!.files).toEqual(["src/b.ts"]);
    });

    it("splits a file group above 1.5× the target into windows that each name the file", () => {
      const big = fileBlock("src/big.ts", 400); // 24k chars
      const text = fileBlock("src/a.ts", 10) + big + fileBlock("src/z.ts", 10);
      const target = chunkTarget(text.length);
      expect(target).toBe(800);
      const chunks = chunkOutput(text);
      expectWellFormed(text, chunks);
      const pieces = chunks.filter((c) => c.files?.includes("src/big.ts"));
      expect(pieces.length).toBeGreaterThanOrEqual(20);
      expect(pieces.map((c) => c.text).join("")).toBe(big);
      for (const p of pieces) {
        expect(p.files).toEqual(["src/big.ts"]);
        expect(p.text.length).toBeLessThanOrEqual(target * 1.5);
        expect(p.text.length).toBeGreaterThan(target / 2);
      }
      expect(chunks[0]!.files).toEqual(["src/a.ts"]);
      expect(chunks.at(-1)!.files).toEqual(["src/z.ts"]);
    });

    it("merges neighbouring small file groups up to half the target", () => {
      let text = fileBlock("src/main.ts", 10); // 600 chars: a normal group
      const small: string[] = [];
      for (let i = 0; i < 12; i++) {
        small.push(`src/f${i}.ts`);
        text += fileBlock(`src/f${i}.ts`, 2); // 120 chars each, under a quarter of 800
      }
      text += fileBlock("src/tail.ts", 10);
      const chunks = chunkOutput(text);
      expectWellFormed(text, chunks);
      expect(chunks[0]!.files).toEqual(["src/main.ts"]);
      expect(chunks.at(-1)!.files).toEqual(["src/tail.ts"]);
      const merged = chunks.slice(1, -1);
      // 120-char groups fit three to a 400-char chunk.
      expect(merged.map((c) => c.files)).toEqual([
        ["src/f0.ts", "src/f1.ts", "src/f2.ts"],
        ["src/f3.ts", "src/f4.ts", "src/f5.ts"],
        ["src/f6.ts", "src/f7.ts", "src/f8.ts"],
        ["src/f9.ts", "src/f10.ts", "src/f11.ts"],
      ]);
      for (const c of merged) expect(c.text.length).toBeLessThanOrEqual(400);
      expect(chunkFiles(chunks)).toEqual(["src/main.ts", ...small, "src/tail.ts"]);
    });

    it("does not merge a small group into a normal-sized neighbour", () => {
      const text = fileBlock("src/a.ts", 2) + fileBlock("src/b.ts", 10) + fileBlock("src/c.ts", 2);
      const chunks = chunkOutput(text);
      expect(chunks.map((c) => c.files)).toEqual([["src/a.ts"], ["src/b.ts"], ["src/c.ts"]]);
    });
  });

  describe("other output", () => {
    const line40 = `${"p".repeat(39)}\n`; // 40 chars: 20 per 800-char window

    it("cuts windows of about the target size at line ends", () => {
      const text = line40.repeat(100);
      const chunks = chunkOutput(text);
      expectWellFormed(text, chunks);
      expect(chunks).toHaveLength(5);
      for (const c of chunks) expect(c.text.length).toBe(800);
      expect(chunks[1]!.firstLine).toBe(21);
    });

    it("ends a window after the last blank line in its last 40%", () => {
      // Blank lines at 200 chars (first 60%: ignored), 600 and 681 (both late: the last one wins).
      const text = `${line40.repeat(5)}\n${line40.repeat(10)}\n${line40.repeat(2)}\n${line40.repeat(60)}`;
      const chunks = chunkOutput(text);
      expectWellFormed(text, chunks);
      expect(chunks[0]!.text).toBe(`${line40.repeat(5)}\n${line40.repeat(10)}\n${line40.repeat(2)}\n`);
      expect(chunks[0]!.lastLine).toBe(20);
    });

    it("ignores a blank line in the first 60% of the window", () => {
      const text = `${line40.repeat(5)}\n${line40.repeat(60)}`;
      const chunks = chunkOutput(text);
      expectWellFormed(text, chunks);
      // The blank line shifts the grid by one, so the window ends at the last full line before 800.
      expect(chunks[0]!.text).toBe(`${line40.repeat(5)}\n${line40.repeat(14)}`);
    });

    it("recognises CRLF blank lines", () => {
      const crlf = `${"q".repeat(38)}\r\n`;
      const text = `${crlf.repeat(16)}\r\n${crlf.repeat(60)}`;
      const chunks = chunkOutput(text);
      expectWellFormed(text, chunks);
      expect(chunks[0]!.text).toBe(`${crlf.repeat(16)}\r\n`);
    });

    it("gives a line longer than the target a chunk of its own and never splits it", () => {
      const huge = `${"{".repeat(10_000)}\n`;
      const text = line40.repeat(30) + huge + line40.repeat(30);
      const chunks = chunkOutput(text);
      expectWellFormed(text, chunks);
      const own = chunks.find((c) => c.text.includes("{"));
      expect(own?.text).toBe(huge);
      expect(own?.firstLine).toBe(31);
      expect(own?.lastLine).toBe(31);
    });

    it("cuts a single line longer than the request limit into pieces of about the target", () => {
      // Before: one 50,000-char chunk, above the 32,000-char limit, so the output was never judged.
      const text = "z".repeat(50_000);
      const chunks = chunkOutput(text);
      expectWellFormed(text, chunks);
      expect(chunks.length).toBeGreaterThan(1);
      for (const c of chunks) expect(c.text.length).toBeLessThanOrEqual(800 * 1.5);
      expect(chunks.every((c) => c.firstLine === 1 && c.lastLine === 1)).toBe(true);
    });

    it("cuts a long line after a space or closing punctuation when one is near the cut", () => {
      const minified = `${"function a(){return b(c,d)};".repeat(3000)}\n`; // 84,000 chars
      const chunks = chunkOutput(minified);
      expectWellFormed(minified, chunks);
      for (const c of chunks.slice(0, -1)) expect(c.text.at(-1)).toMatch(/[,;)}\]> \t]/);
    });

    it("never cuts a surrogate pair or a CRLF apart", () => {
      const text = `${"😀".repeat(30_000)}\r\n${"é😀".repeat(20_000)}\r\nend`;
      for (const max of [32_000, 2000, 64]) {
        const chunks = chunkOutput(text, false, max);
        expectWellFormed(text, chunks, max);
        for (const c of chunks) expect(c.text.startsWith("\n")).toBe(false);
      }
    });

    it("keeps short lines around a cut line at line ends, with the right line numbers", () => {
      const text = `${line40.repeat(30)}${"{".repeat(70_000)}\n${line40.repeat(30)}`;
      const chunks = chunkOutput(text);
      expectWellFormed(text, chunks);
      const pieces = chunks.filter((c) => c.text.includes("{"));
      expect(pieces.length).toBeGreaterThan(1);
      expect(pieces.every((c) => c.firstLine === 31 && c.lastLine === 31)).toBe(true);
      expect(pieces[0]!.text.startsWith("{")).toBe(true);
      expect(pieces.at(-1)!.text.endsWith("{\n")).toBe(true);
      expect(chunks.at(-1)!.lastLine).toBe(61);
    });
  });

  // How fast is bench's business; here the sizes of the chunks.
  it("chunks a multi-megabyte output", () => {
    const grep = fileBlock("src/a.ts", 20_000, 100) + fileBlock("src/b.ts", 20_000, 100);
    const plain = "lorem ipsum dolor\n".repeat(300_000);
    const g = chunkOutput(grep);
    const p = chunkOutput(plain);
    expect(g.map((c) => c.text).join("")).toBe(grep);
    expect(p.map((c) => c.text).join("")).toBe(plain);
    // Past 960k characters the target stays at 8,000 (a quarter of a request): chunks of about that size.
    expect(g.length).toBeLessThanOrEqual(Math.ceil(grep.length / 7000));
    expect(p.length).toBeLessThanOrEqual(Math.ceil(plain.length / 7000));
    for (const c of [...g, ...p]) expect(c.text.length).toBeLessThanOrEqual(12_000);
  });
});

describe("segmentChunks", () => {
  function fakeChunks(sizes: number[]): Chunk[] {
    let pos = 0;
    return sizes.map((size, i) => {
      const c: Chunk = {
        n: i + 1,
        start: pos,
        end: pos + size,
        text: "c".repeat(size),
        firstLine: i + 1,
        lastLine: i + 1,
      };
      pos += size;
      return c;
    });
  }
  const numbers = (chunks: Chunk[]) => chunks.map((c) => c.n);

  it("limits segments by characters", () => {
    const segments = segmentChunks(fakeChunks([400, 400, 400, 300, 600, 1000]), 1000, 40);
    expect(segments.map((s) => numbers(s.chunks))).toEqual([[1, 2], [3, 4], [5], [6]]);
    expect(segments.every((s) => !s.oversize)).toBe(true);
  });

  it("limits segments by chunk count", () => {
    const segments = segmentChunks(fakeChunks([10, 10, 10, 10, 10, 10, 10]), 1000, 3);
    expect(segments.map((s) => numbers(s.chunks))).toEqual([[1, 2, 3], [4, 5, 6], [7]]);
  });

  it("puts a chunk above the character limit in an oversize segment of its own", () => {
    const segments = segmentChunks(fakeChunks([300, 300, 5000, 300]), 1000, 40);
    expect(segments.map((s) => [numbers(s.chunks), s.oversize])).toEqual([
      [[1, 2], false],
      [[3], true],
      [[4], false],
    ]);
  });

  it("sends a real huge line in pieces: no segment of a chunked output is oversize", () => {
    // Before: the 40,001-char line was one chunk in an oversize segment, kept without asking.
    const text = `${"short line here\n".repeat(500)}${"x".repeat(40_000)}\n${"short line here\n".repeat(500)}`;
    const chunks = chunkOutput(text);
    const segments = segmentChunks(chunks, 32_000, 40);
    expect(segments.some((s) => s.oversize)).toBe(false);
    for (const s of segments) expect(s.chunks.reduce((n, c) => n + c.text.length, 0)).toBeLessThanOrEqual(32_000);
    expect(segments.flatMap((s) => numbers(s.chunks))).toEqual(numbers(chunks));
  });

  it("no output of any size or shape makes an oversize segment", () => {
    const shapes = [
      "q".repeat(4_000_000), // one 4 MB line
      `${"a,".repeat(200_000)}\n${"b ".repeat(300_000)}`, // two long lines
      fileBlock("src/a.ts", 50_000, 80), // 4 MB of grep output: 33k-char chunks before the cap
      "lorem ipsum dolor\n".repeat(220_000), // 4 MB of short lines
    ];
    for (const text of shapes) {
      for (const [max, perSegment] of [
        [32_000, 40],
        [2000, 40],
        [32_000, 1],
      ] as const) {
        const chunks = chunkOutput(text, undefined, max);
        expect(chunks.map((c) => c.text).join("") === text).toBe(true);
        const segments = segmentChunks(chunks, max, perSegment);
        expect(segments.filter((s) => s.oversize)).toEqual([]);
      }
    }
  });

  it("returns no segments for no chunks", () => {
    expect(segmentChunks([], 1000, 40)).toEqual([]);
  });
});
