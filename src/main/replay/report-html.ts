// The replay's HTML report: one self-contained file (inline CSS and SVG, no scripts, no network) with,
// per session, the headline numbers, the context-per-request chart (guard on vs off), the per-pass
// table with every decision, the suspected false removals, and an appendix of the session lines they
// point at, so every link works offline.

import { pathToFileURL } from "node:url";
import { ITEM_CLASSES, type ItemClass, itemClasses } from "../../core/replay/item-classes.ts";
import {
  likelyNeededCount,
  likelyNeededMeaning,
  otherTiers,
  TIER_MEANING,
  TIER_WORDS,
} from "../../core/replay/proxy-words.ts";
import type { PassMetrics, ReplayReport, SessionMetrics, SuspectView } from "../../core/replay/replay-metrics.ts";
import { tokensOf } from "../../core/replay/replay-metrics.ts";
import { escapeControls } from "../../core/shared/control-chars.ts";
import { formatCount } from "../../core/shared/text.ts";
import { niceStep } from "./report-axis.ts";
import { moneyFolder, moneySection } from "./report-money.ts";
import { routingSection } from "./report-routing.ts";

// Control characters too: a bidi override would reorder what the page shows.
const esc = (s: string) =>
  escapeControls(s)
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&#39;");

const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
const ms = (x: number) => (x >= 1000 ? `${(x / 1000).toFixed(2)} s` : `${Math.round(x)} ms`);
const usd = (x: number) => (x === 0 ? "$0" : x < 0.01 ? `$${x.toFixed(5)}` : `$${x.toFixed(3)}`);
const tok = (chars: number) => formatCount(tokensOf(chars));

function lineAnchor(session: number, line: number | undefined): string {
  return line === undefined ? "" : `s${session}-L${line}`;
}

function lineLink(session: number, line: number | undefined): string {
  if (line === undefined || line === 0) return "–";
  return `<a href="#${lineAnchor(session, line)}">line ${line}</a>`;
}

/** Context tokens per request, guard off and on, with a marker per pass that changed something. */
function contextChart(s: SessionMetrics, width = 1080, height = 320): string {
  const pad = { left: 64, right: 16, top: 16, bottom: 42 };
  const w = width - pad.left - pad.right;
  const h = height - pad.top - pad.bottom;
  const points = s.requests;
  if (points.length === 0) return `<p class="muted">No requests in this session.</p>`;
  const maxTokens = Math.max(1, ...points.map((p) => tokensOf(p.off)), ...points.map((p) => tokensOf(p.on)));
  const yStep = niceStep(maxTokens, 5);
  const yMax = Math.ceil(maxTokens / yStep) * yStep;
  const n = points.length;
  const x = (i: number) => pad.left + (n === 1 ? w / 2 : ((i - 1) / (n - 1)) * w);
  const y = (tokens: number) => pad.top + h - (tokens / yMax) * h;
  const path = (key: "off" | "on") =>
    points.map((p, i) => `${i === 0 ? "M" : "L"}${x(p.n).toFixed(1)},${y(tokensOf(p[key])).toFixed(1)}`).join("");
  const saved =
    points.map((p) => `${x(p.n).toFixed(1)},${y(tokensOf(p.off)).toFixed(1)}`).join(" ") +
    " " +
    [...points]
      .reverse()
      .map((p) => `${x(p.n).toFixed(1)},${y(tokensOf(p.on)).toFixed(1)}`)
      .join(" ");
  const parts: string[] = [];
  parts.push(
    `<svg class="chart" viewBox="0 0 ${width} ${height}" width="100%" role="img" aria-label="Context tokens per request, guard on and off">`,
  );
  for (let v = 0; v <= yMax; v += yStep) {
    parts.push(
      `<line class="grid" x1="${pad.left}" x2="${pad.left + w}" y1="${y(v).toFixed(1)}" y2="${y(v).toFixed(1)}"/>`,
      `<text class="tick" x="${pad.left - 8}" y="${(y(v) + 4).toFixed(1)}" text-anchor="end">${formatCount(v)}</text>`,
    );
  }
  const xStep = niceStep(n, 8);
  for (let v = xStep; v <= n; v += xStep) {
    parts.push(
      `<text class="tick" x="${x(v).toFixed(1)}" y="${pad.top + h + 16}" text-anchor="middle">${v}</text>`,
      `<line class="axis" x1="${x(v).toFixed(1)}" x2="${x(v).toFixed(1)}" y1="${pad.top + h}" y2="${pad.top + h + 4}"/>`,
    );
  }
  parts.push(
    `<line class="axis" x1="${pad.left}" x2="${pad.left + w}" y1="${pad.top + h}" y2="${pad.top + h}"/>`,
    `<text class="label" x="${pad.left + w / 2}" y="${height - 6}" text-anchor="middle">request (assistant message) →</text>`,
    `<text class="label" transform="translate(14 ${pad.top + h / 2}) rotate(-90)" text-anchor="middle">context tokens (chars ÷ 4)</text>`,
    `<polygon class="saved" points="${saved}"/>`,
  );
  for (const p of s.passes) {
    if (p.drafts === 0) continue;
    const at = Math.min(n, Math.max(1, p.afterRequest + 0.5));
    const px = x(at).toFixed(1);
    parts.push(
      `<line class="pass ${p.phase}" x1="${px}" x2="${px}" y1="${pad.top}" y2="${pad.top + h}"><title>pass ${p.n} (${p.phase}): −${tok(p.savedChars)} tokens</title></line>`,
    );
  }
  parts.push(
    `<path class="off" d="${path("off")}"/>`,
    `<path class="on" d="${path("on")}"/>`,
    `<g class="legend" transform="translate(${pad.left + 12} ${pad.top + 6})">`,
    `<rect width="300" height="62" rx="6"/>`,
    `<line class="off" x1="10" x2="34" y1="16" y2="16"/><text x="42" y="20">guard off (as recorded)</text>`,
    `<line class="on" x1="10" x2="34" y1="34" y2="34"/><text x="42" y="38">guard on (replayed)</text>`,
    `<line class="pass run-end" x1="22" x2="22" y1="44" y2="56"/><text x="42" y="54">pass with edits (run end; dotted: mid-run)</text>`,
    `</g></svg>`,
  );
  return parts.join("");
}

function card(label: string, value: string, note = ""): string {
  return `<div class="card"><div class="k">${esc(label)}</div><div class="v">${value}</div>${note ? `<div class="n">${note}</div>` : ""}</div>`;
}

function editsText(edits: Record<string, number>): string {
  const order = ["large", "small", "exchange", "image"];
  const parts = order.filter((k) => (edits[k] ?? 0) > 0).map((k) => `${edits[k]} ${k}`);
  for (const [k, v] of Object.entries(edits)) if (!order.includes(k) && v > 0) parts.push(`${v} ${k}`);
  return parts.length ? parts.join(" · ") : "none";
}

/** The classifier's dollars as the money section prices them (at Jev's price for the offline scorer). */
function classifierDollars(s: SessionMetrics): number {
  return s.money?.classifier.dollars ?? s.totals.costUsd;
}

function headline(s: SessionMetrics): string {
  const t = s.totals;
  return `<div class="cards">
${card("Billed context, guard off → on", `${tok(t.billedOff)} → ${tok(t.billedOn)}`, `tokens over ${t.requests} requests · <b>−${pct(t.savedShare)}</b>`)}
${card("Last request's context", `${tok(t.finalOff)} → ${tok(t.finalOn)}`, "tokens, off → on")}
${card("Items edited", `${Object.values(t.edits).reduce((a, b) => a + b, 0)}`, `${editsText(t.edits)} · in ${t.passesWithEdits} of ${t.passes} passes (${t.runEnds} run ends, ${t.checkpoints} checkpoints)`)}
${card("Classifier", `${t.classifierRequests} requests`, `p50 ${ms(t.latencyP50)} · max ${ms(t.latencyMax)} · ${usd(classifierDollars(s))}${t.cacheHits ? ` · ${t.cacheHits} cached` : ""}`)}
${card("Settle latency", `p50 ${ms(t.settleP50)}`, `max ${ms(t.settleMax)} · main-thread stall max ${ms(t.stallMax)}`)}
${card("Likely needed later", `${t.proxy.likelyNeeded.items} of ${t.proxy.removed}`, `${pct(t.proxy.likelyNeeded.rate)} of removed items · ${otherTiers(t.proxy)} · about ${Math.round(t.proxy.likelyNeeded.expected)} to recall`)}
</div>`;
}

function resultRows(session: number, p: PassMetrics): string {
  return p.results
    .map(
      (r) =>
        `<tr class="${r.outcome}"><td>${esc(r.kind)}</td><td class="nowrap">${lineLink(session, r.line)}</td><td class="label">${esc(r.label)}</td><td>${esc(r.outcome)}</td><td>${esc(r.reason)}</td><td class="num">${formatCount(r.beforeChars)} → ${formatCount(r.afterChars)}</td><td class="trace">${esc(r.trace)}</td></tr>`,
    )
    .join("");
}

function passTable(session: number, s: SessionMetrics): string {
  if (s.passes.length === 0) return `<p class="muted">No run ends on this branch.</p>`;
  const rows = s.passes.map((p) => {
    const status =
      p.status === "done"
        ? p.drafts > 0
          ? `<span class="ok">${editsText(p.edits)}</span>`
          : "kept all"
        : `<span class="${p.status === "failed" ? "bad" : "muted"}">${esc(p.status)}: ${esc(p.reason ?? "")}</span>`;
    const details =
      p.results.length > 0
        ? `<tr class="details"><td></td><td colspan="11"><details><summary>${p.results.length} item(s) judged</summary><table class="inner"><thead><tr><th>kind</th><th>line</th><th>item</th><th>outcome</th><th>reason</th><th>chars</th><th>classifier trace</th></tr></thead><tbody>${resultRows(session, p)}</tbody></table></details></td></tr>`
        : "";
    return `<tr><td class="num">${p.n}</td><td class="nowrap">${p.phase === "run-end" ? "run end" : "mid-run"}</td><td class="nowrap">${lineLink(session, p.line)}</td><td class="prompt" title="${esc(p.prompt)}">${esc(p.prompt)}</td><td>${status}</td><td class="num">${p.savedChars ? `−${tok(p.savedChars)}` : "0"}</td><td class="num">${p.classifierRequests}</td><td class="num">${p.latencies.length ? ms(Math.max(...p.latencies)) : "–"}</td><td class="num">${usd(p.costUsd)}</td><td class="num">${ms(p.settleMs)}</td><td class="num">${ms(p.stallMs)}</td><td class="num">${p.removed ? `${p.suspected}/${p.removed}` : "–"}</td></tr>${details}`;
  });
  return `<table class="passes"><thead><tr><th>#</th><th>phase</th><th>at</th><th>run prompt</th><th>result</th><th>saved tokens</th><th>requests</th><th>slowest</th><th>cost</th><th>settle</th><th>stall</th><th>likely needed</th></tr></thead><tbody>${rows.join("")}</tbody></table>`;
}

/** Most removed outputs listed in the suspects table; the JSON output has all of them. */
const MAX_SUSPECT_ROWS = 60;

interface SuspectGroup {
  pass: number;
  kind: string;
  entryId: string;
  line?: number;
  label: string;
  items: SuspectView[];
}

/** Suspects grouped by the removed output (several chunks of one output make one row). */
function groupSuspects(suspects: readonly SuspectView[]): SuspectGroup[] {
  const groups = new Map<string, SuspectGroup>();
  for (const x of suspects) {
    const key = `${x.pass}:${x.entryId}`;
    let g = groups.get(key);
    if (!g) {
      g = { pass: x.pass, kind: x.kind, entryId: x.entryId, line: x.line, label: x.label, items: [] };
      groups.set(key, g);
    }
    g.items.push(x);
  }
  return [...groups.values()];
}

function suspectTable(session: number, s: SessionMetrics): string {
  if (s.suspects.length === 0) {
    return `<p class="muted">None: nothing removed came back in the later conversation.</p>`;
  }
  const order = (x: SuspectView) => ["likely-needed", "re-ran", "seen-again"].indexOf(x.tier);
  const groups = groupSuspects([...s.suspects].sort((a, b) => order(a) - order(b)));
  const rows = groups.slice(0, MAX_SUSPECT_ROWS).map((g) => {
    const tiers = new Set(g.items.map((x) => x.tier));
    const tokens = [...new Set(g.items.flatMap((x) => x.tokens))].slice(0, 8);
    const first = g.items.reduce((a, b) => (b.at < a.at ? b : a));
    const what = g.kind === "chunk" ? "removed chunks" : g.kind;
    const why = [...tiers].map((t) => `<span title="${esc(TIER_MEANING[t])}">${TIER_WORDS[t]}</span>`).join(", ");
    const pairs = g.items
      .slice(0, 6)
      .map(
        (x) =>
          `<div class="pair"><pre>${esc(x.excerpt)}</pre><pre><b>${x.atLine ? `line ${x.atLine}` : "later"}:</b> ${esc(x.laterExcerpt)}</pre></div>`,
      )
      .join("");
    return `<tr><td class="num">${g.pass}</td><td>${esc(what)}</td><td class="nowrap">${lineLink(session, g.line)}</td><td class="label">${esc(g.label)}</td><td>${why}</td><td class="tokens">${tokens.map((t) => `<code>${esc(t)}</code>`).join(" ")}</td><td class="nowrap">${lineLink(session, first.atLine)}</td></tr><tr class="details"><td></td><td colspan="6"><details><summary>removed text and the later message</summary>${pairs}${g.items.length > 6 ? `<p class="muted small">and ${g.items.length - 6} more chunks</p>` : ""}</details></td></tr>`;
  });
  const more =
    groups.length > MAX_SUSPECT_ROWS
      ? `<p class="muted small">… and ${groups.length - MAX_SUSPECT_ROWS} more removed items (all of them are in the --json output).</p>`
      : "";
  return `<table class="suspects"><thead><tr><th>pass</th><th>removed</th><th>removed at</th><th>output or item</th><th>tier</th><th>evidence</th><th>evidence at</th></tr></thead><tbody>${rows.join("")}</tbody></table>${more}`;
}

function proxyNote(s: SessionMetrics): string {
  const p = s.totals.proxy;
  const tiers = (["likely-needed", "re-ran", "seen-again"] as const)
    .map((t) => `<li><b>${TIER_WORDS[t]}</b>: ${esc(TIER_MEANING[t])}.</li>`)
    .join("");
  return `<p><b>Likely needed: ${esc(likelyNeededCount(p))}.</b> ${esc(likelyNeededMeaning(p))}</p><ul class="muted small">${tiers}</ul><p class="muted small">Each removed item is judged by what the recorded session did next (it never had the guard): its distinctive tokens (paths, identifiers, dotted names, quoted strings, long numbers), leaving out what the model still saw and what the user typed.</p>`;
}

function appendix(session: number, s: SessionMetrics, lines: Map<number, string>): string {
  if (lines.size === 0) return "";
  const file = pathToFileURL(s.file).href;
  const items = [...lines.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(
      ([line, text]) =>
        `<div class="line" id="${lineAnchor(session, line)}"><a class="ln" href="${esc(file)}" title="${esc(s.file)}">${line}</a><pre>${esc(text)}</pre></div>`,
    );
  return `<details class="appendix" open><summary>Referenced lines of ${esc(s.name)} (${lines.size})</summary>${items.join("")}</details>`;
}

function problemsList(s: SessionMetrics): string {
  if (s.problems.length === 0) return "";
  return `<div class="problems"><b>Problems reading the file</b> (the rest was replayed):<ul>${s.problems.map((p) => `<li>${esc(p.message)}</li>`).join("")}</ul></div>`;
}

const CLASS_NAMES: Record<ItemClass, string> = {
  large: "large outputs",
  small: "small outputs",
  read: "reads",
  exchange: "old exchanges",
  image: "images",
};

/** What each class of item earned and how often the proxy finds its removals needed (docs/replay.md). */
function classTable(s: SessionMetrics): string {
  const classes = itemClasses(s.passes, s.suspects, s.requests.length);
  const total = ITEM_CLASSES.reduce((n, c) => n + classes[c].weighted, 0);
  const rows = ITEM_CLASSES.filter((c) => classes[c].removed > 0).map((c) => {
    const k = classes[c];
    const share = total > 0 ? `${Math.round((k.weighted / total) * 100)}%` : "–";
    return `<tr><td>${CLASS_NAMES[c]}</td><td>${k.removed}</td><td>${share}</td><td>${k.likely} (${Math.round((k.likely / k.removed) * 100)}%)</td></tr>`;
  });
  if (rows.length === 0) return "";
  return `<table class="classes"><thead><tr><th>class</th><th>removed</th><th>share of the saving (characters × later requests)</th><th>likely needed</th></tr></thead><tbody>${rows.join("")}</tbody></table>`;
}

function sessionSection(i: number, s: SessionMetrics, lines: Map<number, string>): string {
  return `<section id="session-${i}">
<h2>${esc(s.name)}</h2>
<p class="meta">${esc(s.file)}${s.generated ? ` · <strong>generated</strong> by ${esc(s.generated)}, not a recorded session` : ""} · format v${s.version} · ${s.lines} lines · ${s.entries} entries on the branch · replayed in ${ms(s.ms)}</p>
${problemsList(s)}
<h3>Dollars</h3>
${moneySection(s)}
${routingSection(s.routing)}
${headline(s)}
<h3>Context per request</h3>
${contextChart(s)}
<h3>Passes</h3>
${passTable(i, s)}
${classTable(s)}
<h3>Needed later?</h3>
${proxyNote(s)}
${suspectTable(i, s)}
${appendix(i, s, lines)}
</section>`;
}

const CSS = `
:root{--off:#d9534f;--on:#2a7ae2;--saved:#7cc47f;--ink:#1d2330;--muted:#6b7383;--line:#e3e6ec;--bg:#f7f8fa}
*{box-sizing:border-box}body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:var(--ink);background:var(--bg)}
main{max-width:1200px;margin:0 auto;padding:24px 28px 48px}
h1{font-size:24px;margin:0 0 4px}h2{font-size:19px;margin:28px 0 2px;padding-top:12px;border-top:1px solid var(--line)}h3{font-size:15px;margin:20px 0 8px}
.meta,.muted{color:var(--muted)}.small{font-size:12.5px}.lead{margin:0 0 8px}
.note{background:#fff8e1;border:1px solid #f0dc9a;border-radius:8px;padding:8px 12px;margin:10px 0}
.cards{display:grid;grid-template-columns:repeat(3,1fr);gap:10px;margin:12px 0}
.card{background:#fff;border:1px solid var(--line);border-radius:10px;padding:10px 14px}
.card .k{color:var(--muted);font-size:12px;text-transform:uppercase;letter-spacing:.04em}.card .v{font-size:21px;font-weight:650;margin:2px 0}.card .n{color:var(--muted);font-size:12.5px}
.chart{background:#fff;border:1px solid var(--line);border-radius:10px;display:block}
.chart .grid{stroke:#eef0f4}.chart .axis{stroke:#9aa1ad}.chart .tick{fill:var(--muted);font-size:11px}.chart .label{fill:var(--muted);font-size:12px}
.chart path{fill:none;stroke-width:2;stroke-linejoin:round}.chart .off{stroke:var(--off)}.chart .on{stroke:var(--on)}
.chart .saved{fill:var(--saved);opacity:.28;stroke:none}.chart .pass{stroke:#8a6fd1;stroke-width:1;opacity:.55;stroke-dasharray:4 3}.chart .pass.mid-run{stroke-dasharray:1 3}
.chart .legend rect{fill:#fff;stroke:var(--line);opacity:.92}.chart .legend text{font-size:12px;fill:var(--ink)}.chart .legend line{stroke-width:2.5}
table{border-collapse:collapse;width:100%;background:#fff;border:1px solid var(--line);border-radius:10px;overflow:hidden;font-size:13px}
th,td{padding:5px 8px;border-bottom:1px solid var(--line);text-align:left;vertical-align:top}th{background:#f1f3f7;font-weight:600;font-size:12px;white-space:nowrap}
td.nowrap{white-space:nowrap}td.num{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}td.prompt{max-width:300px;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
td.label{max-width:340px;overflow-wrap:anywhere}td.trace{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:11.5px;color:var(--muted);overflow-wrap:anywhere}
tr.details td{border-bottom:1px solid var(--line);padding-top:0}tr.details summary{color:var(--muted);font-size:12px;cursor:pointer}
table.inner{margin:6px 0;font-size:12px}table.inner tr.kept td{color:var(--muted)}
.ok{color:#1c7c3a}.bad{color:#b3261e}code{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px;background:#f1f3f7;border-radius:4px;padding:0 4px}
.pair{display:grid;grid-template-columns:1fr 1fr;gap:8px}pre{white-space:pre-wrap;overflow-wrap:anywhere;font:12px/1.4 ui-monospace,Menlo,Consolas,monospace;background:#f6f7f9;border:1px solid var(--line);border-radius:6px;padding:6px 8px;margin:4px 0;max-height:260px;overflow:auto}
.problems{background:#fdecea;border:1px solid #f3b8b2;border-radius:8px;padding:8px 12px;margin:10px 0}.problems ul{margin:4px 0 0;padding-left:20px}
.appendix{margin-top:14px}.appendix summary{cursor:pointer;color:var(--muted)}.line{display:grid;grid-template-columns:64px 1fr;gap:8px}.line .ln{text-align:right;padding-top:8px;font-family:ui-monospace,monospace;font-size:12px}
.line:target pre{background:#fff8e1;border-color:#f0dc9a}
a{color:#2557b3}
`;

export interface HtmlInput {
  report: ReplayReport;
  /** Text of referenced session lines, per session index (filled by the CLI from the files). */
  lines: Array<Map<number, string>>;
}

/** Lines a session's report links to. */
export function referencedLines(s: SessionMetrics): Set<number> {
  const out = new Set<number>();
  const add = (n: number | undefined) => {
    if (n !== undefined && n > 0) out.add(n);
  };
  for (const p of s.passes) {
    add(p.line);
    add(p.promptLine);
    for (const r of p.results) add(r.line);
  }
  for (const x of s.suspects) {
    add(x.line);
    add(x.atLine);
  }
  return out;
}

export function renderHtml({ report, lines }: HtmlInput): string {
  const sessions = report.sessions.map((s, i) => sessionSection(i, s, lines[i] ?? new Map())).join("\n");
  const failures =
    report.failures.length > 0
      ? `<div class="problems"><b>Not replayed</b><ul>${report.failures.map((f) => `<li>${esc(f.file)}: ${esc(f.error)}</li>`).join("")}</ul></div>`
      : "";
  const toc =
    report.sessions.length > 1
      ? `<p>${report.sessions.map((s, i) => `<a href="#session-${i}">${esc(s.name)}</a> (−${pct(s.totals.savedShare)})`).join(" · ")}</p>`
      : "";
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>context-guard replay · ${esc(report.sessions.map((s) => s.name).join(", ") || "no sessions")}</title>
<style>${CSS}</style></head>
<body><main>
<h1>context-guard replay</h1>
<p class="lead meta">What the guard would have done to ${report.sessions.length === 1 ? "this session" : `${report.sessions.length} sessions`}, replayed offline through the extension's own pipeline · classifier <b>${esc(report.model)}</b> · ${esc(report.generatedAt)}</p>
<div class="note">${esc(report.modelNote)}</div>
${toc}
${moneyFolder(report)}
${failures}
${sessions}
</main></body></html>
`;
}
