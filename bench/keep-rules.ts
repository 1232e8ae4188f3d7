/**
 * The keep rules (src/core/items/keep-rules.ts) on the hand-labelled removals: for each half of the fixed
 * split, the rate of needed items among what is still removed, before and with each rule alone and all
 * together, with 95% Wilson intervals, and what the rules keep. Each removal is judged at its own run end,
 * from its session file (as the proxy's gate does), so the labels hold whatever the classifier removes.
 *
 *   node bench/keep-rules.ts [--half tune|report|both] [--shared-names N] [--list]
 */

import { parseArgs } from "node:util";
import { collectRun } from "../src/core/distill/run.ts";
import { DEFAULT_KEEP_RULE_SETTINGS, KEEP_RULES, type KeepRule, ruleKeeps } from "../src/core/items/keep-rules.ts";
import { wilson } from "../src/core/replay/proxy-quality.ts";
import type { SnapEntry } from "../src/core/shared/types.ts";
import { readSessionFile } from "../src/main/replay/reader.ts";
import { type LabelledRemoval, readLabelledSet, sessionPath } from "../test/kit/labelled-removals.ts";
import { indexOfLine, snapshot } from "./lib/labelled-branch.ts";

const { values } = parseArgs({
  options: {
    half: { type: "string", default: "both" },
    "shared-names": { type: "string" },
    "no-named-next": { type: "boolean", default: false },
    "edit-after-read": { type: "boolean", default: false },
    "editing-at-run-end": { type: "string" },
    set: { type: "string", multiple: true },
    list: { type: "boolean", default: false },
  },
});
// --set key=value for any setting (true/false, numbers, words).
const extra = Object.fromEntries(
  (values.set ?? []).map((kv) => {
    const [k, v = ""] = kv.split("=");
    return [k, v === "true" ? true : v === "false" ? false : Number.isNaN(Number(v)) ? v : Number(v)];
  }),
);
const settings = {
  ...DEFAULT_KEEP_RULE_SETTINGS,
  ...extra,
  ...(values["shared-names"] ? { sharedNames: Number(values["shared-names"]) } : {}),
  ...(values["no-named-next"] ? { namedNext: false } : {}),
  ...(values["edit-after-read"] ? { editAfterRead: true } : {}),
  ...(values["editing-at-run-end"] ? { editingAtRunEnd: values["editing-at-run-end"] as "always" | "continues" } : {}),
};

/** The rule that keeps a removal at its run end, per set of rules tried: undefined when none does. */
type Kept = Map<string, KeepRule | undefined>;
const VARIANTS: Array<{ name: string; rules: KeepRule[] }> = [
  ...KEEP_RULES.map((r) => ({ name: r, rules: [r] })),
  { name: "chosen on tune", rules: ["editing", "instructions", "shared-names"] },
  { name: "all", rules: [...KEEP_RULES] },
];

const set = readLabelledSet();
const kept = new Map<LabelledRemoval, Kept>();
for (const name of new Set(set.removals.map((r) => r.session))) {
  const file = await readSessionFile(sessionPath(name));
  const snaps = snapshot(file.branch);
  for (const r of set.removals.filter((x) => x.session === name)) {
    const end = indexOfLine(file, r.afterLine) + 1;
    const entries = snaps.slice(0, end);
    const span = collectRun(entries, 0);
    const at = indexOfLine(file, r.line);
    const item =
      r.kind === "exchange"
        ? {
            entryId: (entries[at] as SnapEntry).id,
            entryIds: (r.omittedLines ?? []).map((l) => (entries[indexOfLine(file, l)] as SnapEntry).id),
          }
        : { entryId: (entries[at] as SnapEntry).id };
    const byVariant: Kept = new Map();
    for (const v of VARIANTS) {
      byVariant.set(
        v.name,
        span ? ruleKeeps(entries, span, [item], v.rules, "run-end", settings).get(item.entryId) : undefined,
      );
    }
    kept.set(r, byVariant);
  }
}

const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
const interval = (k: number, n: number) => {
  const { low, high } = wilson(k, n);
  return `${pct(n ? k / n : 0)} [${pct(low)}, ${pct(high)}]`;
};
const halves = values.half === "both" ? ["tune", "report"] : [values.half as string];
for (const half of halves) {
  const rs = set.removals.filter((r) => r.half === half);
  const needed = rs.filter((r) => r.label === "needed").length;
  console.log(`\n${half} half: ${rs.length} removals, ${needed} needed; ${JSON.stringify(settings)}`);
  console.log("| Rules | Kept (needed / not) | Still removed | Needed among them (95% Wilson) |");
  console.log("|---|---:|---:|---:|");
  console.log(`| none | 0 | ${rs.length} | ${interval(needed, rs.length)} |`);
  for (const v of VARIANTS) {
    const keptBy = rs.filter((r) => kept.get(r)?.get(v.name) !== undefined);
    const keptNeeded = keptBy.filter((r) => r.label === "needed").length;
    const left = rs.length - keptBy.length;
    console.log(
      `| ${v.name} | ${keptBy.length} (${keptNeeded} / ${keptBy.length - keptNeeded}) | ${left} | ${interval(needed - keptNeeded, left)} |`,
    );
  }
  if (values.list) {
    for (const r of rs) {
      const rule = kept.get(r)?.get("all");
      if (rule || r.label === "needed")
        console.log(
          `  ${r.label === "needed" ? "N" : "-"} ${rule ?? "removed"}  ${r.session.slice(0, 24)}:${r.line} ${r.what.slice(0, 90)}`,
        );
    }
  }
}
