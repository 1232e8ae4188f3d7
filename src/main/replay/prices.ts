// Prices for the replay's money view, from Pi's model registry: the main model's (per provider/model as
// the session recorded them), or the session's own recorded cost per token type when the registry has
// none; and Jev's price per input token from Pi's classifier catalog. The registry is built with an
// in-memory credential store: prices need no key, and nothing is written to the agent dir.
import { join } from "node:path";
import { type Api, InMemoryCredentialStore, type Model } from "@earendil-works/pi-ai";
import { ModelRegistry, ModelRuntime } from "@earendil-works/pi-coding-agent";
import { type CacheFamily, familyOf, type Prices } from "../../core/cache/prompt-cache.ts";
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

/** Ids compared without their vendor prefix, case, or the dot/dash difference between providers. */
const normalId = (id: string) => (id.split("/").pop() ?? id).toLowerCase().replace(/\./g, "-");

/** The maker's own provider for a cache family, preferred when several list the same model. */
const NATIVE: Partial<Record<CacheFamily, string>> = { anthropic: "anthropic", openai: "openai" };

/**
 * The same model's list price at another provider of Pi's registry, for a provider that has no price
 * and recorded none (a subscription such as GitHub Copilot, or a private gateway).
 */
function referenceModel(all: readonly Model<Api>[], id: string, family: CacheFamily): Model<Api> | undefined {
  const want = normalId(id);
  const same = all.filter((m) => normalId(m.id) === want && hasPrice(m.cost));
  const native = NATIVE[family];
  return same.find((m) => m.provider === native) ?? [...same].sort((a, b) => a.provider.localeCompare(b.provider))[0];
}

export async function loadPriceBook(agentDir?: string): Promise<PriceBook> {
  const runtime = await ModelRuntime.create({
    credentials: new InMemoryCredentialStore(),
    modelsPath: agentDir ? join(agentDir, "models.json") : null,
    refreshOnCreate: false,
  });
  return priceBookOf(new ModelRegistry(runtime));
}

/** The price book of a registry Pi already has (the extension's `ctx.modelRegistry`). */
export function priceBookOf(registry: Pick<ModelRegistry, "find" | "findOfType" | "getAll">): PriceBook {
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
      if (own) return { family, prices: own, priceSource: "recorded" };
      const ref = model.model ? referenceModel(registry.getAll(), model.model, family) : undefined;
      if (ref) {
        const { input, output, cacheRead, cacheWrite } = ref.cost;
        return {
          family,
          prices: { input, output, cacheRead, cacheWrite },
          priceSource: "reference",
          priceRef: `${ref.provider}/${ref.id}`,
        };
      }
      return { family, priceSource: "none" };
    },
  };
}
