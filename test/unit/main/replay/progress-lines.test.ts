// Progress of a long replay on a stderr that is not a terminal: silent for a short session, a plain
// line now and then for a long one, with the file name's control characters shown as escapes.
import { describe, expect, it } from "vitest";
import { ProgressLines } from "../../../../src/main/replay/progress-lines.ts";

function sink(): { stream: NodeJS.WritableStream; lines: string[] } {
  const lines: string[] = [];
  const stream = { write: (text: string) => lines.push(text) > 0 } as unknown as NodeJS.WritableStream;
  return { stream, lines };
}

describe("ProgressLines", () => {
  it("says nothing for a session below the size that takes minutes", () => {
    const { stream, lines } = sink();
    const progress = new ProgressLines(stream, { minEntries: 100, everyMs: 0 });
    for (let i = 1; i <= 99; i++) progress.update("short.jsonl", i, 99, "entries");
    expect(lines).toEqual([]);
  });

  it("writes whole lines for a long session, the last one at the end, escaping the name", () => {
    const { stream, lines } = sink();
    const progress = new ProgressLines(stream, { minEntries: 100, everyMs: 0 });
    for (let i = 1; i <= 200; i++) progress.update("a\u001b]52;c;eA==\u0007.jsonl", i, 200, "entries");
    expect(lines.length).toBeGreaterThan(1);
    for (const line of lines) {
      expect(line.endsWith("\n")).toBe(true);
      expect(line).not.toContain("\u001b");
    }
    expect(lines.at(-1)).toMatch(/^context-guard: a\\x1b\]52;c;eA==\\x07\.jsonl 200\/200 entries \(100%\) after /);
  });

  it("says the time left at the pace since the previous line", () => {
    const { stream, lines } = sink();
    let now = 0;
    const progress = new ProgressLines(stream, { minEntries: 100, everyMs: 1000, now: () => now });
    for (let i = 1; i <= 1000; i++) {
      // Entries get dearer halfway, as they do in a session that never compacts.
      now += i <= 500 ? 10 : 20;
      progress.update("long.jsonl", i, 1000, "entries");
    }
    const last = lines.filter((l) => l.includes("left")).at(-1) as string;
    const done = Number(/ (\d+)\/1000 /.exec(last)?.[1]);
    expect(done).toBeGreaterThan(500);
    expect(last).toContain(`about ${(((1000 - done) * 20) / 60_000).toFixed(1)} min left`);
    expect(lines.at(-1)).not.toContain("left");
  });
});
