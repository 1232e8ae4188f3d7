// A scripted provider's bill for a session file: every assistant entry's usage is what this provider
// charges for the prompt Pi's projection gives at that point (edits in place), so a file with the guard's
// context_edit entries carries guard-on usage, as a session recorded live with the guard does (an
// Anthropic-like provider is sent the guard's cache pins).
import { readFile, writeFile } from "node:fs/promises";
import type { SessionEntry } from "@earendil-works/pi-coding-agent";
import { type CacheFamily, dollars, type Prices, PromptCache, PromptTrack } from "../../src/core/cache/prompt-cache.ts";
import { anthropicPins } from "../../src/core/replay/prompt-marks.ts";
import { PromptPieces } from "../../src/main/replay/prompt-pieces.ts";

/** $3/M input, as a Sonnet-like model; cached reads a tenth, writes a quarter more. */
export const BILLING_PRICES: Prices = { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 };
/** The system prompt and tools the file does not hold, in tokens. */
const SYSTEM_TOKENS = 4000;

interface Line {
  type: string;
  id?: string;
  customType?: string;
  timestamp?: string;
  message?: { role?: string; timestamp?: number; usage?: { output?: number } };
}

export interface Bill {
  dollars: number;
  requests: number;
}

/**
 * Rewrites `from` (one linear branch, as `replay --write` writes it) to `to` with the provider's usage.
 * `dropEdits`: the file without the guard's edits (each context_edit kept as an entry showing nothing, so
 * the parent chain holds): the same session recorded with the guard off.
 */
export async function rebill(
  from: string,
  to: string,
  family: CacheFamily,
  options: { dropEdits?: boolean; model?: { api: string; provider: string; model: string } } = {},
): Promise<Bill> {
  const lines = (await readFile(from, "utf8")).split("\n").filter((l) => l.trim() !== "");
  const out: string[] = [];
  const list: SessionEntry[] = [];
  const pieces = new PromptPieces();
  const cache = new PromptCache(family, BILLING_PRICES, { ttlMs: 5 * 60_000 });
  const bill: Bill = { dollars: 0, requests: 0 };
  let previous: string[] = [];
  for (const text of lines) {
    let line = JSON.parse(text) as Line;
    if (options.dropEdits && line.type === "context_edit") line = { ...line, type: "custom", customType: "inert" };
    const m = line.message;
    if (line.type === "message" && m?.role === "assistant") {
      const prompt = pieces.next(list).pieces;
      const blocks = prompt.map((p, i) => ({
        key: p.key,
        tokens: i === 0 ? SYSTEM_TOKENS : Math.max(1, Math.round(p.chars / 4)),
      }));
      const output = Math.max(1, m.usage?.output ?? 100);
      const at = m.timestamp ?? (Date.parse(line.timestamp ?? "") || 0);
      // Pi's breakpoints (system, end); with the guard's edits, the guard's pins as cache-pins.ts sends them.
      let breakpoints = [0, blocks.length - 1];
      if (family === "anthropic" && !options.dropEdits) {
        const track = new PromptTrack();
        track.set(blocks);
        let same = 0;
        while (same < Math.min(previous.length, blocks.length) && previous[same] === blocks[same]?.key) same++;
        const changedAt = same < Math.min(previous.length, blocks.length) ? same : undefined;
        breakpoints = anthropicPins(cache, prompt, track, changedAt, at);
      }
      previous = blocks.map((b) => b.key);
      const cost = cache.request({ at, blocks, breakpoints, output });
      const part = (k: keyof Prices, n: number) => (n * BILLING_PRICES[k]) / 1e6;
      const usage = {
        input: cost.input,
        output,
        cacheRead: cost.cacheRead,
        cacheWrite: cost.cacheWrite,
        totalTokens: cost.input + cost.cacheRead + cost.cacheWrite + output,
        cost: {
          input: part("input", cost.input),
          output: part("output", output),
          cacheRead: part("cacheRead", cost.cacheRead),
          cacheWrite: part("cacheWrite", cost.cacheWrite),
          total: dollars(cost, BILLING_PRICES),
        },
      };
      bill.dollars += usage.cost.total;
      bill.requests++;
      line = { ...line, message: { ...m, ...(options.model ?? {}), usage } as Line["message"] };
    }
    out.push(JSON.stringify(line));
    if (line.type !== "session") {
      list.push(line as unknown as SessionEntry);
      pieces.add(line as unknown as SessionEntry);
    }
  }
  await writeFile(to, `${out.join("\n")}\n`);
  return bill;
}
