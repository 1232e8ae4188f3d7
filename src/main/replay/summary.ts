// The replay's terminal output: a progress bar while long sessions replay (only on a terminal), and
// the summary printed at the end.
import { combineProxy, type ProxyRate } from "../../core/replay/proxy.ts";
import { likelyNeededCount, likelyNeededMeaning, otherTiers } from "../../core/replay/proxy-words.ts";
import { type ReplayReport, type SessionMetrics, tokensOf } from "../../core/replay/replay-metrics.ts";
import { routingLines } from "../../core/routing/routing-report.ts";
import { formatCount } from "../../core/shared/text.ts";
import { moneyLines, moneyTotalLine } from "./summary-money.ts";

const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
const ms = (x: number) => (x >= 1000 ? `${(x / 1000).toFixed(2)} s` : `${Math.round(x)} ms`);
const usd = (x: number) => (x === 0 ? "$0" : x < 0.01 ? `$${x.toFixed(5)}` : `$${x.toFixed(3)}`);
const tok = (chars: number) => formatCount(tokensOf(chars));

function edits(e: Record<string, number>): string {
  const parts = Object.entries(e)
    .filter(([, n]) => n > 0)
    .map(([k, n]) => `${n} ${k}`);
  return parts.length ? parts.join(" · ") : "none";
}

const MAX_PROBLEMS = 8;

export function sessionSummary(s: SessionMetrics): string[] {
  const t = s.totals;
  const lines = [
    `${s.file}  (v${s.version}, ${s.entries} entries, ${t.requests} requests, ${t.runEnds} run ends, ${t.checkpoints} checkpoints; ${ms(s.ms)})`,
    ...moneyLines(s),
    `  billed context    ${tok(t.billedOff)} → ${tok(t.billedOn)} tokens over all requests  (−${pct(t.savedShare)})`,
    `  last request      ${tok(t.finalOff)} → ${tok(t.finalOn)} tokens  (guard off → on)`,
    `  edits             ${edits(t.edits)}  (${t.passesWithEdits} of ${t.passes} passes edited; ${t.drafts} context_edit drafts${t.invalidDrafts ? `, ${t.invalidDrafts} invalid` : ""})`,
    `  classifier        ${t.classifierRequests} requests${t.cacheHits ? ` (${t.cacheHits} from cache)` : ""} · latency p50 ${ms(t.latencyP50)}, max ${ms(t.latencyMax)} · ${usd(t.costUsd)}`,
    `  settle            p50 ${ms(t.settleP50)}, max ${ms(t.settleMax)} · main-thread stall max ${ms(t.stallMax)}`,
    ...proxyLines(t.proxy),
    ...routingLines(s.routing),
  ];
  // A damaged file can have hundreds: the first few say what happened, the JSON and HTML list them all.
  for (const p of s.problems.slice(0, MAX_PROBLEMS)) lines.push(`  problem: ${p.message}`);
  if (s.problems.length > MAX_PROBLEMS) lines.push(`  … and ${s.problems.length - MAX_PROBLEMS} more problems`);
  return lines;
}

/** The needed-later proxy's count and tiers; what the count means is said once, under all sessions. */
function proxyLines(p: ProxyRate): string[] {
  return [`  needed later?     likely needed: ${likelyNeededCount(p)} · ${otherTiers(p)}`];
}

function wrap(text: string, width: number): string[] {
  const out: string[] = [];
  let line = "";
  for (const word of text.split(" ")) {
    if (line && line.length + 1 + word.length > width) {
      out.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) out.push(line);
  return out;
}

export function formatSummary(report: ReplayReport, out?: string): string {
  const lines = [`context-guard replay · classifier ${report.model}`, `  ${report.modelNote}`, ""];
  for (const s of report.sessions) lines.push(...sessionSummary(s), "");
  for (const f of report.failures) lines.push(`not replayed: ${f.file}: ${f.error}`);
  const proxy = combineProxy(report.sessions.map((s) => s.totals.proxy));
  if (report.sessions.length > 0) lines.push(...wrap(likelyNeededMeaning(proxy), 110), "");
  if (report.sessions.length > 1) {
    let off = 0;
    let on = 0;
    for (const s of report.sessions) {
      off += s.totals.billedOff;
      on += s.totals.billedOn;
    }
    lines.push(
      `all ${report.sessions.length} sessions: billed context ${tok(off)} → ${tok(on)} tokens (−${pct(off > 0 ? 1 - on / off : 0)}), ${proxy.likelyNeeded.items} of ${proxy.removed} removed items likely needed (${pct(proxy.likelyNeeded.rate)})`,
    );
  }
  const money = moneyTotalLine(report);
  if (money) lines.push(money);
  if (out) lines.push(`report: ${out}`);
  return lines.join("\n");
}

/** A one-line progress bar on a terminal stream; silent elsewhere. */
export class ProgressBar {
  #stream: NodeJS.WriteStream;
  #enabled: boolean;
  #last = 0;
  #shown = false;
  constructor(stream: NodeJS.WriteStream, enabled = stream.isTTY === true) {
    this.#stream = stream;
    this.#enabled = enabled;
  }
  update(label: string, done: number, total: number, extra = ""): void {
    if (!this.#enabled) return;
    const now = performance.now();
    if (done < total && now - this.#last < 80) return;
    this.#last = now;
    const width = 28;
    const frac = total > 0 ? Math.min(1, done / total) : 1;
    const full = Math.round(frac * width);
    const bar = `${"█".repeat(full)}${"░".repeat(width - full)}`;
    const cols = this.#stream.columns ?? 100;
    const text = `${bar} ${String(Math.round(frac * 100)).padStart(3)}% ${label} ${done}/${total}${extra ? ` · ${extra}` : ""}`;
    this.#stream.write(`\r${text.slice(0, cols - 1).padEnd(Math.min(cols - 1, text.length))}\u001b[K`);
    this.#shown = true;
  }
  clear(): void {
    if (this.#enabled && this.#shown) this.#stream.write("\r\u001b[K");
    this.#shown = false;
  }
}
