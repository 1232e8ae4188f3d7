// What the replay says about skill routing and tool surfacing for one session: the sets routing chose at
// each prompt, what the agent really used, and the dollars. Pure shapes and the summary's lines.
import type { RoutingAttribution } from "./routing-money.ts";

export interface RoutingSetView {
  /** 1-based user prompt and its line in the session file. */
  turn: number;
  line: number;
  loaded: string[];
  pinned: string[];
  surfaced: string[];
  /** The guard-on prefix changed at this prompt. */
  changed: boolean;
  /** What the guard-on requests of this prompt carry: the advertised skills, the loaded skills' section
   * (characters inside its tags) and the catalog's tools that are declared. */
  catalog: string[];
  sectionChars: number;
  tools: string[];
}

export interface SkillUse {
  skill: string;
  turn: number;
  line: number;
  /** `/skill:name` prompt, or a read of the skill's SKILL.md. */
  how: "invoked" | "read";
  /** Routing had loaded (or pinned) it by then. */
  inTime: boolean;
}

export interface ToolUse {
  tool: string;
  namespace?: string;
  calls: number;
  /** Calls made while surfacing had the tool hidden: Pi's unknown-tool error, then a retry. */
  hiddenCalls: number;
}

export interface RoutingMoneyView extends RoutingAttribution {
  classifier: number;
  /** What pruning saved in the same session (the money view's off − on), for comparison. */
  pruning?: number;
  /** off − on − classifier. */
  netAfterClassifier: number;
  family: string;
  priced: boolean;
}

export interface RoutingReplay {
  /** `rejected`: skill files Pi's loader refused (left out of the catalog). */
  catalog: { skills: number; tools: number; namespaces: number; source: string; rejected?: number };
  prompts: number;
  sets: RoutingSetView[];
  /** Prompts at which the guard-on prefix changed (after the first). */
  changes: number;
  uses: SkillUse[];
  /** Skill uses routing had not loaded in time (each a wasted turn or a wrong path). */
  misses: number;
  /** Skills routing loaded that the agent never used. */
  loadedNeverUsed: string[];
  tools: ToolUse[];
  hiddenCalls: number;
  /** Namespaces surfaced at some prompt whose tools were never called. */
  surfacedNeverCalled: string[];
  classifierRequests: number;
  money: RoutingMoneyView;
  /** The same session under the policy before evictions waited for a cold cache, when replayed too. */
  before?: { changes: number; misses: number; hiddenCalls: number; money: RoutingMoneyView };
}

const usd = (x: number) => {
  const a = Math.abs(x);
  const s = a === 0 ? "$0" : a < 0.01 ? `$${a.toFixed(5)}` : `$${a.toFixed(3)}`;
  return x < 0 ? `−${s}` : s;
};

function moneyLine(label: string, m: RoutingMoneyView): string {
  return (
    `  ${label.padEnd(18)}net ${usd(m.netAfterClassifier)} · saved: skills not loaded ${usd(m.skillsSaved)}, ` +
    `tool schemas not shipped ${usd(m.toolsSaved)}${m.pruning !== undefined ? `, pruning ${usd(m.pruning)}` : ""} · ` +
    `paid: loaded bodies ${usd(m.bodiesPaid)}, rewrites ${usd(m.rewritesPaid)}, classifier ${usd(m.classifier)}`
  );
}

/** The summary's routing lines for one session. */
export function routingLines(r: RoutingReplay | undefined): string[] {
  if (!r) return [];
  const c = r.catalog;
  const lines = [
    `  routing           ${c.skills} skills${c.rejected ? ` (${c.rejected} skill files Pi refused)` : ""}, ${c.tools} tools in ${c.namespaces} namespaces (${c.source}) · ${r.prompts} prompts, ${r.changes} set changes, ${r.classifierRequests} classifier requests`,
    moneyLine("routing $", r.money),
  ];
  if (!r.money.priced) lines.push("                    (no prices for this session's model: dollars are not priced)");
  const used = r.uses.map(
    (u) => `${u.skill} at prompt ${u.turn} (${u.how}, ${u.inTime ? "loaded in time" : "MISSED"})`,
  );
  lines.push(
    `  skills used       ${used.length ? used.join("; ") : "none"} · ${r.misses} missed · loaded never used: ${r.loadedNeverUsed.length ? r.loadedNeverUsed.join(", ") : "none"}`,
  );
  const hidden = r.tools.filter((t) => t.hiddenCalls > 0).map((t) => `${t.tool} ×${t.hiddenCalls}`);
  lines.push(
    `  tools             ${r.tools.reduce((a, t) => a + t.calls, 0)} calls · ${r.hiddenCalls} to hidden namespaces${hidden.length ? ` (${hidden.join(", ")})` : ""} · surfaced never called: ${r.surfacedNeverCalled.length ? r.surfacedNeverCalled.join(", ") : "none"}`,
  );
  if (r.before) {
    lines.push(
      moneyLine("before $", r.before.money),
      `                    before evictions waited for a cold cache: ${r.before.changes} set changes (now ${r.changes}), ${r.before.misses} missed skills (now ${r.misses}), ${r.before.hiddenCalls} hidden calls (now ${r.hiddenCalls})`,
    );
  }
  return lines;
}
