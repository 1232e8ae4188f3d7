// What skill routing and tool surfacing cost and save in dollars with the main model's prompt cache. Both
// arms carry the same conversation; they differ in the prefix before it (tool schemas and system prompt,
// which hold the skill catalog and the loaded skills' bodies). A change of the guard-on prefix (a set
// change) invalidates every cached prefix behind it, so the next request writes the whole prompt again.
// Pure. `routingMoney` is the one place that prices routing: the rest of the replay goes through it.
import { type CacheFamily, DEFAULT_TTL_MS, type Prices, type PromptBlock, PromptCache } from "../cache/prompt-cache.ts";

export interface RoutingRequest {
  /** Epoch ms. */
  at: number;
  output: number;
  /** The conversation after the prefix, as cache blocks: the same in both arms. */
  tail: readonly PromptBlock[];
  /** Prefix tokens guard off: every tool schema, the whole catalog. */
  offPrefix: number;
  /** Prefix tokens guard on: the surfaced tools, the reduced catalog, the loaded skills' bodies. */
  onPrefix: number;
  /** The guard-on prefix differs from the previous request's. */
  onChanged: boolean;
  /** The provider recorded a cold cache here (nothing read): both arms start cold. */
  cold?: boolean;
}

export interface RoutingPricing {
  family: CacheFamily;
  prices: Prices;
  ttlMs?: number;
}

export interface RoutingMoney {
  off: number;
  on: number;
  perRequest: Array<{ off: number; on: number }>;
}

function blocks(prefixKey: string, prefix: number, tail: readonly PromptBlock[]): PromptBlock[] {
  return [{ key: prefixKey, tokens: prefix }, ...tail];
}

/** Dollars of both arms, request by request, through the replay's prompt-cache model. */
export function routingMoney(requests: readonly RoutingRequest[], pricing: RoutingPricing): RoutingMoney {
  const options = { ttlMs: pricing.ttlMs ?? DEFAULT_TTL_MS };
  const off = new PromptCache(pricing.family, pricing.prices, options);
  const on = new PromptCache(pricing.family, pricing.prices, options);
  let version = 0;
  const out: RoutingMoney = { off: 0, on: 0, perRequest: [] };
  for (const r of requests) {
    if (r.cold) {
      off.clear();
      on.clear();
    }
    if (r.onChanged) version++;
    const last = r.tail.length;
    // Pi's breakpoints: the system prompt (behind the tools) and the end of the prompt.
    const breakpoints = [0, last];
    const a = off.request({ at: r.at, blocks: blocks("prefix", r.offPrefix, r.tail), breakpoints, output: r.output });
    const b = on.request({
      at: r.at,
      blocks: blocks(`prefix#${version}`, r.onPrefix, r.tail),
      breakpoints,
      output: r.output,
    });
    out.off += a.dollars;
    out.on += b.dollars;
    out.perRequest.push({ off: a.dollars, on: b.dollars });
  }
  return out;
}

/** The parts of one request's prefix, in tokens. */
export interface PrefixParts {
  /** Pi's system prompt without the skill catalog, and the core tools' schemas: in both arms. */
  base: number;
  catalogAll: number;
  catalogOn: number;
  /** The loaded-skills section guard on. */
  bodies: number;
  toolsAll: number;
  toolsOn: number;
}

export interface RoutingAttribution {
  /** Guard-off and guard-on dollars of the main model for routing's part of the prompt. */
  off: number;
  on: number;
  /** Saved by the catalog lines of skills not advertised. */
  skillsSaved: number;
  /** Saved by the tool schemas not shipped. */
  toolsSaved: number;
  /** Paid for the loaded skills' bodies. */
  bodiesPaid: number;
  /** Paid for the prompt rewritten after each set change. */
  rewritesPaid: number;
  /** off − on: positive when routing saves (before the classifier). */
  net: number;
}

/**
 * Splits routing's effect by pricing intermediate arms without rewrites: the catalog reduced, then the
 * bodies added, then the tools reduced, then the set changes as they happened. The parts add up to net.
 */
export function attributeRouting(
  requests: ReadonlyArray<Omit<RoutingRequest, "offPrefix" | "onPrefix"> & { parts: PrefixParts }>,
  pricing: RoutingPricing,
): RoutingAttribution {
  const arm = (prefix: (p: PrefixParts) => number, changes: boolean) =>
    routingMoney(
      requests.map((r) => ({
        ...r,
        offPrefix: prefix(r.parts),
        onPrefix: prefix(r.parts),
        onChanged: changes && r.onChanged,
      })),
      pricing,
    ).on;
  const n0 = arm((p) => p.base + p.catalogAll + p.toolsAll, false);
  const n1 = arm((p) => p.base + p.catalogOn + p.toolsAll, false);
  const n2 = arm((p) => p.base + p.catalogOn + p.bodies + p.toolsAll, false);
  const n3 = arm((p) => p.base + p.catalogOn + p.bodies + p.toolsOn, false);
  const on = arm((p) => p.base + p.catalogOn + p.bodies + p.toolsOn, true);
  return {
    off: n0,
    on,
    skillsSaved: n0 - n1,
    bodiesPaid: n2 - n1,
    toolsSaved: n2 - n3,
    rewritesPaid: on - n3,
    net: n0 - on,
  };
}
