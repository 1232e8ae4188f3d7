import { describe, expect, it } from "vitest";
import { parsePattern, renderWindow, splitLines } from "../src/core/recall.ts";
import { recallText } from "../src/workers/recall-task.ts";

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
    const started = Date.now();
    const out = recallText({ text: evil, pattern: "(a+)+$", timeoutMs: 200 });
    expect(Date.now() - started).toBeLessThan(5000);
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
