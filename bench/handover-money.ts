/**
 * What the run end's hand-over costs in dollars on the real sessions: the replay (local/lexical, default
 * settings, the prompt cache modelled) with the run end waiting for its pass (`settleBudgetMs` =
 * `timeoutMs`) and with the default hand-over at each latency per wave of classifier calls: a handed-over
 * pass's drafts land at the next boundary when the next prompt came before the pass would have ended
 * (core/replay/handover-timing.ts).
 *
 *   node bench/handover-money.ts                          # the test fixtures' three sessions
 *   node bench/handover-money.ts --shared                 # and every session in ../shared/sessions
 *   node bench/handover-money.ts --wave-ms 500,1200,2200  # one hand-over column per latency
 *   node bench/handover-money.ts --prompt-wait-ms 100     # what-if: the next prompt waits for the pass
 *   node bench/handover-money.ts --landing-checkpoint     # what-if: a turn_end that lands also checkpoints
 *
 * The total's change comes with a 95% interval from resampling the sessions (seeded), since a few
 * sessions carry it.
 */
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { DEFAULT_WAVE_MS } from "../src/core/replay/handover-timing.ts";
import { DEFAULT_CONFIG, type GuardConfig } from "../src/core/shared/config.ts";
import { localClassify } from "../src/main/pass/classifier.ts";
import { createTaskRunner } from "../src/main/platform/pool.ts";
import { LOCAL_NOTE, replayFiles } from "../src/main/replay/command.ts";
import { mulberry32 } from "../test/kit/prng.ts";
import { replaySessionPaths } from "./lib/replay-sessions.ts";

const { values } = parseArgs({
  options: {
    shared: { type: "boolean", default: false },
    "wave-ms": { type: "string", default: String(DEFAULT_WAVE_MS) },
    "prompt-wait-ms": { type: "string", default: "0" },
    "landing-checkpoint": { type: "boolean", default: false },
  },
});
const promptWaitMs = Number(values["prompt-wait-ms"]);
if (!Number.isInteger(promptWaitMs) || promptWaitMs < 0)
  throw new Error(`--prompt-wait-ms ${values["prompt-wait-ms"]}: an integer ≥ 0`);
const waves = values["wave-ms"].split(",").map(Number);
if (waves.some((w) => !Number.isInteger(w) || w < 0)) throw new Error(`--wave-ms ${values["wave-ms"]}: integers ≥ 0`);
const REPO = resolve(import.meta.dirname, "..");
const paths = replaySessionPaths(values.shared ? resolve(REPO, "../shared/sessions") : undefined);

const runner = await createTaskRunner({ backend: "piscina", minThreads: 1, maxThreads: 1 });
const classifier = { ref: "local/lexical", note: LOCAL_NOTE, classify: localClassify() };
const rows: string[] = [];
const total = { off: 0, wait: 0, hand: waves.map(() => 0) };
/** Each session's dollars waiting and with each hand-over column, for the interval. */
const perSession: Array<{ wait: number; hand: number[] }> = [];
const change = (hand: number, wait: number) => (wait > 0 ? `${(((hand - wait) / wait) * 100).toFixed(2)}%` : "–");
/** The session's dollars with the main model and the classifier, and with the guard off. */
async function dollars(path: string, settleBudgetMs: number, waveMs: number) {
  const config: GuardConfig = { ...DEFAULT_CONFIG, excludeTools: [...DEFAULT_CONFIG.excludeTools], settleBudgetMs };
  const landingCheckpoint = values["landing-checkpoint"];
  const { report } = await replayFiles([path], { classifier, config, runner, waveMs, promptWaitMs, landingCheckpoint });
  const s = report.sessions[0];
  const d = s?.dollars;
  const asked = s?.passes.filter((p) => p.phase === "run-end" && p.classifierRequests > 0) ?? [];
  const late = asked.filter((p) => p.landedLater).length;
  return { off: d?.off ?? 0, on: (d?.on ?? 0) + (d?.classifier ?? 0), late, asked: asked.length };
}
for (const path of paths) {
  // Waiting for the pass does not depend on its latency.
  const { off, on: wait } = await dollars(path, DEFAULT_CONFIG.timeoutMs, DEFAULT_WAVE_MS);
  const hand: number[] = [];
  const late: string[] = [];
  for (const waveMs of waves) {
    const d = await dollars(path, DEFAULT_CONFIG.settleBudgetMs, waveMs);
    hand.push(d.on);
    late.push(`${d.late}/${d.asked}`);
  }
  perSession.push({ wait, hand });
  total.off += off;
  total.wait += wait;
  hand.forEach((h, i) => {
    total.hand[i] = (total.hand[i] ?? 0) + h;
  });
  const name = path.split("/").at(-1) as string;
  rows.push(
    `| ${name} | $${off.toFixed(2)} | $${wait.toFixed(2)} | ${hand.map((h, i) => `$${h.toFixed(2)} (${change(h, wait)}, ${late[i]})`).join(" | ")} |`,
  );
  console.error(rows.at(-1));
}
/** The 95% interval of the total's change in a column, over 2,000 resamples of the sessions. */
function interval(column: number): string {
  const rng = mulberry32(31);
  const changes: number[] = [];
  for (let r = 0; r < 2000; r++) {
    let wait = 0;
    let hand = 0;
    for (let k = 0; k < perSession.length; k++) {
      const s = perSession[Math.floor(rng() * perSession.length)] as (typeof perSession)[number];
      wait += s.wait;
      hand += s.hand[column] ?? 0;
    }
    if (wait > 0) changes.push((hand - wait) / wait);
  }
  changes.sort((a, b) => a - b);
  const at = (q: number) => `${((changes[Math.floor(q * (changes.length - 1))] ?? 0) * 100).toFixed(2)}%`;
  return `${at(0.025)} to ${at(0.975)}`;
}
console.log(
  [
    `Replay, local/lexical, default settings (settleBudgetMs ${DEFAULT_CONFIG.settleBudgetMs}, timeoutMs ${DEFAULT_CONFIG.timeoutMs}, concurrency ${DEFAULT_CONFIG.concurrency}), the next prompt waiting ${promptWaitMs} ms for a handed-over pass, ${new Date().toISOString()}.`,
    "In each hand-over column: the dollars, their change against waiting, and the run ends that asked the classifier",
    "whose drafts landed only after the next prompt's first request, of all that asked.",
    "",
    `| Session | Guard off | Run end waits | ${waves.map((w) => `Hand-over, ${w} ms per wave`).join(" | ")} |`,
    `|---|---:|---:|${waves.map(() => "---:|").join("")}`,
    ...rows,
    `| **all** | $${total.off.toFixed(2)} | $${total.wait.toFixed(2)} | ${total.hand.map((h) => `$${h.toFixed(2)} (${change(h, total.wait)})`).join(" | ")} |`,
    `| 95% interval of the change (sessions resampled) | | | ${waves.map((_, i) => interval(i)).join(" | ")} |`,
  ].join("\n"),
);
await runner.destroy();
process.exit(0);
