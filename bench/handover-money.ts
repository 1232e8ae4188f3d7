/**
 * What the run end's hand-over costs in dollars on the real sessions: the replay (local/lexical, default
 * settings, the prompt cache modelled) with the run end waiting for its pass (`settleBudgetMs` =
 * `timeoutMs`) and with the default hand-over, whose drafts land at the next boundary when the next prompt
 * came within `timeoutMs` of the run end (src/main/replay/driver.ts).
 *
 *   node bench/handover-money.ts                # the test fixtures' three sessions
 *   node bench/handover-money.ts --shared       # and every session in ../shared/sessions
 */
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { DEFAULT_CONFIG, type GuardConfig } from "../src/core/shared/config.ts";
import { localClassify } from "../src/main/pass/classifier.ts";
import { createTaskRunner } from "../src/main/platform/pool.ts";
import { LOCAL_NOTE, replayFiles } from "../src/main/replay/command.ts";
import { replaySessionPaths } from "./lib/replay-sessions.ts";

const { values } = parseArgs({ options: { shared: { type: "boolean", default: false } } });
const REPO = resolve(import.meta.dirname, "..");
const paths = replaySessionPaths(values.shared ? resolve(REPO, "../shared/sessions") : undefined);

const runner = await createTaskRunner({ backend: "piscina", minThreads: 1, maxThreads: 1 });
const rows: string[] = [];
let total = { wait: 0, hand: 0, off: 0 };
for (const path of paths) {
  const out: number[] = [];
  let off = 0;
  for (const settleBudgetMs of [DEFAULT_CONFIG.timeoutMs, DEFAULT_CONFIG.settleBudgetMs]) {
    const config: GuardConfig = { ...DEFAULT_CONFIG, excludeTools: [...DEFAULT_CONFIG.excludeTools], settleBudgetMs };
    const classifier = { ref: "local/lexical", note: LOCAL_NOTE, classify: localClassify() };
    const { report } = await replayFiles([path], { classifier, config, runner });
    const d = report.sessions[0]?.dollars;
    off = d?.off ?? 0;
    out.push((d?.on ?? 0) + (d?.classifier ?? 0));
  }
  const [wait = 0, hand = 0] = out;
  total = { wait: total.wait + wait, hand: total.hand + hand, off: total.off + off };
  const name = path.split("/").at(-1) as string;
  rows.push(
    `| ${name} | $${off.toFixed(2)} | $${wait.toFixed(2)} | $${hand.toFixed(2)} | ${wait > 0 ? `${(((hand - wait) / wait) * 100).toFixed(2)}%` : "–"} |`,
  );
  console.error(rows.at(-1));
}
console.log(
  [
    `Replay, local/lexical, default settings, ${new Date().toISOString()}.`,
    "",
    "| Session | Guard off | Run end waits | Hand-over (default) | Change |",
    "|---|---:|---:|---:|---:|",
    ...rows,
    `| **all** | $${total.off.toFixed(2)} | $${total.wait.toFixed(2)} | $${total.hand.toFixed(2)} | ${(((total.hand - total.wait) / total.wait) * 100).toFixed(2)}% |`,
  ].join("\n"),
);
await runner.destroy();
process.exit(0);
