/**
 * Stubs with key facts on the hand-labelled removals (test/fixtures/labelled-removals.json): each removal
 * is rebuilt as the needed-later proxy's input (test/kit/labelled-removals.ts), once as it is and once with
 * the key facts its stub would list added to what the model still sees (a removed output's stub: 300
 * chars, a quarter of a short one; an omission line: 100 chars per run of removed chunks; an omitted
 * exchange: 300). A removal the proxy flags likely needed without the facts and not with them is one whose
 * used tokens are all in its stub: a recall saved. Prints both halves; quote the held-out one.
 *
 *   node bench/stub-facts-labelled.ts
 */
import type { SessionEntry } from "@earendil-works/pi-coding-agent";
import { findSuspects, type RemovedPiece, visibleTokens } from "../src/core/replay/proxy.ts";
import { wilson } from "../src/core/replay/proxy-quality.ts";
import { readContent } from "../src/main/pass/snapshot.ts";
import { compactionsOf, laterMessages } from "../src/main/replay/proxy-input.ts";
import { readSessionFile } from "../src/main/replay/reader.ts";
import { type LabelledRemoval, pieceFor, readLabelledSet, sessionPath } from "../test/kit/labelled-removals.ts";
import { stubFacts } from "./lib/stub-facts.ts";

const set = readLabelledSet();
type Row = { removal: LabelledRemoval; before: boolean; after: boolean; facts: number };
const rows: Row[] = [];
for (const name of new Set(set.removals.map((r) => r.session))) {
  const file = await readSessionFile(sessionPath(name));
  const removals = set.removals.filter((r) => r.session === name);
  const pieces = removals.map((r) => pieceFor(file, r));
  const withFacts = pieces.map((p, i) => {
    const r = removals[i] as LabelledRemoval;
    const entry = p.at === undefined ? undefined : (file.branch[p.at] as SessionEntry);
    const original =
      entry?.type === "message" ? readContent((entry.message as { content?: unknown }).content).text : undefined;
    const facts = stubFacts(p, r, original);
    return { piece: { ...p, visible: new Set([...p.visible, ...visibleTokens(facts)]) }, facts: facts.length };
  });
  const later = laterMessages(file.branch);
  const compactions = compactionsOf(file.branch);
  const flagged = (ps: RemovedPiece[]) =>
    new Set(
      findSuspects(ps, later, compactions)
        .filter((s) => s.tier === "likely-needed")
        .map((s) => s.key),
    );
  const before = flagged(pieces);
  const after = flagged(withFacts.map((w) => w.piece));
  removals.forEach((removal, i) => {
    const key = pieces[i]?.key as string;
    rows.push({ removal, before: before.has(key), after: after.has(key), facts: withFacts[i]?.facts ?? 0 });
  });
}

const pct = (x: number) => `${(x * 100).toFixed(0)}%`;
const interval = (hits: number, n: number) => {
  const w = wilson(hits, n);
  return `${hits}/${n} = ${pct(n > 0 ? hits / n : 0)} (95% CI ${pct(w.low)}–${pct(w.high)})`;
};
for (const half of ["tune", "report"] as const) {
  const rs = rows.filter((r) => r.removal.half === half);
  const needed = rs.filter((r) => r.removal.label === "needed");
  const flaggedNeeded = needed.filter((r) => r.before);
  const saved = flaggedNeeded.filter((r) => !r.after);
  const flagged = rs.filter((r) => r.before);
  const flaggedAfter = rs.filter((r) => r.after);
  console.log(`${half === "report" ? "held out" : "tuning half"}: ${rs.length} removals, ${needed.length} needed`);
  console.log(
    `  needed removals the proxy flags: ${flaggedNeeded.length} without the facts, ${needed.filter((r) => r.after).length} with them`,
  );
  console.log(
    `  of the flagged needed ones, covered by their stub (a recall saved): ${interval(saved.length, flaggedNeeded.length)}`,
  );
  console.log(`  of all needed ones, covered by their stub: ${interval(saved.length, needed.length)}`);
  console.log(`  all removals flagged likely needed: ${flagged.length} → ${flaggedAfter.length}`);
  console.log(
    `  needed and still flagged (rate among removals): ${interval(needed.filter((r) => r.after).length, rs.length)}`,
  );
  console.log(`  stubs with facts: ${rs.filter((r) => r.facts > 0).length} of ${rs.length}`);
  for (const r of saved)
    console.log(`    saved: ${r.removal.session}:${r.removal.line} ${r.removal.what.slice(0, 70)}`);
}
