// The money lines of the replay's terminal summary: dollars off → on with the classifier's cost first,
// then how well the guard-off arm reproduces what the session recorded, then the cache tokens.
import type { ModelView, SessionMoney, Split } from "../../core/replay/money.ts";
import type { ReplayReport, SessionMetrics } from "../../core/replay/replay-metrics.ts";
import { formatCount } from "../../core/shared/text.ts";

/**
 * Dollars no branch, session or folder of sessions costs: a larger figure (or NaN, or Infinity) comes from
 * broken usage, not a bill, and is not shown.
 */
export const MAX_SHOWN_DOLLARS = 1_000_000;

/** Whether a dollar figure is one to show. */
export const shownDollars = (x: number): boolean => Number.isFinite(x) && Math.abs(x) < MAX_SHOWN_DOLLARS;

/**
 * "$0.42", "$0.0031", "−$1.20"; never an exponent. A figure not to show is "–": callers that can leave the
 * figure out check shownDollars first, as for an unpriced model.
 */
export const dollars = (x: number): string => {
  if (!shownDollars(x)) return "–";
  const a = Math.abs(x);
  // Two significant digits below a cent; toPrecision would switch to an exponent under a millionth.
  const s =
    a === 0
      ? "0"
      : a >= 1
        ? a.toFixed(2)
        : a >= 0.01
          ? a.toFixed(3)
          : a >= 1e-6
            ? a.toPrecision(2)
            : a.toFixed(Math.min(20, 1 - Math.floor(Math.log10(a))));
  return `${x < 0 ? "−" : ""}$${s}`;
};

/** Whether a session's dollars are shown: priced, and every headline figure one to show. */
export const moneyShown = (m: SessionMoney): boolean =>
  m.priced && [m.off.dollars, m.on.dollars, m.classifier.dollars, m.net].every(shownDollars);

/** Why a session shows no dollars: its models are unpriced, or its figures are beyond any bill. */
export function noDollarsText(m: SessionMoney): string {
  if (!m.priced) return unpricedText(m);
  return "its dollar figures are beyond any bill (recorded usage out of bounds)";
}
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
  if (moneyShown(m)) {
    lines.push(
      `  dollars           ${dollars(m.off.dollars)} → ${dollars(m.on.dollars)} main model (guard off → on) + ${classifier} · ${netText(m.off.dollars, m.net)}`,
    );
  } else {
    lines.push(`  dollars           not priced: ${noDollarsText(m)}; tokens only · ${classifier}`);
  }
  const routing = routingDollarsText(s);
  if (routing) lines.push(`  routing dollars   ${routing}`);
  if (moneyShown(m) && m.unpriced.length > 0) lines.push(`  not in dollars    ${unpricedText(m)}; tokens only`);
  if (m.recorded && m.error) {
    const r = m.recorded;
    const o = m.fit?.off ?? m.off;
    const fit = fitText(m);
    if (fit) lines.push(`  calibrated on     ${fit}`);
    const e = m.error.dollars;
    const money =
      m.priced && !moneyShown(m)
        ? ""
        : e !== undefined
          ? ` · ${dollars(o.dollars)} vs ${dollars(r.dollars)} (${signed(e)})`
          : " · the session recorded $0";
    lines.push(
      `  calibration       guard off vs recorded: read ${formatCount(o.cacheRead)} vs ${formatCount(r.cacheRead)} (${signed(m.error.cacheRead)}) · write ${formatCount(o.cacheWrite)} vs ${formatCount(r.cacheWrite)} (${signed(m.error.cacheWrite)}) · uncached ${formatCount(o.input)} vs ${formatCount(r.input)}${money}`,
    );
  } else {
    lines.push("  calibration       uncalibrated: the session recorded no usage (token counts are chars ÷ 4)");
  }
  lines.push(`  cache tokens      ${splitText(m.off, m.on)} (guard off → on)`);
  const models = m.models.filter((x) => x.requests > 0).map(modelText);
  if (models.length) lines.push(`  cache model       ${models.join(" · ")}`);
  const misses = missesText(m);
  if (misses) lines.push(`  model misses      ${misses}`);
  for (const x of m.models) {
    const e = x.calibration?.error.dollars;
    if (!x.calibration || e === undefined || Math.abs(e) <= 0.1) continue;
    lines.push(`  parts             ${x.model}: ${partingsText(x, 3)}`);
  }
  if (moneyShown(m) && m.passes.length > 0) {
    const paid = m.passes.filter((p) => p.paidBackAt !== undefined);
    const after = paid.map((p) => (p.paidBackAt as number) - p.afterRequest).sort((a, b) => a - b);
    const median = after.length ? after[Math.floor((after.length - 1) / 2)] : undefined;
    lines.push(
      `  edits paid back   ${paid.length} of ${m.passes.length} editing passes${median !== undefined ? ` (median ${median} request${median === 1 ? "" : "s"} after the pass)` : ""}; ${m.passes.length - paid.length} never`,
    );
  }
  return lines;
}

/**
 * Which requests the guard-off arm was fitted on, when not all: a session recorded with the guard on is
 * fitted before its edits reached the prompt. Undefined when every billed request was used.
 */
export function fitText(m: SessionMoney): string | undefined {
  const f = m.fit;
  if (!f || f.requests === f.of) return undefined;
  const first =
    f.firstEdited !== undefined ? `; request ${f.firstEdited} was the first with a guard edit in its prompt` : "";
  return `${f.requests} of ${f.of} billed requests, those recorded without a guard edit in their prompt${first} (guard off is the session without its edits)`;
}

/** Models whose fitted cache model misses the recorded dollars by more than 10%: not to be trusted. */
export function missesText(m: SessionMoney): string | undefined {
  const missed = m.models.filter((x) => x.calibration?.misses);
  if (missed.length === 0) return undefined;
  const each = missed.map((x) => `${x.model} ${signed(x.calibration?.error.dollars ?? 0)}`).join(", ");
  return `${each} against the recorded dollars, after fitting: its dollars here are not to be trusted`;
}

/** Where a model's prices come from, in words (the terminal, the HTML and --json's priceSource agree). */
export function priceText(x: ModelView): string {
  if (x.priceSource === "registry") return "prices from Pi's registry";
  if (x.priceSource === "recorded") return "prices from the session's recorded costs";
  if (x.priceSource === "free") return "$0 billed (a plan or a price of 0): dollars not meaningful";
  return "no price in Pi's registry and none recorded";
}

/** One model's cache behaviour, prices and set-aside requests, in words. */
export function modelText(x: ModelView): string {
  const aside = x.aside.length ? `; ${x.aside.length} set aside (${asideText(x)})` : "";
  const h = x.calibration?.honour;
  const honour = h
    ? `; the provider honours ${pct(h.cacheWrite)} of the simulated cache writes and ${pct(h.cacheRead)} of the reads (the rest billed uncached)`
    : "";
  return `${x.model}: ${x.behaviour} cache (${x.behaviourWhy}), ${priceText(x)}${honour}${aside}`;
}

function asideText(x: ModelView): string {
  const by = new Map<string, number[]>();
  for (const a of x.aside) {
    const kind = a.reason.replace(/\(.*\)|[\d.e+-]+×/g, "").trim();
    by.set(kind, [...(by.get(kind) ?? []), a.n]);
  }
  return [...by]
    .map(
      ([k, ns]) => `${k}: request${ns.length > 1 ? "s" : ""} ${ns.slice(0, 5).join(", ")}${ns.length > 5 ? "…" : ""}`,
    )
    .join("; ");
}

/** The billed models without dollars, and why. */
export function unpricedText(m: SessionMoney): string {
  return m.models
    .filter((x) => x.requests > 0 && m.unpriced.includes(x.model))
    .map((x) => `${x.model} (${priceText(x)})`)
    .join(", ");
}

/** Where the guard-off simulation and the recording part, largest first. */
export function partingsText(x: ModelView, most: number): string {
  const c = x.calibration;
  if (!c) return "";
  const parts = c.partings.slice(0, most).map((p) => {
    const lost = p.lost ? `, the provider had lost ${formatCount(p.lost)} cached tokens` : "";
    const trimmed =
      Math.abs(p.simPrompt - p.recPrompt) > 0.1 * p.recPrompt
        ? `, prompt ${formatCount(p.simPrompt)} vs ${formatCount(p.recPrompt)} recorded (the host changed the context the file holds)`
        : "";
    const why = lost + trimmed;
    return `request ${p.n} read ${formatCount(p.simRead)} vs ${formatCount(p.recRead)} recorded, wrote ${formatCount(p.simWrite)} vs ${formatCount(p.recWrite)}${why}`;
  });
  const misses = c.partialMisses ? `${c.partialMisses} partial misses replayed in both arms; ` : "";
  return `${misses}${parts.join(" · ") || "no single request parts by more than 10%"}`;
}

const routingNetText = (off: number, net: number) =>
  net >= 0 ? netText(off, net) : `net LOSS ${dollars(-net)}: routing would have cost more than it saved`;

/** Routing's dollars beside pruning's, when the session was replayed with a catalog and priced. */
export function routingDollarsText(s: SessionMetrics): string | undefined {
  const r = s.dollars?.routing;
  if (!r || !s.money || !moneyShown(s.money) || ![r.off, r.on, r.classifier, r.net].every(shownDollars))
    return undefined;
  return `${dollars(r.off)} → ${dollars(r.on)} main model (skill routing and tool surfacing off → on, no pruning) + classifier ${dollars(r.classifier)} · ${routingNetText(r.off, r.net)}`;
}

/** The folder's dollars over the priced sessions. */
export function moneyTotalLine(report: ReplayReport): string | undefined {
  const priced = report.sessions.filter((s) => s.money && moneyShown(s.money));
  if (report.sessions.length < 2 || priced.length === 0) return undefined;
  let off = 0;
  let on = 0;
  let classifier = 0;
  for (const s of priced) {
    off += s.money?.off.dollars ?? 0;
    on += s.money?.on.dollars ?? 0;
    classifier += s.money?.classifier.dollars ?? 0;
  }
  if (![off, on, classifier].every(shownDollars)) return undefined;
  const routed = priced.filter((s) => s.dollars?.routing);
  const routing = routed.reduce((a, s) => a + (s.dollars?.routing?.net ?? 0), 0);
  const routingText =
    routed.length > 0 && shownDollars(routing)
      ? ` · routing over ${routed.length} of them: ${routingNetText(
          routed.reduce((a, s) => a + (s.dollars?.routing?.off ?? 0), 0),
          routing,
        )}`
      : "";
  return `all ${priced.length} priced sessions: ${dollars(off)} → ${dollars(on)} + classifier ${dollars(classifier)} · ${netText(off, off - on - classifier)}${routingText}`;
}
