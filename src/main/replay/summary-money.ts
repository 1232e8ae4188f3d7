// The money lines of the replay's terminal summary: dollars off → on with the classifier's cost first,
// then how well the guard-off arm reproduces what the session recorded, then the cache tokens.
import type { ModelView, Split } from "../../core/replay/money.ts";
import type { ReplayReport, SessionMetrics } from "../../core/replay/replay-metrics.ts";
import { formatCount } from "../../core/shared/text.ts";

export const dollars = (x: number): string => {
  const a = Math.abs(x);
  const s = a === 0 ? "0" : a >= 1 ? a.toFixed(2) : a >= 0.01 ? a.toFixed(3) : a.toPrecision(2);
  return `${x < 0 ? "−" : ""}$${s}`;
};
const signed = (x: number) => `${x >= 0 ? "+" : "−"}${Math.abs(x * 100).toFixed(1)}%`;
const pct = (x: number) => `${(x * 100).toFixed(1)}%`;

/** "net saving $x (y% of off)" or, when the guard costs more than it saves, says so. */
export function netText(off: number, net: number): string {
  if (net >= 0) return `net saving ${dollars(net)}${off > 0 ? ` (${pct(net / off)})` : ""}`;
  return `net LOSS ${dollars(-net)}: the guard would have cost more than it saved`;
}

function splitText(a: Split, b: Split): string {
  return `read ${formatCount(a.cacheRead)} → ${formatCount(b.cacheRead)} · write ${formatCount(a.cacheWrite)} → ${formatCount(b.cacheWrite)} · uncached ${formatCount(a.input)} → ${formatCount(b.input)}`;
}

export function moneyLines(s: SessionMetrics): string[] {
  const m = s.money;
  if (!m) return [];
  const lines: string[] = [];
  const asJev = m.classifier.source.startsWith("what Jev");
  const classifier = `classifier ${dollars(m.classifier.dollars)}${asJev ? " (Jev's price for the same requests)" : ""}`;
  if (m.priced) {
    lines.push(
      `  dollars           ${dollars(m.off.dollars)} → ${dollars(m.on.dollars)} main model (guard off → on) + ${classifier} · ${netText(m.off.dollars, m.net)}`,
    );
  } else {
    const unpriced = m.models.filter((x) => x.priceSource === "none").map((x) => x.model);
    lines.push(
      `  dollars           not priced: ${unpriced.join(", ")} has no price in Pi's registry and the session recorded none; tokens only · ${classifier}`,
    );
  }
  if (m.recorded && m.error) {
    const r = m.recorded;
    const o = m.off;
    const e = m.error.dollars;
    const money =
      e !== undefined
        ? ` · ${dollars(o.dollars)} vs ${dollars(r.dollars)} (${signed(e)})`
        : " · the session recorded $0";
    lines.push(
      `  calibration       guard off vs recorded: read ${formatCount(o.cacheRead)} vs ${formatCount(r.cacheRead)} (${signed(m.error.cacheRead)}) · write ${formatCount(o.cacheWrite)} vs ${formatCount(r.cacheWrite)} (${signed(m.error.cacheWrite)}) · uncached ${formatCount(o.input)} vs ${formatCount(r.input)}${money}`,
    );
  } else {
    lines.push("  calibration       uncalibrated: the session recorded no usage (token counts are chars ÷ 4)");
  }
  lines.push(`  cache tokens      ${splitText(m.off, m.on)} (guard off → on)`);
  const models = m.models
    .filter((x) => x.requests > 0)
    .map((x) => `${x.model}: ${x.family}${x.familyNote ? ` (${x.familyNote})` : ""}, ${priceText(x)}`);
  if (models.length) lines.push(`  cache model       ${models.join(" · ")}`);
  if (m.priced && m.passes.length > 0) {
    const paid = m.passes.filter((p) => p.paidBackAt !== undefined);
    const after = paid.map((p) => (p.paidBackAt as number) - p.afterRequest).sort((a, b) => a - b);
    const median = after.length ? after[Math.floor((after.length - 1) / 2)] : undefined;
    lines.push(
      `  edits paid back   ${paid.length} of ${m.passes.length} editing passes${median !== undefined ? ` (median ${median} request${median === 1 ? "" : "s"} after the pass)` : ""}; ${m.passes.length - paid.length} never`,
    );
  }
  return lines;
}

/** Where a model's prices come from, in words. */
export function priceText(x: ModelView): string {
  if (x.priceSource === "registry") return "prices from Pi's registry";
  if (x.priceSource === "recorded") return "prices from the session's recorded costs";
  if (x.priceSource === "reference") return `list prices of ${x.priceRef} (the session's provider recorded $0)`;
  return "no prices";
}

/** The folder's dollars over the priced sessions. */
export function moneyTotalLine(report: ReplayReport): string | undefined {
  const priced = report.sessions.filter((s) => s.money?.priced);
  if (report.sessions.length < 2 || priced.length === 0) return undefined;
  let off = 0;
  let on = 0;
  let classifier = 0;
  for (const s of priced) {
    off += s.money?.off.dollars ?? 0;
    on += s.money?.on.dollars ?? 0;
    classifier += s.money?.classifier.dollars ?? 0;
  }
  return `all ${priced.length} priced sessions: ${dollars(off)} → ${dollars(on)} + classifier ${dollars(classifier)} · ${netText(off, off - on - classifier)}`;
}
