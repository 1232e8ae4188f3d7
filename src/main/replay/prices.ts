// Prices for the replay's money view, from Pi's model registry: the main model's (per provider/model as
// the session recorded them), or the session's own recorded cost per token type when the registry has
// none; and Jev's price per input token from Pi's classifier catalog. The registry is built with an
// in-memory credential store: prices need no key, and nothing is written to the agent dir.
import { join } from "node:path";
import { InMemoryCredentialStore } from "@earendil-works/pi-ai";
import { ModelRegistry, ModelRuntime } from "@earendil-works/pi-coding-agent";
import type { CacheFamily, Prices } from "../../core/cache/prompt-cache.ts";
import type { ModelPricing } from "../../core/replay/money.ts";

/** Pi's classifier catalog entry whose price stands for Jev. */
export const JEV_REF = { provider: "openrouter", id: "~typesafe/jev-latest" } as const;

export interface PriceBook {
  /** Dollars per million prompt tokens for Jev, or undefined when the catalog has no price. */
  jevInput?: number;
  main(model: { provider?: string; model?: string; api?: string }, recorded: RecordedCost): ModelPricing;
}

/** Σ tokens and Σ dollars per token type, as the session recorded them for one model. */
export interface RecordedCost {
  tokens: { input: number; output: number; cacheRead: number; cacheWrite: number };
  dollars: { input: number; output: number; cacheRead: number; cacheWrite: number };
}

export function emptyRecordedCost(): RecordedCost {
  return {
    tokens: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
    dollars: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
  };
}

/** The cache family of a model's requests, from the api and provider Pi recorded. */
export function familyOf(model: { api?: string; provider?: string }): CacheFamily {
  const api = model.api ?? "";
  if (api === "anthropic-messages") return "anthropic";
  if (model.provider === "openai-codex" || api === "openai-codex-responses") return "openai-codex";
  if (api === "openai-responses" || api === "openai-completions" || api === "azure-openai-responses") return "openai";
  return "none";
}

function recordedPrices(r: RecordedCost): Prices | undefined {
  const per = (k: keyof RecordedCost["tokens"]) => (r.tokens[k] > 0 ? (r.dollars[k] / r.tokens[k]) * 1e6 : 0);
  const prices = {
    input: per("input"),
    output: per("output"),
    cacheRead: per("cacheRead"),
    cacheWrite: per("cacheWrite"),
  };
  return Object.values(prices).some((v) => v > 0) ? prices : undefined;
}

const hasPrice = (p: Prices | undefined): p is Prices =>
  p !== undefined && (p.input > 0 || p.output > 0 || p.cacheRead > 0 || p.cacheWrite > 0);

export async function loadPriceBook(agentDir?: string): Promise<PriceBook> {
  const runtime = await ModelRuntime.create({
    credentials: new InMemoryCredentialStore(),
    modelsPath: agentDir ? join(agentDir, "models.json") : null,
    refreshOnCreate: false,
  });
  const registry = new ModelRegistry(runtime);
  const jev = registry.findOfType("classifier", JEV_REF.provider, JEV_REF.id);
  return {
    ...(jev && jev.cost.input > 0 ? { jevInput: jev.cost.input } : {}),
    main(model, recorded) {
      const family = familyOf(model);
      const found = model.provider && model.model ? registry.find(model.provider, model.model) : undefined;
      if (hasPrice(found?.cost)) {
        const { input, output, cacheRead, cacheWrite } = found.cost;
        return { family, prices: { input, output, cacheRead, cacheWrite }, priceSource: "registry" };
      }
      const own = recordedPrices(recorded);
      return own ? { family, prices: own, priceSource: "recorded" } : { family, priceSource: "none" };
    },
  };
}
