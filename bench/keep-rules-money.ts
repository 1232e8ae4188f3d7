/**
 * What the keep rules (src/core/items/keep-rules.ts) cost in dollars saved on the real sessions: the
 * replay (local/lexical, default settings, the prompt cache modelled, as bench/handover-money.ts) with
 * no rule, each rule alone and all of them. "Saved" is the guard's net saving after the recalls the
 * needed-later proxy predicts: main model off − on − classifier − recalls.
 *
 *   node bench/keep-rules-money.ts [--shared] [--variants none,all,editing,...] [--only NAME-PART]
 */
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { KEEP_RULES, type KeepRule } from "../src/core/items/keep-rules.ts";
import { DEFAULT_CONFIG, type GuardConfig } from "../src/core/shared/config.ts";
import { localClassify } from "../src/main/pass/classifier.ts";
import { createTaskRunner } from "../src/main/platform/pool.ts";
import { LOCAL_NOTE, replayFiles } from "../src/main/replay/command.ts";
import { replaySessionPaths } from "./lib/replay-sessions.ts";

const { values } = parseArgs({
  options: {
    shared: { type: "boolean", default: false },
    only: { type: "string" },
    variants: { type: "string", default: ["none", ...KEEP_RULES, "tuned", "all"].join(",") },
  },
});
const REPO = resolve(import.meta.dirname, "..");
const paths = replaySessionPaths(values.shared ? resolve(REPO, "../shared/sessions") : undefined);

function rulesOf(variant: string): KeepRule[] {
  if (variant === "none") return [];
  if (variant === "all") return [...KEEP_RULES];
  // The rules that lowered the harmful rate on the tuning half.
  if (variant === "tuned") return ["editing", "instructions", "shared-names"];
  return variant.split("+").map((r) => {
    if (!(KEEP_RULES as readonly string[]).includes(r)) throw new Error(`unknown rule ${r}`);
    return r as KeepRule;
  });
}

const chosen = values.only ? paths.filter((p) => p.includes(values.only as string)) : paths;
const runner = await createTaskRunner({ backend: "piscina", minThreads: 1, maxThreads: 1 });
const variants = (values.variants as string).split(",");
interface Row {
  off: number;
  saved: number;
  recalls: number;
  removed: number;
  likely: number;
}
const totals = new Map<string, Row>();
for (const path of chosen) {
  const name = path.split("/").at(-1) as string;
  const cells: string[] = [];
  for (const variant of variants) {
    const config: GuardConfig = {
      ...DEFAULT_CONFIG,
      excludeTools: [...DEFAULT_CONFIG.excludeTools],
      keepRules: rulesOf(variant),
    };
    const classifier = { ref: "local/lexical", note: LOCAL_NOTE, classify: localClassify() };
    const { report } = await replayFiles([path], { classifier, config, runner });
    const s = report.sessions[0];
    const off = s?.dollars?.off ?? 0;
    const recalls = s?.harm?.dollars ?? 0;
    const saved = off - (s?.dollars?.on ?? 0) - (s?.dollars?.classifier ?? 0) - recalls;
    const removed = s?.totals.proxy.removed ?? 0;
    const likely = s?.totals.proxy.likelyNeeded.items ?? 0;
    const t = totals.get(variant) ?? { off: 0, saved: 0, recalls: 0, removed: 0, likely: 0 };
    totals.set(variant, {
      off: t.off + off,
      saved: t.saved + saved,
      recalls: t.recalls + recalls,
      removed: t.removed + removed,
      likely: t.likely + likely,
    });
    cells.push(`$${saved.toFixed(2)} (${likely}/${removed})`);
  }
  console.error(`| ${name} | ${cells.join(" | ")} |`);
}
const base = totals.get(variants[0] as string)?.saved ?? 0;
console.log(
  `Replay, local/lexical, default settings but keepRules, ${new Date().toISOString()}, ${chosen.length} sessions.`,
);
console.log("");
console.log("| Rules | Guard off | Saved after recalls | Of the first row | Recalls | Likely needed / removed |");
console.log("|---|---:|---:|---:|---:|---:|");
for (const v of variants) {
  const t = totals.get(v) as Row;
  const share = base !== 0 ? `${((t.saved / base) * 100).toFixed(1)}%` : "–";
  console.log(
    `| ${v} | $${t.off.toFixed(2)} | $${t.saved.toFixed(2)} | ${share} | $${t.recalls.toFixed(2)} | ${t.likely} / ${t.removed} |`,
  );
}
await runner.destroy();
process.exit(0);
