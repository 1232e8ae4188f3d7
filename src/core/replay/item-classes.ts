// What each class of item (large outputs, small ones, reads, old exchanges, images) contributed to a
// replay: how many were removed, the characters taken out weighted by the requests that followed (the
// share of the saving each class earned), and how many the needed-later proxy finds likely needed.
import type { Suspect } from "./proxy.ts";
import type { PassMetrics } from "./replay-metrics.ts";

export const ITEM_CLASSES = ["large", "small", "read", "exchange", "image"] as const;
export type ItemClass = (typeof ITEM_CLASSES)[number];

export interface ClassFigures {
  removed: number;
  /** Characters taken out × the requests after the pass that took them out. */
  weighted: number;
  likely: number;
}

/** A read's output is its own class whatever its size; other outputs go by their kind. */
export function classOf(result: { kind: string; label: string }): ItemClass | undefined {
  if ((result.kind === "large" || result.kind === "small") && /^read\b/.test(result.label)) return "read";
  return (ITEM_CLASSES as readonly string[]).includes(result.kind) ? (result.kind as ItemClass) : undefined;
}

export function itemClasses(
  passes: readonly Pick<PassMetrics, "n" | "status" | "afterRequest" | "invalidDrafts" | "results">[],
  suspects: readonly Pick<Suspect, "pass" | "entryId" | "tier">[],
  requests: number,
): Record<ItemClass, ClassFigures> {
  const out = Object.fromEntries(ITEM_CLASSES.map((c) => [c, { removed: 0, weighted: 0, likely: 0 }])) as Record<
    ItemClass,
    ClassFigures
  >;
  const classAt = new Map<string, ItemClass>();
  for (const pass of passes) {
    if (pass.status !== "done" || pass.invalidDrafts > 0) continue;
    for (const r of pass.results) {
      const c = classOf(r);
      if (r.outcome === "kept" || c === undefined) continue;
      out[c].removed++;
      out[c].weighted += Math.max(0, r.beforeChars - r.afterChars) * Math.max(0, requests - pass.afterRequest);
      classAt.set(`${pass.n}:${r.entryId}`, c);
    }
  }
  for (const s of suspects) {
    const c = s.tier === "likely-needed" ? classAt.get(`${s.pass}:${s.entryId}`) : undefined;
    if (c) out[c].likely++;
  }
  return out;
}
