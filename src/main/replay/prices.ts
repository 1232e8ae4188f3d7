// Prices for the replay's money view, from Pi's model registry: each main model's registry entry (its api,
// compat and list prices, the prior of cache-behaviour's profile, which the session's recorded usage then
// overrides), and Jev's price per input token from Pi's classifier catalog. The registry is built with an
// in-memory credential store: prices need no key, and nothing is written to the agent dir.
import { join } from "node:path";
import { InMemoryCredentialStore } from "@earendil-works/pi-ai";
import { ModelRegistry, ModelRuntime } from "@earendil-works/pi-coding-agent";
import type { ModelInfo } from "../../core/cache/cache-behaviour.ts";
import type { Prices } from "../../core/cache/prompt-cache.ts";

/** Pi's classifier catalog entry whose price stands for Jev. */
const JEV_REF = { provider: "openrouter", id: "~typesafe/jev-latest" } as const;

/** A main model as Pi's registry knows it (what the extension gets as ctx.model). */
export interface RegistryModel {
  info: ModelInfo;
  /** List prices, when the registry has any. */
  list?: Prices;
}

export interface PriceBook {
  /** Dollars per million prompt tokens for Jev, or undefined when the catalog has no price. */
  jevInput?: number;
  /** The registry's entry for provider/id, when it has one. */
  model(provider: string | undefined, id: string | undefined): RegistryModel | undefined;
}

const hasPrice = (p: Prices | undefined): p is Prices =>
  p !== undefined && (p.input > 0 || p.output > 0 || p.cacheRead > 0 || p.cacheWrite > 0);

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
    model(provider, id) {
      const found = provider && id ? registry.find(provider, id) : undefined;
      if (!found) return undefined;
      const { input, output, cacheRead, cacheWrite } = found.cost;
      const list = { input, output, cacheRead, cacheWrite };
      return { info: found, ...(hasPrice(list) ? { list } : {}) };
    },
  };
}
