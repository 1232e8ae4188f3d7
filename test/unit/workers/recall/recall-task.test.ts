import { describe, expect, it } from "vitest";
import {
  excerptAround,
  parsePattern,
  RECALL_EXCERPT_CHARS,
  renderWindow,
  splitLines,
} from "../../../../src/core/recall/recall.ts";
import { recallText } from "../../../../src/workers/recall/recall-task.ts";

const text = Array.from({ length: 30 }, (_, i) => `line ${i + 1}${i % 10 === 4 ? " ERROR here" : ""}`).join("\n");

describe("recall text", () => {
  it("returns the whole output verbatim when it fits", () => {
    const out = recallText({ text, timeoutMs: 1000 });
    expect(out).toMatchObject({ ok: true, text, truncated: false });
  });

  it("returns matching lines with their line numbers", () => {
    const out = recallText({ text, pattern: "ERROR", timeoutMs: 1000 });
    expect(out.ok && out.text).toBe("5: line 5 ERROR here\n15: line 15 ERROR here\n25: line 25 ERROR here");
  });

  it("supports /literal/flags patterns", () => {
    const out = recallText({ text, pattern: "/error/i", timeoutMs: 1000 });
    expect(out.ok && out.text.split("\n")).toHaveLength(3);
    expect(parsePattern("/a+/gi")).toEqual({ source: "a+", flags: "i" });
  });

  it("counts offset over matches when a pattern is set", () => {
    const out = recallText({ text, pattern: "ERROR", offset: 2, limit: 1, timeoutMs: 1000 });
    expect(out.ok && out.text).toBe("15: line 15 ERROR here\n[Showing matches 2–2 of 3. Use offset=3 to continue.]");
  });

  it("windows lines with offset and limit and says how to continue", () => {
    const out = recallText({ text, offset: 10, limit: 3, timeoutMs: 1000 });
    expect(out.ok && out.text).toBe(
      "line 10\nline 11\nline 12\n[Showing lines 10–12 of 30. Use offset=13 to continue.]",
    );
  });

  it("reports an offset past the end", () => {
    const out = recallText({ text, offset: 99, timeoutMs: 1000 });
    expect(out.ok && out.text).toContain("past the end");
  });

  it("returns a clear error for an invalid pattern", () => {
    const out = recallText({ text, pattern: "([a-", timeoutMs: 1000 });
    expect(out).toMatchObject({ ok: false });
    expect(!out.ok && out.error).toMatch(/invalid pattern/);
  });

  it("stops a catastrophic pattern at the time limit with an error", () => {
    const evil = `${"a".repeat(40)}!`;
    // Without the limit this backtracks for ages: the error naming it is what says it cut the search.
    const out = recallText({ text: evil, pattern: "(a+)+$", timeoutMs: 200 });
    expect(out).toMatchObject({ ok: false });
    expect(!out.ok && out.error).toMatch(/longer than 200 ms/);
  });

  it("rejects patterns over 500 characters", () => {
    const out = recallText({ text, pattern: "a".repeat(501), timeoutMs: 1000 });
    expect(!out.ok && out.error).toMatch(/limit is 500/);
  });

  it("the sandbox gives a pattern nothing to reach: it is data for RegExp only", () => {
    // If the pattern were evaluated as code this would throw or match differently.
    const out = recallText({ text: "process\nrequire", pattern: "process.exit(1)", timeoutMs: 1000 });
    expect(out).toMatchObject({ ok: true, text: "[no lines match the pattern]" });
  });

  it("caps output at 2,000 lines", () => {
    const many = Array.from({ length: 5000 }, (_, i) => `x${i}`).join("\n");
    const out = recallText({ text: many, timeoutMs: 1000 });
    expect(out.ok && out.shown).toBe(2000);
    expect(out.ok && out.text.split("\n").at(-1)).toMatch(/Use offset=2001 to continue/);
  });

  it("caps output at 50 KB and cuts a single huge line", () => {
    const huge = "y".repeat(200_000);
    const out = recallText({ text: `${huge}\nshort`, timeoutMs: 1000 });
    expect(out.ok && Buffer.byteLength(out.text)).toBeLessThan(52 * 1024);
    expect(out.ok && out.text).toContain("[line 1 cut at 50KB]");
  });

  it("splits CRLF text into clean lines", () => {
    expect(splitLines("a\r\nb\r\n")).toEqual(["a", "b"]);
    expect(renderWindow({ lines: [], query: {}, numbered: false }).text).toBe("[the output is empty]");
  });
});

describe("recall of long lines", () => {
  /** A minified line of `length` chars with `needle_fn` at 0-based column `at`. */
  const minified = (length: number, at: number): string => {
    const filler = "var a=1;b(c,d);".repeat(Math.ceil(length / 15)).slice(0, length);
    return `${filler.slice(0, at)}needle_fn(${filler.slice(at + 10)}`.slice(0, length);
  };

  it("finds a match at column 10,000 of a minified line, and shows the part around it", () => {
    // Before: only the first 4,000 characters of each line were matched: "[no lines match the pattern]".
    const line = minified(20_000, 10_000);
    const out = recallText({ text: `short\n${line}\nshort`, pattern: "needle_fn", timeoutMs: 1000, entryId: "e1" });
    expect(out.ok).toBe(true);
    if (!out.ok) return;
    expect(out.shown).toBe(1);
    const [shown, note] = out.text.split("\n");
    expect(shown?.startsWith("2: …")).toBe(true);
    expect(shown).toContain("needle_fn(");
    expect(shown?.length).toBeLessThan(RECALL_EXCERPT_CHARS + 20);
    expect(line).toContain(shown?.slice(4, -1));
    expect(note).toBe(
      "[line 2 cut: it is 20000 chars; shown are chars 9001–13000, around the match at char 10001. " +
        'recall({"entryId":"e1","offset":2,"limit":1}) shows all of it; a pattern that matches further along shows another part.]',
    );
  });

  it("reaches a match deep inside a line longer than 50 KB", () => {
    const line = minified(300_000, 250_000);
    const out = recallText({ text: line, pattern: "/NEEDLE_FN\\(/i", timeoutMs: 1000 });
    expect(out.ok && out.text).toContain("needle_fn(");
    expect(out.ok && out.text).toContain("recall with offset=1, limit=1 and no pattern shows its first 50 KB");
  });

  it("shows a matched line within the excerpt size whole, as before", () => {
    const line = minified(3000, 2500);
    const out = recallText({ text: line, pattern: "needle_fn", timeoutMs: 1000 });
    expect(out.ok && out.text).toBe(`1: ${line}`);
  });

  it("keeps the 50 KB cap with many long matched lines, and says how to continue", () => {
    const lines = Array.from({ length: 40 }, (_, i) => minified(30_000, 5000 + i * 100));
    const out = recallText({ text: lines.join("\n"), pattern: "needle_fn", timeoutMs: 1000 });
    expect(out.ok).toBe(true);
    if (!out.ok) return;
    expect(Buffer.byteLength(out.text)).toBeLessThanOrEqual(51 * 1024);
    expect(out.shown).toBeGreaterThan(5);
    expect(out.shown).toBeLessThan(40);
    expect(out.text.split("\n").at(-1)).toMatch(
      new RegExp(
        `^\\[Showing matches 1–${out.shown} of 40 \\(output capped.*Use offset=${out.shown + 1} to continue\\.\\]$`,
      ),
    );
  });

  it("still stops a catastrophic pattern on a long line at the time limit", () => {
    const out = recallText({ text: `${"a".repeat(30)}!${"b".repeat(20_000)}`, pattern: "(a+)+$", timeoutMs: 200 });
    expect(!out.ok && out.error).toMatch(/longer than 200 ms/);
  });

  it("cuts excerpts around the match, near the end of the line too, never inside a surrogate pair", () => {
    const line = `${"😀".repeat(5000)}X${"😀".repeat(5000)}`;
    const at = line.indexOf("X");
    const ex = excerptAround(line, at);
    expect(ex.text).toContain("X");
    expect(line.slice(ex.from, ex.to)).toBe(ex.text);
    expect(ex.text.codePointAt(0)).toBe(0x1f600);
    expect(ex.text.charCodeAt(ex.text.length - 1)).toBe(0xde00);
    const end = excerptAround(line, line.length - 2);
    expect(end.to).toBe(line.length);
    expect(end.to - end.from).toBeGreaterThanOrEqual(RECALL_EXCERPT_CHARS);
  });
});
