// The replay holds a long session in the memory of what it needs, not of the file: the reader takes the
// file line by line (never its whole text), and the money view keeps only the last request's prompt
// (it used to keep every request's, which grew with requests × context and failed on long sessions).
import { Buffer } from "node:buffer";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { describe, expect, it, vi } from "vitest";
import { type CacheProfile, learnProfile } from "../../../../src/core/cache/cache-behaviour.ts";
import type { Piece } from "../../../../src/core/replay/calibrate.ts";
import { type MoneyRequest, MoneySimulator, priceSession } from "../../../../src/core/replay/money.ts";
import { fileLines, readSessionFile } from "../../../../src/main/replay/reader.ts";

// The reader must not take the file whole: readFile fails the test if it is called.
vi.mock("node:fs/promises", async (original) => ({
  ...(await original<typeof import("node:fs/promises")>()),
  readFile: () => {
    throw new Error("readFile holds the whole file: the reader must stream it");
  },
}));

const header = { type: "session", version: 3, id: "s", timestamp: "2026-01-01T00:00:00.000Z", cwd: "/w" };
const entry = (i: number, text: string) =>
  JSON.stringify({
    type: "message",
    id: `e${i}`,
    parentId: i === 0 ? null : `e${i - 1}`,
    timestamp: "2026-01-01T00:00:01.000Z",
    message: i % 2 === 0 ? { role: "user", content: text } : { role: "assistant", content: [{ type: "text", text }] },
  });

describe("the reader streams the file", () => {
  it("reads a session of several megabytes line by line, long lines and split characters included", async () => {
    const dir = await mkdtemp(join(tmpdir(), "cg-stream-"));
    const path = join(dir, "s.jsonl");
    // Lines longer than the reader's 1 MiB chunks, of 3-byte characters that chunk edges cut in two.
    const long = "€".repeat(700_000);
    const lines = [JSON.stringify(header)];
    for (let i = 0; i < 6; i++) lines.push(entry(i, i % 3 === 1 ? long : `message ${i}`));
    await writeFile(path, `${lines.join("\n")}\n${entry(6, "cut").slice(0, 40)}`);
    const seen: Array<{ text: string; unterminated: boolean }> = [];
    for await (const line of fileLines(path)) seen.push(line);
    expect(seen.map((l) => l.text)).toEqual([...lines, entry(6, "cut").slice(0, 40)]);
    expect(seen.map((l) => l.unterminated)).toEqual([...lines.map(() => false), true]);
    const file = await readSessionFile(path);
    expect(file.lines).toBe(8);
    expect(file.branch).toHaveLength(6);
    expect((file.branch[1] as { message: { content: Array<{ text: string }> } }).message.content[0]?.text).toBe(long);
    expect(file.problems.map((p) => p.line)).toEqual([8]);
    expect(file.problems[0]?.message).toContain("truncated");
    expect(Buffer.byteLength(lines.join("\n"))).toBeGreaterThan(4_000_000);
  });
});

describe("the money view prices request by request", () => {
  const M = "anthropic/claude-sonnet-4-5";
  // No recorded history: Pi's prior (explicit cache points) at the registry's list prices.
  const profile = learnProfile({ api: "anthropic-messages", provider: "anthropic", id: "claude-sonnet-4-5" }, [], {
    input: 3,
    output: 15,
    cacheRead: 0.3,
    cacheWrite: 3.75,
  });
  const pricing = new Map<string, CacheProfile>([[M, profile]]);
  const piece = (id: string, chars: number, key = id): Piece => ({ id, key, chars, origChars: chars, kind: "other" });
  const requests = (count: number): MoneyRequest[] => {
    const out: MoneyRequest[] = [];
    const prompt: Piece[] = [{ id: "system", key: "system", chars: 0, origChars: 0, kind: "system" }];
    for (let n = 1; n <= count; n++) {
      prompt.push(piece(`p${n}`, 4000 + 40 * n));
      // Every fifth request, an edit shortens an older piece (guard on only).
      const on = prompt.map((p, i) =>
        n % 5 === 0 && i === Math.floor(n / 2) ? { ...p, key: `${p.id}@e${n}`, chars: 40 } : p,
      );
      out.push({ n, at: n * 30_000, model: M, off: [...prompt], on, outputChars: 400 });
    }
    return out;
  };

  it("gives what pricing all requests at once gives", () => {
    expect(profile).toMatchObject({ behaviour: "explicit", priceSource: "registry" });
    const all = requests(60);
    const passes = [{ pass: 1, afterRequest: 5, edited: true, classifier: 0.001 }];
    const sim = new MoneySimulator(
      all.map(({ n, at, model }) => ({ n, at, model })),
      pricing,
    );
    for (const r of all) sim.request(r);
    expect(sim.finish(passes, "test")).toEqual(priceSession(all, pricing, passes, "test"));
  });

  it("keeps no earlier request's prompt", async () => {
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as () => void;
    const all = requests(8);
    const sim = new MoneySimulator(
      all.map(({ n, at, model }) => ({ n, at, model })),
      pricing,
    );
    const refs: WeakRef<readonly Piece[]>[] = [];
    for (let i = 0; i < all.length; i++) {
      const r = all[i] as MoneyRequest;
      refs.push(new WeakRef(r.off), new WeakRef(r.on));
      sim.request(r);
      all[i] = undefined as unknown as MoneyRequest;
    }
    // A WeakRef's target lives until the current job ends.
    await new Promise((resolve) => setTimeout(resolve, 0));
    gc();
    // At most the last request's prompts are kept (the next request compares against them), of 16.
    const alive = refs.filter((r) => r.deref() !== undefined).length;
    expect(alive).toBeLessThanOrEqual(2);
    expect(sim.finish([], "test").cumulative).toHaveLength(8);
  });
});
