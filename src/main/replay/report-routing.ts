// The routing part of the HTML report: the attribution in dollars, what the agent used against what
// routing had loaded, and the set routing chose at each prompt.
import type { RoutingMoneyView, RoutingReplay } from "../../core/routing/routing-report.ts";

const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
const usd = (x: number) =>
  `${x < 0 ? "−" : ""}$${Math.abs(x) < 0.01 ? Math.abs(x).toFixed(5) : Math.abs(x).toFixed(3)}`;
const list = (xs: readonly string[]) => (xs.length ? esc(xs.join(", ")) : "–");

function moneyRows(label: string, m: RoutingMoneyView): string {
  return `<tr><td>${label}</td><td class="num">${usd(m.skillsSaved)}</td><td class="num">${usd(m.toolsSaved)}</td><td class="num">${m.pruning !== undefined ? usd(m.pruning) : "–"}</td><td class="num">${usd(m.bodiesPaid)}</td><td class="num">${usd(m.rewritesPaid)}</td><td class="num">${usd(m.classifier)}</td><td class="num"><b>${usd(m.netAfterClassifier)}</b></td></tr>`;
}

export function routingSection(r: RoutingReplay | undefined): string {
  if (!r) return "";
  const c = r.catalog;
  const head =
    "<tr><th></th><th>saved: skills not loaded</th><th>tool schemas not shipped</th><th>pruning</th><th>paid: loaded bodies</th><th>rewrites</th><th>classifier</th><th>routing net</th></tr>";
  const uses = r.uses.length
    ? `<ul>${r.uses.map((u) => `<li>${esc(u.skill)} at prompt ${u.turn} (${u.how}): ${u.inTime ? "loaded in time" : "<b>missed</b>"}</li>`).join("")}</ul>`
    : "<p>No skill of the catalog was used.</p>";
  const sets = r.sets
    .map(
      (s) =>
        `<tr><td class="num">${s.turn}</td><td>${list([...s.loaded, ...s.pinned.map((p) => `${p} (pinned)`)])}</td><td>${list(s.surfaced)}</td><td>${s.changed ? "changed" : ""}</td></tr>`,
    )
    .join("");
  return `<h3>Skill routing and tool surfacing</h3>
<div class="money"><p>${c.skills} skills${c.rejected ? ` (${c.rejected} skill files Pi refused)` : ""}, ${c.tools} tools in ${c.namespaces} namespaces (${esc(c.source)}) · ${r.prompts} prompts · ${r.changes} set changes · ${r.classifierRequests} classifier requests · cache family ${esc(r.money.family)}${r.money.priced ? "" : " (not priced)"}</p>
<table>${head}${moneyRows("routing", r.money)}${r.before ? moneyRows("before (evict at any prompt)", r.before.money) : ""}</table>
<p>${r.misses} skill use(s) routing had not loaded in time · loaded never used: ${list(r.loadedNeverUsed)} · ${r.hiddenCalls} call(s) to hidden tools · surfaced never called: ${list(r.surfacedNeverCalled)}</p>
${uses}
<details><summary>The set at each prompt</summary><table><tr><th>prompt</th><th>skills loaded</th><th>namespaces surfaced</th><th></th></tr>${sets}</table></details></div>`;
}
