// The tally gives the view profileFromMessages gives, pass after pass, as messages join the context and
// leave it (omitted exchanges), across models, list prices and usages that are set aside.
import { describe, expect, it } from "vitest";
import {
  type AssistantRecord,
  breakEvenView,
  type ModelInfo,
  profileFromMessages,
} from "../../../../src/core/cache/cache-behaviour.ts";
import { CacheViewTally } from "../../../../src/core/cache/cache-view-tally.ts";
import type { Prices } from "../../../../src/core/cache/prompt-cache.ts";
import { mulberry32 } from "../../../kit/prng.ts";

const MODELS: ModelInfo[] = [
  { api: "anthropic-messages", provider: "anthropic", id: "claude-sonnet-4-5" },
  { api: "openai-completions", provider: "openrouter", id: "z-ai/glm-4.6" },
  { api: "openai-codex-responses", provider: "openai-codex", id: "gpt-5" },
];
const LISTS: Array<Prices | undefined> = [
  undefined,
  { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 },
  { input: 1, output: 2, cacheRead: 0.1, cacheWrite: 0 },
];

function message(rng: () => number, model: ModelInfo): AssistantRecord {
  const pick = rng();
  const other = rng() < 0.1;
  const tokens = {
    input: Math.floor(rng() * 5000),
    output: Math.floor(rng() * 500),
    cacheRead: rng() < 0.5 ? Math.floor(rng() * 40000) : 0,
    cacheWrite: rng() < 0.3 ? Math.floor(rng() * 3000) : 0,
  };
  const cost =
    pick < 0.2
      ? undefined
      : pick < 0.3
        ? { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }
        : {
            input: (tokens.input * (1 + Math.floor(rng() * 3))) / 1e6,
            output: (tokens.output * 15) / 1e6,
            cacheRead: (tokens.cacheRead * 0.3) / 1e6,
            cacheWrite: (tokens.cacheWrite * 3.75) / 1e6,
          };
  const usage = pick > 0.97 ? { input: -1 } : pick > 0.95 ? "bad" : { ...tokens, ...(cost ? { cost } : {}) };
  return { provider: other ? "openclaw" : model.provider, model: model.id, timestamp: 0, usage };
}

describe("CacheViewTally", () => {
  it.each([1, 2, 3, 4, 5, 6])("equals breakEvenView(profileFromMessages) at every pass (seed %i)", (seed) => {
    const rng = mulberry32(seed);
    const tally = new CacheViewTally();
    let context: AssistantRecord[] = [];
    let model = MODELS[seed % MODELS.length] as ModelInfo;
    let list = LISTS[seed % LISTS.length];
    for (let pass = 0; pass < 150; pass++) {
      const added = Math.floor(rng() * 4);
      for (let i = 0; i < added; i++) context.push(message(rng, model));
      if (rng() < 0.15 && context.length > 2) {
        // An omitted exchange: some messages leave the context.
        const at = Math.floor(rng() * context.length);
        context = [...context.slice(0, at), ...context.slice(at + 1 + Math.floor(rng() * 2))];
      }
      if (rng() < 0.03) model = MODELS[Math.floor(rng() * MODELS.length)] as ModelInfo;
      if (rng() < 0.03) list = LISTS[Math.floor(rng() * LISTS.length)];
      expect(tally.view(context, model, list)).toEqual(breakEvenView(profileFromMessages(context, model, list)));
    }
  });

  it("equals it before any billed request, for every model and list", () => {
    const aside: AssistantRecord[] = [];
    for (const model of MODELS) {
      for (const list of LISTS) {
        for (const context of [[], [{ provider: "openclaw", model: model.id, usage: {} }], aside]) {
          const view = new CacheViewTally().view(context, model, list);
          expect(view).toEqual(breakEvenView(profileFromMessages(context, model, list)));
        }
      }
    }
  });
});
