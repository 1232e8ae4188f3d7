// Whether the main model's prompt cache is already cold at a boundary. A cold cache makes the next request
// re-send everything anyway, so an edit made now adds no rewrite: the break-even rules, which exist only
// to price that rewrite, have nothing to weigh.

import type { SnapEntry } from "../shared/types.ts";
import type { CacheModel } from "./break-even.ts";

const MINUTE = 60_000;

/**
 * How long an unused prefix surely stays readable, per family, in milliseconds. Anthropic documents
 * 5 minutes (1 hour with the long retention). OpenAI evicts after 5–10 idle minutes but may keep a prefix
 * up to an hour (24 hours with extended retention), so only the upper bound proves the cache is gone.
 * Other providers document nothing usable: never assumed cold from time alone.
 */
export function cacheTtlMs(family: CacheModel["family"], longRetention = false): number {
  if (family === "anthropic") return longRetention ? 60 * MINUTE : 5 * MINUTE;
  if (family === "openai-codex") return longRetention ? 24 * 60 * MINUTE : 60 * MINUTE;
  return Number.POSITIVE_INFINITY;
}

/** What the caller knows of the cache's age at the boundary. */
export interface CacheTiming {
  family: CacheModel["family"];
  /** Milliseconds since the last main-model request was sent, when known. */
  sinceRequestMs?: number;
  /** The session asks for the provider's long retention (Pi's `cacheRetention: "long"`). */
  longRetention?: boolean;
}

export interface ColdCache {
  cold: boolean;
  reason: string;
}

/** Entries that make the next request rewrite the whole cache: a compaction, a model change. */
function rewritesCache(e: SnapEntry): boolean {
  return e.type === "compaction" || e.type === "model_change";
}

/**
 * Cold when the gap since the last request passed the family's TTL, or when a compaction or a model
 * change came after the last assistant message (the next request is a full rewrite either way).
 */
export function coldCache(entries: readonly SnapEntry[], timing: CacheTiming): ColdCache {
  for (let i = entries.length - 1; i >= 0; i--) {
    const e = entries[i] as SnapEntry;
    if (e.visible && e.role === "assistant") break;
    if (rewritesCache(e)) return { cold: true, reason: `${e.type.replace("_", " ")} since the last request` };
  }
  const since = timing.sinceRequestMs;
  const ttl = cacheTtlMs(timing.family, timing.longRetention);
  if (since !== undefined && Number.isFinite(since) && since > ttl) {
    return { cold: true, reason: `${Math.round(since / 1000)} s since the last request > ${ttl / 1000} s TTL` };
  }
  return { cold: false, reason: "cache warm" };
}
