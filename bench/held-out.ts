/**
 * The guard's value on the real sessions, half by half (bench/session-split.json): for each session the
 * replay's main-model dollars with the guard off and on, the classifier, the recalls the needed-later proxy
 * predicts, and the net saving after them, as a share of guard-off. Totals with a 95% interval from a
 * bootstrap over sessions. Variants are settings over the defaults, so a rule is compared on the same runs.
 * `--oracle` adds the ceiling: the defaults judged by a judge that knows the rest of the session
 * (core/replay/oracle.ts), with ours as a share of it, and a table per item class for both.
 *
 *   node bench/held-out.ts [--half report|tune|both] [--variant name='{"keepReads":false}'] [--oracle]
 *     [--json out.json]
 */
import { writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { type ClassFigures, ITEM_CLASSES, type ItemClass, itemClasses } from "../src/core/replay/item-classes.ts";
import { DEFAULT_CONFIG, type GuardConfig } from "../src/core/shared/config.ts";
import { localClassify } from "../src/main/pass/classifier.ts";
import { createTaskRunner } from "../src/main/platform/pool.ts";
import { LOCAL_NOTE, replayFiles } from "../src/main/replay/command.ts";
import { mulberry32 } from "../test/kit/prng.ts";
import { type Half, halfPaths } from "./lib/session-split.ts";

const { values } = parseArgs({
  options: {
    half: { type: "string", default: "report" },
    variant: { type: "string", multiple: true, default: [] },
    only: { type: "string" },
    oracle: { type: "boolean", default: false },
    json: { type: "string" },
  },
});
const halves: Half[] = values.half === "both" ? ["tune", "report"] : [values.half as Half];
const variants: [string, Partial<GuardConfig>][] = [["defaults", {}]];
for (const v of values.variant as string[]) {
  const eq = v.indexOf("=");
  variants.push([v.slice(0, eq), JSON.parse(v.slice(eq + 1)) as Partial<GuardConfig>]);
}
const ORACLE = "oracle";
// Knowing the requests to come, the oracle needs no margin over them.
if (values.oracle) variants.push([ORACLE, { breakEvenMargin: 1 }]);

export interface SessionRow {
  half: Half;
  session: string;
  variant: string;
  off: number;
  on: number;
  classifier: number;
  recalls: number;
  removed: number;
  likely: number;
  classes: Record<ItemClass, ClassFigures>;
}

const net = (r: SessionRow) => r.off - r.on - r.classifier;
const after = (r: SessionRow) => net(r) - r.recalls;
const pct = (part: number, whole: number) => (whole > 0 ? `${((part / whole) * 100).toFixed(1)}%` : "–");

/** 95% interval of sum(after)/sum(off) by resampling sessions (fixed seed). */
function interval(rows: SessionRow[], value: (r: SessionRow) => number): [number, number] {
  const rng = mulberry32(7);
  const shares: number[] = [];
  for (let b = 0; b < 2000; b++) {
    let v = 0;
    let off = 0;
    for (let i = 0; i < rows.length; i++) {
      const r = rows[Math.floor(rng() * rows.length)] as SessionRow;
      v += value(r);
      off += r.off;
    }
    if (off > 0) shares.push(v / off);
  }
  shares.sort((a, b) => a - b);
  return [shares[Math.floor(shares.length * 0.025)] ?? 0, shares[Math.floor(shares.length * 0.975)] ?? 0];
}

const runner = await createTaskRunner({ backend: "piscina", minThreads: 1, maxThreads: 1 });
const rows: SessionRow[] = [];
for (const half of halves) {
  const paths = halfPaths(half).filter((p) => values.only === undefined || p.includes(values.only));
  for (const path of paths) {
    const session = (path.split("/").at(-1) as string).replace(/\.jsonl$/, "");
    for (const [variant, overrides] of variants) {
      const config: GuardConfig = { ...DEFAULT_CONFIG, excludeTools: [...DEFAULT_CONFIG.excludeTools], ...overrides };
      const classifier = { ref: "local/lexical", note: LOCAL_NOTE, classify: localClassify() };
      const { report } = await replayFiles([path], { classifier, config, runner, oracle: variant === ORACLE });
      const s = report.sessions[0];
      const row: SessionRow = {
        half,
        session,
        variant,
        off: s?.dollars?.off ?? 0,
        on: s?.dollars?.on ?? 0,
        classifier: s?.dollars?.classifier ?? 0,
        recalls: s?.harm?.dollars ?? 0,
        removed: s?.totals.proxy.removed ?? 0,
        likely: s?.totals.proxy.likelyNeeded.items ?? 0,
        classes: itemClasses(s?.passes ?? [], s?.suspects ?? [], s?.requests.length ?? 0),
      };
      rows.push(row);
      process.stderr.write(
        `${half} ${variant} ${session}: off $${row.off.toFixed(2)}, after recalls ${pct(after(row), row.off)}\n`,
      );
    }
  }
}
await runner.destroy();

console.log(`Replay, local/lexical, ${new Date().toISOString()}.`);
for (const half of halves) {
  for (const [variant] of variants) {
    const of = rows.filter((r) => r.half === half && r.variant === variant);
    console.log(`\n### ${half === "report" ? "Held-out" : "Tuning"} half, ${variant}\n`);
    console.log("| Session | Guard off | Net | After recalls | Likely needed / removed |");
    console.log("|---|---:|---:|---:|---:|");
    for (const r of of.filter((x) => x.off > 0))
      console.log(
        `| ${r.session} | $${r.off.toFixed(2)} | ${pct(net(r), r.off)} | ${pct(after(r), r.off)} | ${r.likely} / ${r.removed} |`,
      );
    const priced = of.filter((r) => r.off > 0);
    const sum = (f: (r: SessionRow) => number) => priced.reduce((n, r) => n + f(r), 0);
    const [lo, hi] = interval(priced, after);
    const worst = priced.reduce((w, r) => Math.min(w, after(r) / r.off), Number.POSITIVE_INFINITY);
    console.log(
      `| **${priced.length} priced** | $${sum((r) => r.off).toFixed(2)} | ${pct(
        sum(net),
        sum((r) => r.off),
      )} | ${pct(
        sum(after),
        sum((r) => r.off),
      )} (95% ${(lo * 100).toFixed(1)}–${(hi * 100).toFixed(1)}%) | ${sum((r) => r.likely)} / ${sum((r) => r.removed)} |`,
    );
    console.log(
      priced.length > 0 ? `\nWorst session after recalls: ${(worst * 100).toFixed(1)}%.` : "\nNo priced session.",
    );
  }
}
/** Net dollars after recalls attributed to each class by its share of the weighted characters taken out. */
function classDollars(of: SessionRow[], c: ItemClass): number {
  let dollars = 0;
  for (const r of of) {
    const total = ITEM_CLASSES.reduce((n, k) => n + r.classes[k].weighted, 0);
    if (total > 0) dollars += (after(r) * r.classes[c].weighted) / total;
  }
  return dollars;
}

if (values.oracle) {
  for (const half of halves) {
    const ours = rows.filter((r) => r.half === half && r.variant === "defaults" && r.off > 0);
    const best = rows.filter((r) => r.half === half && r.variant === ORACLE && r.off > 0);
    const bySession = new Map(best.map((r) => [r.session, r]));
    console.log(`\n### ${half === "report" ? "Held-out" : "Tuning"} half: ours against the oracle\n`);
    console.log("| Session | Oracle after recalls | Ours after recalls | Ours / oracle |");
    console.log("|---|---:|---:|---:|");
    for (const r of ours) {
      const o = bySession.get(r.session);
      if (!o) continue;
      const share = after(o) > 0 ? `${((after(r) / after(o)) * 100).toFixed(0)}%` : "–";
      console.log(`| ${r.session} | ${pct(after(o), o.off)} | ${pct(after(r), r.off)} | ${share} |`);
    }
    const sum = (xs: SessionRow[], f: (r: SessionRow) => number) => xs.reduce((n, r) => n + f(r), 0);
    const [ol, oh] = interval(best, after);
    console.log(
      `| **all** | ${pct(
        sum(best, after),
        sum(best, (r) => r.off),
      )} (95% ${(ol * 100).toFixed(1)}–${(oh * 100).toFixed(1)}%) | ${pct(
        sum(ours, after),
        sum(ours, (r) => r.off),
      )} | ${sum(best, after) > 0 ? `${((sum(ours, after) / sum(best, after)) * 100).toFixed(0)}%` : "–"} |`,
    );
    console.log(
      "\n| Class | Oracle: removed | Oracle: $ (attributed) | Ours: removed | Ours: likely needed | Ours: $ (attributed) | Ours / oracle |",
    );
    console.log("|---|---:|---:|---:|---:|---:|---:|");
    for (const c of ITEM_CLASSES) {
      const n = (xs: SessionRow[], f: (k: ClassFigures) => number) => xs.reduce((t, r) => t + f(r.classes[c]), 0);
      const od = classDollars(best, c);
      const ud = classDollars(ours, c);
      const removed = n(ours, (k) => k.removed);
      const likely = n(ours, (k) => k.likely);
      console.log(
        `| ${c} | ${n(best, (k) => k.removed)} | $${od.toFixed(2)} | ${removed} | ${likely} (${removed > 0 ? ((likely / removed) * 100).toFixed(0) : 0}%) | $${ud.toFixed(2)} | ${od > 0 ? `${((ud / od) * 100).toFixed(0)}%` : "–"} |`,
      );
    }
  }
}
if (values.json) writeFileSync(values.json, `${JSON.stringify(rows, null, 2)}\n`);
process.exit(0);
