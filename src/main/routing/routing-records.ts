// The telemetry lines of one routing boundary: a `route` line for skills and a `surface` line for tool
// namespaces, with the scores, the decision and what the model no longer sees.

import type { ScoreLine } from "../../core/records/telemetry-stats.ts";
import { catalogChars, type decide } from "../../core/routing/routing.ts";
import type { Telemetry } from "../platform/telemetry.ts";
import type { BatchResult } from "./routing-batch.ts";
import type { BoundaryInput, BoundaryOutput } from "./routing-shapes.ts";

/** The router's state after the boundary, as the lines report it. */
export interface RoutedState {
  skillsRouted: boolean;
  toolsRouted: boolean;
  pinned: ReadonlySet<string>;
  loaded: ReadonlyMap<string, unknown>;
  surfaced: ReadonlyMap<string, unknown>;
  hidden: ReadonlySet<string>;
}

export interface BoundaryFacts {
  ms: number;
  deadlinePassed: boolean;
  source: "fresh" | "late" | "none";
  applied?: BatchResult;
  decision?: ReturnType<typeof decide>;
  forced: string[];
  skillsOn: boolean;
  nsOn: boolean;
  groups: Map<string, string[]>;
  turn: number;
}

const rounded = (m: Map<string, number | undefined> | undefined): Record<string, number | null> => {
  const o: Record<string, number | null> = {};
  for (const [k, v] of m ?? []) o[k] = v === undefined ? null : Math.round(v * 1000) / 1000;
  return o;
};
const roundLines = (l: ScoreLine[]) => l.map((x) => ({ name: x.name, score: Math.round(x.score * 1000) / 1000 }));

export function recordBoundary(
  telemetry: Telemetry,
  state: RoutedState,
  input: BoundaryInput,
  out: BoundaryOutput,
  t: BoundaryFacts,
): void {
  const a = t.applied;
  const entry = input.entryId ? { entryId: input.entryId } : {};
  if (t.skillsOn) {
    const shown = new Set((out.catalog ?? input.skills).map((s) => s.name));
    let catalogHidden = 0;
    if (out.catalog) {
      for (const s of input.skills)
        if (!s.disableModelInvocation && !shown.has(s.name)) catalogHidden += catalogChars(s);
    }
    telemetry.record({
      type: "route",
      turn: t.turn,
      mode: state.skillsRouted ? "routed" : "static",
      source: t.source,
      scores: rounded(a?.skillScores),
      decay: rounded(a?.decayScores),
      loaded: roundLines(t.decision?.load ?? []),
      evicted: roundLines(t.decision?.evict ?? []),
      crowded: t.decision?.crowded ?? [],
      pinned: [...state.pinned].sort(),
      active: [...state.loaded.keys()].sort(),
      catalogCharsHidden: catalogHidden,
      bodyChars: out.section?.length ?? 0,
      promptChars: a?.promptChars ?? 0,
      digestChars: a?.digestChars ?? 0,
      requests: a?.requests ?? 0,
      inputTokens: a?.inputTokens ?? 0,
      costUsd: Math.round((a?.costUsd ?? 0) * 1e9) / 1e9,
      ms: t.ms,
      timedOut: t.deadlinePassed || (t.source === "fresh" && a?.timedOut === true),
      changed: out.changed,
      ...entry,
    });
  }
  if (t.nsOn) {
    const active = out.activeTools ?? input.active;
    const activeSet = new Set(active);
    let schemaHidden = 0;
    for (const tool of input.tools) {
      if (!state.hidden.has(tool.name) || activeSet.has(tool.name)) continue;
      schemaHidden += (tool.description?.length ?? 0) + (JSON.stringify(tool.parameters ?? {})?.length ?? 0);
    }
    const hiddenNs = [...t.groups.entries()]
      .filter(([, tools]) => tools.length > 0 && tools.some((n) => state.hidden.has(n)))
      .map(([name]) => name);
    telemetry.record({
      type: "surface",
      turn: t.turn,
      mode: state.toolsRouted ? "routed" : "static",
      source: t.source,
      scores: { ...rounded(a?.nsScores), ...rounded(a?.nsDecayScores) },
      surfaced: [...state.surfaced.keys()].sort(),
      forced: t.forced,
      hiddenNamespaces: hiddenNs.sort(),
      toolsActive: active.length,
      toolsHidden: state.hidden.size,
      schemaCharsHidden: schemaHidden,
      changed: out.activeTools !== undefined,
      ...entry,
    });
  }
}
