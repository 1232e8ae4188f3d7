// The telemetry lines of one routing turn: a `route` line for skills and a `surface` line for tool
// namespaces, with the scores, the decision and what the model no longer sees.
import type { ScoreLine, TelemetryInput } from "../records/telemetry-stats.ts";
import { catalogChars, type Decision } from "./routing.ts";
import type { BatchResult, RouterState, TurnFacts, TurnView } from "./routing-state.ts";

export interface TurnOutcome {
  applied?: BatchResult;
  decision?: Decision;
  forced: string[];
  skillsOn: boolean;
  nsOn: boolean;
  groups: Map<string, string[]>;
}

const rounded = (m: Map<string, number | undefined> | undefined): Record<string, number | null> => {
  const o: Record<string, number | null> = {};
  for (const [k, v] of m ?? []) o[k] = v === undefined ? null : Math.round(v * 1000) / 1000;
  return o;
};
const roundLines = (l: ScoreLine[]) => l.map((x) => ({ name: x.name, score: Math.round(x.score * 1000) / 1000 }));

export function turnRecords(state: RouterState, input: TurnFacts, out: TurnView, t: TurnOutcome): TelemetryInput[] {
  const records: TelemetryInput[] = [];
  const a = t.applied;
  const turn = input.userTurn;
  const entry = input.entryId ? { entryId: input.entryId } : {};
  if (t.skillsOn) {
    const shown = new Set((out.catalog ?? input.skills).map((s) => s.name));
    let catalogHidden = 0;
    if (out.catalog) {
      for (const s of input.skills)
        if (!s.disableModelInvocation && !shown.has(s.name)) catalogHidden += catalogChars(s);
    }
    records.push({
      type: "route",
      turn,
      mode: state.skillsRouted ? "routed" : "static",
      source: input.source ?? "none",
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
      ms: input.ms ?? 0,
      timedOut: input.deadlinePassed === true || (input.source === "fresh" && a?.timedOut === true),
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
    records.push({
      type: "surface",
      turn,
      mode: state.toolsRouted ? "routed" : "static",
      source: input.source ?? "none",
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
  return records;
}
