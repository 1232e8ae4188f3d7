// The money part of the HTML report: dollars off → on with the classifier's cost, the calibration
// against what the session recorded, a cumulative-dollars chart, and each editing pass's rewrite and
// payback. Self-contained like the rest of the report (inline SVG, no scripts).

import type { SessionMoney, Split } from "../../core/replay/money.ts";
import type { ReplayReport, SessionMetrics } from "../../core/replay/replay-metrics.ts";
import { escapeControls } from "../../core/shared/control-chars.ts";
import { formatCount } from "../../core/shared/text.ts";
import { roundTicks } from "./report-axis.ts";
import {
  dollars,
  fitText,
  missesText,
  modelText,
  moneyShown,
  moneyTotalLine,
  netText,
  noDollarsText,
  partingsText,
  routingDollarsText,
  unpricedText,
} from "./summary-money.ts";

const esc = (s: string) =>
  escapeControls(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
const signed = (x: number) => `${x >= 0 ? "+" : "−"}${Math.abs(x * 100).toFixed(1)}%`;

const MONEY_CSS = `
.money{background:#fff;border:1px solid var(--line);border-radius:10px;padding:10px 14px;margin:12px 0}
.money .big{font-size:21px;font-weight:650}.money .loss{color:#b3261e}.money .gain{color:#1c7c3a}
.money table{margin-top:8px}
`;

function row(label: string, off: Split, rec: Split | undefined, on: Split, error?: number): string {
  const cell = (s: Split | undefined, k: keyof Split) => (s ? formatCount(s[k]) : "–");
  const keys: Array<keyof Split> = ["cacheRead", "cacheWrite", "input", "output"];
  return `<tr><td>${label}</td>${keys.map((k) => `<td class="num">${cell(off, k)} / ${cell(rec, k)} / ${cell(on, k)}</td>`).join("")}<td class="num">${dollars(off.dollars)} / ${rec ? dollars(rec.dollars) : "–"} / ${dollars(on.dollars)}${error !== undefined ? ` (${signed(error)})` : ""}</td></tr>`;
}

/** Cumulative dollars per request, guard off and on (the classifier's cost included at its pass). */
function dollarsChart(m: SessionMoney, width = 1080, height = 240): string {
  const pts = m.cumulative;
  if (pts.length === 0 || !moneyShown(m)) return "";
  const pad = { left: 64, right: 16, top: 12, bottom: 34 };
  const w = width - pad.left - pad.right;
  const h = height - pad.top - pad.bottom;
  const ticksAt = roundTicks(Math.max(1e-9, ...pts.map((p) => Math.max(p.off, p.on))), 4);
  const max = ticksAt.at(-1) as number;
  const n = pts.length;
  const x = (i: number) => pad.left + (n === 1 ? w / 2 : (i / (n - 1)) * w);
  const y = (v: number) => pad.top + h - (v / max) * h;
  const path = (k: "off" | "on") =>
    pts.map((p, i) => `${i === 0 ? "M" : "L"}${x(i).toFixed(1)},${y(p[k]).toFixed(1)}`).join("");
  const ticks = ticksAt.map(
    (v) =>
      `<line class="grid" x1="${pad.left}" x2="${pad.left + w}" y1="${y(v).toFixed(1)}" y2="${y(v).toFixed(1)}"/><text class="tick" x="${pad.left - 8}" y="${(y(v) + 4).toFixed(1)}" text-anchor="end">${dollars(v)}</text>`,
  );
  return `<svg class="chart" viewBox="0 0 ${width} ${height}" width="100%" role="img" aria-label="Cumulative dollars, guard off and on">${ticks.join("")}<line class="axis" x1="${pad.left}" x2="${pad.left + w}" y1="${pad.top + h}" y2="${pad.top + h}"/><text class="label" x="${pad.left + w / 2}" y="${height - 8}" text-anchor="middle">request →</text><path class="off" d="${path("off")}"/><path class="on" d="${path("on")}"/><g class="legend" transform="translate(${pad.left + 12} ${pad.top + 6})"><rect width="330" height="44" rx="6"/><line class="off" x1="10" x2="34" y1="16" y2="16"/><text x="42" y="20">guard off: cumulative main-model dollars</text><line class="on" x1="10" x2="34" y1="32" y2="32"/><text x="42" y="36">guard on, classifier included</text></g></svg>`;
}

function passRows(m: SessionMoney): string {
  if (m.passes.length === 0) return "";
  const rows = m.passes.map(
    (p) =>
      `<tr><td class="num">${p.pass}</td><td class="num">${p.afterRequest}</td><td class="num">${dollars(p.rewrite)}</td><td class="num">${dollars(p.classifier)}</td><td>${p.paidBackAt === undefined ? '<span class="bad">never</span>' : `request ${p.paidBackAt} (+${p.paidBackAt - p.afterRequest})`}</td></tr>`,
  );
  return `<details><summary>Payback of each editing pass (${m.passes.filter((p) => p.paidBackAt !== undefined).length} of ${m.passes.length} paid back)</summary><table><thead><tr><th>pass</th><th>after request</th><th>next request, on − off</th><th>classifier</th><th>paid back at</th></tr></thead><tbody>${rows.join("")}</tbody></table><p class="muted small">"Next request, on − off" is the cache rewrite the edit caused, less what it saved on that request at once. A pass is paid back when the savings since it cover that and its classifier cost, before the next editing pass.</p></details>`;
}

/** Routing's dollars under pruning's, when the session was replayed with a catalog. */
function routingHead(s: SessionMetrics): string {
  const text = routingDollarsText(s);
  const net = s.dollars?.routing?.net ?? 0;
  return text ? `<div class="${net >= 0 ? "gain" : "loss"}">Routing: ${esc(text)}</div>` : "";
}

export function moneySection(s: SessionMetrics): string {
  const m = s.money;
  if (!m) return "";
  const shown = moneyShown(m);
  const head = shown
    ? `<div class="big">${dollars(m.off.dollars)} → ${dollars(m.on.dollars)} <span class="muted small">main model, guard off → on</span> + ${dollars(m.classifier.dollars)} <span class="muted small">classifier</span></div><div class="${m.net >= 0 ? "gain" : "loss"}"><b>${esc(netText(m.off.dollars, m.net))}</b></div>${routingHead(s)}`
    : `<div class="big">not priced</div><div class="muted">${esc(noDollarsText(m))}; the token split below still holds. Classifier ${dollars(m.classifier.dollars)}.</div>`;
  const unpriced = shown && m.unpriced.length ? ` Not in dollars: ${unpricedText(m)}.` : "";
  const models =
    m.models
      .filter((x) => x.requests > 0)
      .map(modelText)
      .join(" · ") + unpriced;
  const parts = m.models
    .filter((x) => Math.abs(x.calibration?.error.dollars ?? 0) > 0.1)
    .map((x) => `<li>${esc(x.model)}: ${esc(partingsText(x, 10))}</li>`)
    .join("");
  const fit = fitText(m);
  const misses = missesText(m);
  const calibration = m.recorded
    ? `Guard off is calibrated on the session's recorded usage: token counts match each request's recorded total, recorded cache misses are cold in both arms.${fit ? ` Calibrated on ${fit}; the recorded column and its error cover those requests.` : ""}${misses ? ` Model misses: ${misses}.` : ""}`
    : "Uncalibrated: the session recorded no usage, so token counts are characters ÷ 4 and the system prompt is not counted.";
  return `<style>${MONEY_CSS}</style><div class="money">${head}
<p class="muted small">Classifier: ${esc(m.classifier.source)}. ${esc(models)}. ${esc(calibration)}</p>
<table><thead><tr><th></th><th>cache read</th><th>cache write</th><th>uncached input</th><th>output</th><th>dollars</th></tr></thead><tbody>${row("off (simulated) / recorded / on", m.off, m.recorded, m.on, shown ? m.error?.dollars : undefined)}</tbody></table>
${parts ? `<details><summary>Where the simulation and the recording part</summary><ul>${parts}</ul></details>` : ""}
${shown ? passRows(m) : ""}</div>
${dollarsChart(m)}`;
}

/** The folder's dollars over its priced sessions, above the sessions. */
export function moneyFolder(report: ReplayReport): string {
  const line = moneyTotalLine(report);
  return line ? `<p class="lead"><b>Dollars:</b> ${esc(line)}</p>` : "";
}
