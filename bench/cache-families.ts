/**
 * Guard on against guard off, in dollars, per cache family, on real sessions: each session is copied to a
 * temporary folder and replayed with the embedded classifier (local/lexical), and its main models' learned
 * cache behaviour (src/core/cache/cache-behaviour.ts) names its family. Prints two markdown tables (per
 * session, then per family) and checks that no session costs more than guard-off + 1% with the guard on
 * (the classifier's cost included). Sessions that billed $0 (plans, local models, a price of 0) are
 * compared in billed prompt tokens instead.
 *
 *   node bench/cache-families.ts [folder]      # default: test/fixtures/sessions
 */
import { copyFileSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { LOCAL_MODEL_REF } from "../src/core/classifier/lexical.ts";
import type { SessionMoney } from "../src/core/replay/money.ts";
import { DEFAULT_CONFIG } from "../src/core/shared/config.ts";
import { localClassify } from "../src/main/pass/classifier.ts";
import { createTaskRunner } from "../src/main/platform/pool.ts";
import { LOCAL_NOTE, replayFiles } from "../src/main/replay/command.ts";

const TOLERANCE = 0.01;
const folder = process.argv[2] ?? join(import.meta.dirname, "..", "test", "fixtures", "sessions");
const tmp = mkdtempSync(join(tmpdir(), "cg-families-"));
const files = readdirSync(folder)
  .filter((f) => f.endsWith(".jsonl"))
  .sort()
  .map((f) => {
    copyFileSync(join(folder, f), join(tmp, f));
    return join(tmp, f);
  });

const usd = (x: number) => (x >= 1 ? `$${x.toFixed(2)}` : `$${x.toFixed(3)}`);
const pct = (x: number) => `${x >= 0 ? "+" : "−"}${Math.abs(x * 100).toFixed(1)}%`;
const mtok = (x: number) => `${(x / 1e6).toFixed(2)}M`;
const billed = (s: { input: number; cacheRead: number; cacheWrite: number }) => s.input + s.cacheRead + s.cacheWrite;

interface Row {
  session: string;
  family: string;
  models: string;
  money: SessionMoney;
}

const runner = await createTaskRunner({ backend: "piscina", minThreads: 1, maxThreads: 1 });
const rows: Row[] = [];
try {
  const classifier = { ref: LOCAL_MODEL_REF, note: LOCAL_NOTE, classify: localClassify() };
  for (const file of files) {
    const { report } = await replayFiles([file], { classifier, config: DEFAULT_CONFIG, runner });
    const money = report.sessions[0]?.money;
    if (!money) continue;
    const main = money.models.filter((m) => m.requests > 0).sort((a, b) => b.requests - a.requests);
    rows.push({
      session: basename(file, ".jsonl"),
      family: [...new Set(main.map((m) => m.behaviour))].join("+"),
      models: main.map((m) => `${m.model} (${m.behaviour}, ${m.priceSource})`).join("; "),
      money,
    });
  }
} finally {
  await runner.destroy();
  rmSync(tmp, { recursive: true, force: true });
}

console.log(`Replayed ${rows.length} sessions from ${folder} on ${new Date().toISOString().slice(0, 10)}.\n`);
console.log(
  "| Session | Main models (behaviour, prices) | Recorded | Guard off | Error | Guard on + classifier | On vs off |",
);
console.log("|---|---|---|---|---|---|---|");
let worst = { session: "", ratio: Number.NEGATIVE_INFINITY };
for (const r of rows) {
  const m = r.money;
  const onTotal = m.on.dollars + m.classifier.dollars;
  if (m.priced) {
    const ratio = m.off.dollars > 0 ? onTotal / m.off.dollars - 1 : 0;
    if (ratio > worst.ratio) worst = { session: r.session, ratio };
    const err = m.error?.dollars;
    console.log(
      `| ${r.session} | ${r.models} | ${usd(m.recorded?.dollars ?? 0)} | ${usd(m.off.dollars)} | ${err === undefined ? "–" : pct(err)} | ${usd(onTotal)} | ${pct(ratio)} |`,
    );
  } else {
    const ratio = billed(m.off) > 0 ? billed(m.on) / billed(m.off) - 1 : 0;
    const err = m.recorded && billed(m.recorded) > 0 ? billed(m.off) / billed(m.recorded) - 1 : undefined;
    console.log(
      `| ${r.session} | ${r.models} | $0 billed: ${mtok(m.recorded ? billed(m.recorded) : 0)} tokens | ${mtok(billed(m.off))} tokens | ${err === undefined ? "–" : pct(err)} | ${mtok(billed(m.on))} tokens | ${pct(ratio)} |`,
    );
  }
}

console.log("\n| Family | Sessions | Guard off | Guard on + classifier | On vs off | Worst session |");
console.log("|---|---|---|---|---|---|");
const families = [...new Set(rows.map((r) => r.family))].sort();
for (const f of families) {
  const priced = rows.filter((r) => r.family === f && r.money.priced);
  const free = rows.filter((r) => r.family === f && !r.money.priced);
  if (priced.length) {
    const off = priced.reduce((a, r) => a + r.money.off.dollars, 0);
    const on = priced.reduce((a, r) => a + r.money.on.dollars + r.money.classifier.dollars, 0);
    const w = Math.max(
      ...priced.map((r) => (r.money.on.dollars + r.money.classifier.dollars) / r.money.off.dollars - 1),
    );
    console.log(`| ${f} | ${priced.length} priced | ${usd(off)} | ${usd(on)} | ${pct(on / off - 1)} | ${pct(w)} |`);
  }
  if (free.length) {
    const off = free.reduce((a, r) => a + billed(r.money.off), 0);
    const on = free.reduce((a, r) => a + billed(r.money.on), 0);
    const w = Math.max(...free.map((r) => billed(r.money.on) / billed(r.money.off) - 1));
    console.log(
      `| ${f} | ${free.length} at $0 (tokens) | ${mtok(off)} | ${mtok(on)} | ${pct(on / off - 1)} | ${pct(w)} |`,
    );
  }
}
const ok = worst.ratio <= TOLERANCE;
console.log(
  `\nGuard on ≤ guard off + ${TOLERANCE * 100}% on every priced session: ${ok ? "yes" : "NO"} (worst: ${worst.session}, ${pct(worst.ratio)})`,
);
process.exitCode = ok ? 0 : 1;
