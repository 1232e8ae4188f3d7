// A scripted main model that bills its prompt cache as a provider does: explicit (Anthropic-like: reads
// and writes at the request's cache_control breakpoints), automatic (OpenAI-like: prefixes cached by
// themselves) or none. Each message is one cache block; its key is its content without the breakpoint
// marks, so moving a breakpoint is no change. Pi records the usage and prices it with the model's cost.
import type { CacheFamily, PromptBlock } from "../../src/core/cache/prompt-cache.ts";
import { PromptCache } from "../../src/core/cache/prompt-cache.ts";
import type { FakeReply, FakeRequest, FakeScript, WireJson } from "./fake-openai.ts";

/** Requests are this far apart on the provider's clock: within any TTL, and no wall clock. */
const STEP_MS = 10_000;
const FREE = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };

const unmarked = (value: WireJson): WireJson =>
  JSON.parse(JSON.stringify(value ?? null, (k, v) => (k === "cache_control" ? undefined : v)));
const marked = (value: WireJson) => JSON.stringify(value ?? null).includes('"cache_control"');
const tokens = (s: string) => Math.max(1, Math.ceil(s.length / 4));

/** The prompt as cache blocks (system and tools first), and the blocks that carry a breakpoint. */
function blocksOf(req: FakeRequest): { blocks: PromptBlock[]; breakpoints: number[] } {
  const head = JSON.stringify(unmarked({ system: req.body?.system ?? null, tools: req.tools }));
  const blocks: PromptBlock[] = [{ key: head, tokens: tokens(head) }];
  const breakpoints: number[] = marked(req.body?.system) || marked(req.tools) ? [0] : [];
  for (const m of req.messages) {
    const key = JSON.stringify(unmarked(m));
    if (marked(m)) breakpoints.push(blocks.length);
    blocks.push({ key, tokens: tokens(key) });
  }
  return { blocks, breakpoints };
}

/** `script` with usage billed by `family`'s cache over each request's prompt. */
export function billedScript(script: FakeScript, family: CacheFamily): FakeScript {
  const cache = new PromptCache(family, FREE, { ttlMs: 5 * 60_000 });
  return async (req) => {
    const reply = await script(req);
    if ("httpError" in reply) return reply;
    const { blocks, breakpoints } = blocksOf(req);
    const cost = cache.request({ at: req.index * STEP_MS, blocks, breakpoints, output: 20 });
    const usage = { input: cost.input, output: 20, cacheRead: cost.cacheRead, cacheWrite: cost.cacheWrite };
    return { ...reply, usage } as FakeReply;
  };
}
