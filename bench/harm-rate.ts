/**
 * How often the guard removes what the work needs (docs/replay.md): replays the real sessions (the three of
 * test/fixtures/sessions and those of ../shared/sessions; local/lexical, default settings) and collects every
 * item each pass removes.
 *
 * The census: when every one of those removals carries a hand label read for the same point and extent
 * (removalKey), the held-out half is a random half of them, and its rate is what the replay quotes
 * (REMOVAL_CENSUS). `--census FILE` writes the list the test checks.
 *
 * The weighted estimate, for comparison: the removals are split into two strata by the needed-later proxy
 * (flagged likely needed or not), each labelled removal is put in its stratum by the same proxy run the same
 * way (pieceFor: as if it alone were removed), and the rate is Σ (stratum's share of the removals) × (its
 * labelled rate), by items and by removed characters, for "needed" and "harmful" (needed and its stub did
 * not carry what was needed: `stubCovers`). The tuning half is printed beside the held-out one. *
 * With --set, the replay runs with those settings: the census lines then count the labels of what that
 * replay removes, and say how many of its removals have no label (removals the default replay does not make).
 *
 *   node bench/harm-rate.ts [--json] [--only <part of a file name>] [--save FILE | --load FILE] [--census FILE]
 *                           [--set key=JSON ...]
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { basename, resolve } from "node:path";
import { parseArgs } from "node:util";
import { findSuspects, type RemovedPiece } from "../src/core/replay/proxy.ts";
import { wilson } from "../src/core/replay/proxy-quality.ts";
import { DEFAULT_CONFIG, type GuardConfig, normalizeConfig } from "../src/core/shared/config.ts";
import { createTaskRunner } from "../src/main/platform/pool.ts";
import { loadPriceBook } from "../src/main/replay/prices.ts";
import { compactionsOf, laterMessages } from "../src/main/replay/proxy-input.ts";
import { readSessionFile, type SessionFile } from "../src/main/replay/reader.ts";
import {
  countLabels,
  type LabelledRemoval,
  pieceFor,
  readLabelledSet,
  removalKey,
  sessionPath,
} from "../test/kit/labelled-removals.ts";
import { mulberry32 } from "../test/kit/prng.ts";
import { replayRemovals } from "./lib/replay-removals.ts";
import { replaySessionPaths } from "./lib/replay-sessions.ts";
import { readSplit } from "./lib/session-split.ts";
import {
  type Interval,
  type Stratum,
  strataRates,
  stratifiedBootstrap,
  stratifiedWilson,
  type Weighting,
  weightedRate,
} from "./lib/weighted-rate.ts";

const { values } = parseArgs({
  options: {
    json: { type: "boolean", default: false },
    only: { type: "string" },
    save: { type: "string" },
    // Write the list of today's removals (test/fixtures/removal-census.json), which removal-rates.test.ts reads.
    census: { type: "string" },
    // A setting to measure instead of the defaults, as key=JSON (repeatable): e.g. --set midRun=false.
    set: { type: "string", multiple: true },
    load: { type: "string" },
  },
});

/** The --set settings, validated as a user's config is: a key or value the guard would not take stops here. */
const overrides: Partial<GuardConfig> = {};
if (values.set !== undefined) {
  const raw = Object.fromEntries(
    values.set.map((kv) => {
      const at = kv.indexOf("=");
      if (at < 1) throw new Error(`--set ${kv}: expected key=JSON`);
      return [kv.slice(0, at), JSON.parse(kv.slice(at + 1))];
    }),
  );
  const { config, warnings } = normalizeConfig(raw);
  if (warnings.length > 0) throw new Error(`--set: ${warnings.join("; ")}`);
  for (const key of Object.keys(raw) as Array<keyof GuardConfig>) Object.assign(overrides, { [key]: config[key] });
}

const REPO = resolve(import.meta.dirname, "..");
const shared = ["../shared/sessions", "/work/shared/sessions"].map((p) => resolve(REPO, p)).find(existsSync);
const paths = replaySessionPaths(shared);
if (values.only !== undefined) {
  const only = values.only;
  paths.splice(0, paths.length, ...paths.filter((p) => p.includes(only)));
}

/** Dollars of the replay, summed over the sessions: main model off and on, the classifier, predicted recalls. */
interface Dollars {
  off: number;
  on: number;
  classifier: number;
  recalls: number;
}

/** One removed item of today's replay. */
interface Removed extends Pick<LabelledRemoval, "session" | "line" | "afterLine" | "removed" | "omittedLines"> {
  kind: "output" | "exchange";
  chars: number;
  /** Flagged likely needed by the proxy run on the item alone (as the labelled ones are). */
  flagged: boolean;
  /** Flagged likely needed in the replay's own suspects (every removal of the replay in view). */
  replayFlagged: boolean;
  /** Removed by a checkpoint while its run was still going. */
  midRun: boolean;
}

/** The proxy's verdict and removed characters of each removal, rebuilt from its session file alone. */
function judge(file: SessionFile, removals: readonly LabelledRemoval[]): Array<{ flagged: boolean; chars: number }> {
  const pieces: RemovedPiece[] = removals.map((r, i) => ({ ...pieceFor(file, r), key: String(i) }));
  const flagged = new Set(
    findSuspects(pieces, laterMessages(file.branch), compactionsOf(file.branch))
      .filter((s) => s.tier === "likely-needed")
      .map((s) => s.key),
  );
  return pieces.map((p) => ({ flagged: flagged.has(p.key), chars: p.text.length }));
}

async function replayAll(): Promise<{ removed: Removed[]; duplicates: number; dollars: Dollars }> {
  const runner = await createTaskRunner({ backend: "piscina", minThreads: 1, maxThreads: 1 });
  const prices = await loadPriceBook();
  const config: GuardConfig = { ...DEFAULT_CONFIG, excludeTools: [...DEFAULT_CONFIG.excludeTools], ...overrides };
  const removed: Removed[] = [];
  const dollars: Dollars = { off: 0, on: 0, classifier: 0, recalls: 0 };
  let duplicates = 0;
  try {
    for (const path of paths) {
      const file = await readSessionFile(path);
      const { removals, metrics, passes } = await replayRemovals(file, { runner, config, prices, source: "replay" });
      const flaggedInReplay = new Set(
        metrics.suspects.filter((s) => s.tier === "likely-needed").map((s) => `${s.pass}:${s.line}`),
      );
      dollars.off += metrics.dollars?.off ?? 0;
      dollars.on += metrics.dollars?.on ?? 0;
      dollars.classifier += metrics.dollars?.classifier ?? 0;
      dollars.recalls += metrics.harm?.dollars ?? 0;
      const verdicts = judge(file, removals);
      const midRunPasses = new Set(metrics.passes.filter((p) => p.phase === "mid-run").map((p) => p.n));
      const seen = new Set<number>();
      removals.forEach((r, i) => {
        // An item removed by two passes (more chunks later, or its exchange omitted) counts once.
        if (seen.has(r.line)) {
          duplicates++;
          return;
        }
        seen.add(r.line);
        removed.push({
          session: r.session,
          line: r.line,
          afterLine: r.afterLine,
          removed: r.removed,
          ...(r.omittedLines ? { omittedLines: r.omittedLines } : {}),
          kind: r.kind ?? "output",
          chars: verdicts[i]?.chars ?? 0,
          flagged: verdicts[i]?.flagged ?? false,
          replayFlagged: flaggedInReplay.has(`${passes[i]}:${r.line}`),
          midRun: midRunPasses.has(passes[i] as number),
        });
      });
      const d = metrics.dollars;
      const saved = d ? d.off - d.on - d.classifier - (metrics.harm?.dollars ?? 0) : 0;
      process.stderr.write(
        `${basename(path)}: ${removals.length} removals by its passes, $${saved.toFixed(2)} saved after recalls\n`,
      );
    }
  } finally {
    await runner.destroy();
  }
  return { removed, duplicates, dollars };
}

const population: { removed: Removed[]; duplicates: number; dollars?: Dollars } =
  values.load !== undefined ? JSON.parse(readFileSync(values.load, "utf8")) : await replayAll();
if (values.save !== undefined) writeFileSync(values.save, `${JSON.stringify(population)}\n`);
if (values.census !== undefined) {
  if (values.set !== undefined || values.only !== undefined || values.load !== undefined)
    throw new Error(
      "--census records a fresh replay of every session with the defaults: drop --set, --only and --load",
    );
  const items = population.removed.map(({ session, line, kind, afterLine, removed, omittedLines }) => ({
    session,
    line,
    kind,
    afterLine,
    removed,
    ...(omittedLines ? { omittedLines } : {}),
  }));
  const date = new Date().toLocaleDateString("en-GB", { day: "numeric", month: "long", year: "numeric" });
  writeFileSync(values.census, `${JSON.stringify({ date, settings: "default, local/lexical", items }, null, 1)}\n`);
}
const { removed } = population;

// The labelled removals, each put in its stratum the same way.
const sessions = new Set(paths.map((p) => basename(p)));
const set = readLabelledSet();
// Only the sessions replayed: a missing shared folder or --only narrows both sides alike.
const labelled = set.removals.filter((r) => sessions.has(r.session));
interface Judged {
  removal: LabelledRemoval;
  flagged: boolean;
  chars: number;
  removedToday: boolean;
}
const judged: Judged[] = [];
// A label counts for one of today's removals only when it was read for the same point and extent.
const today = new Set(removed.map(removalKey));
for (const name of new Set(labelled.map((r) => r.session))) {
  const file = await readSessionFile(sessionPath(name));
  const rs = labelled.filter((r) => r.session === name);
  judge(file, rs).forEach((v, i) => {
    const removal = rs[i] as LabelledRemoval;
    judged.push({ removal, ...v, removedToday: today.has(removalKey(removal)) });
  });
}

type Measure = "needed" | "harmful";
/** Harmful: needed, and its stub (key facts) did not carry what the work used. */
function hit(r: LabelledRemoval, measure: Measure): boolean | undefined {
  if (r.label !== "needed") return false;
  if (measure === "needed") return true;
  return r.stubCovers === undefined ? undefined : !r.stubCovers;
}

const STRATA = [
  { name: "flagged", is: (x: { flagged: boolean }) => x.flagged },
  { name: "not flagged", is: (x: { flagged: boolean }) => !x.flagged },
];

function strata(
  rs: readonly Judged[],
  measure: Measure,
  population: readonly { flagged: boolean; chars: number }[] = removed,
): Stratum[] | undefined {
  if (rs.some((j) => hit(j.removal, measure) === undefined)) return undefined;
  return STRATA.map((s) => {
    const pop = population.filter(s.is);
    return {
      name: s.name,
      population: { items: pop.length, chars: pop.reduce((n, r) => n + r.chars, 0) },
      labelled: rs.filter(s.is).map((j) => ({ hit: hit(j.removal, measure) === true, chars: j.chars })),
    };
  });
}

interface Estimate {
  rate: number;
  wilson?: Interval;
  bootstrap: Interval;
  strata: ReturnType<typeof strataRates>;
}

function estimate(st: Stratum[], by: Weighting): Estimate {
  return {
    rate: weightedRate(st, by),
    ...(by === "items" ? { wilson: stratifiedWilson(st) } : {}),
    bootstrap: stratifiedBootstrap(st, by, mulberry32(29)),
    strata: strataRates(st, by),
  };
}

const halves = { report: "held out", tune: "tuning half (tuned on: not the figure)" } as const;
const results: Record<string, Record<Measure, Record<Weighting, Estimate> | undefined>> = {};
for (const half of ["report", "tune"] as const) {
  const rs = judged.filter((j) => j.removal.half === half);
  results[half] = { needed: undefined, harmful: undefined };
  for (const measure of ["needed", "harmful"] as const) {
    const st = strata(rs, measure);
    if (st === undefined || rs.length === 0) continue;
    if (st.some((s) => s.population.items > 0 && s.labelled.length === 0)) continue;
    (results[half] as Record<Measure, unknown>)[measure] = {
      items: estimate(st, "items"),
      chars: estimate(st, "chars"),
    };
  }
}

/** Needed rate per source within each stratum: are the wider draws (aggressive, hand-picked) alike? */
const bySource = STRATA.flatMap((s) =>
  [...new Set(judged.map((j) => j.removal.source))].sort().map((source) => {
    const rs = judged.filter((j) => s.is(j) && j.removal.source === source);
    return {
      stratum: s.name,
      source,
      labelled: rs.length,
      needed: rs.filter((j) => j.removal.label === "needed").length,
    };
  }),
);

/**
 * The held-out estimate (needed, by items) on the labelled removals today's replay still removes, on those
 * drawn from replays, and with the shares of the replay's own flags.
 */
function restricted(
  keep: (j: Judged) => boolean,
  population: readonly { flagged: boolean; chars: number }[] = removed,
): number | undefined {
  const st = strata(
    judged.filter((j) => j.removal.half === "report" && keep(j)),
    "needed",
    population,
  );
  return st === undefined || st.some((s) => s.population.items > 0 && s.labelled.length === 0)
    ? undefined
    : weightedRate(st, "items");
}
const sensitivity = {
  removedToday: restricted((j) => j.removedToday),
  fromReplays: restricted((j) => ["replay", "replay-drawn", "replay-census"].includes(j.removal.source)),
  replayFlags: restricted(
    () => true,
    removed.map((r) => ({ flagged: r.replayFlagged, chars: r.chars })),
  ),
};

/**
 * Today's removals with the label read for each (the same entry, run end and chunks), per half and per kind.
 * Once every item today's replay removes is labelled (the census batch, labelled-removals.md), each half is
 * a random half of them, so the held-out half's rate needs no weighting. `sameEntry` also takes a label
 * read for the same entry at another run end or of other chunks, where there is no exact one: an
 * approximation for settings that move removals.
 */
const byKey = new Map(labelled.map((r) => [removalKey(r), r]));
const byEntry = new Map<string, LabelledRemoval>();
for (const r of labelled) if (!byEntry.has(`${r.session}:${r.line}`)) byEntry.set(`${r.session}:${r.line}`, r);
function labelOf(r: Removed, sameEntry: boolean): LabelledRemoval | undefined {
  return byKey.get(removalKey(r)) ?? (sameEntry ? byEntry.get(`${r.session}:${r.line}`) : undefined);
}
function censusOf(half: "report" | "tune", options: { kind?: "output" | "exchange"; sameEntry?: boolean } = {}) {
  const counts = countLabels(
    removed
      .filter((r) => options.kind === undefined || r.kind === options.kind)
      .map((r) => labelOf(r, options.sameEntry === true))
      .filter((l): l is LabelledRemoval => l?.half === half),
  );
  return {
    ...counts,
    neededRate: wilson(counts.needed, counts.labelled),
    harmfulRate: wilson(counts.harmful, counts.labelled),
  };
}
/**
 * The same census by the session split (bench/session-split.json): every removal of a half's sessions, with
 * whichever label was read for it (its removal-level half aside), and how many still have none.
 */
const split = readSplit();
type SplitPart = "output" | "exchange" | "checkpoint";
function sessionCensus(half: "report" | "tune", part?: SplitPart) {
  const names = new Set(split[half]);
  const inPart = (r: Removed) => part === undefined || (part === "checkpoint" ? r.midRun : r.kind === part);
  const rs = removed.filter((r) => names.has(r.session) && inPart(r));
  const counts = countLabels(rs.map((r) => labelOf(r, false)).filter((l): l is LabelledRemoval => l !== undefined));
  return {
    ...counts,
    removed: rs.length,
    neededRate: wilson(counts.needed, counts.labelled),
    harmfulRate: wilson(counts.harmful, counts.labelled),
  };
}
const census = {
  labelled: removed.filter((r) => labelOf(r, false) !== undefined).length,
  sameEntry: removed.filter((r) => labelOf(r, true) !== undefined).length,
  report: censusOf("report"),
  tune: censusOf("tune"),
  reportOutputs: censusOf("report", { kind: "output" }),
  reportExchanges: censusOf("report", { kind: "exchange" }),
  reportSameEntry: censusOf("report", { sameEntry: true }),
  tuneSameEntry: censusOf("tune", { sameEntry: true }),
};

/** Within today's strata, the needed rate of labels the proxy of their draw flagged or not (both halves). */
const byDrawFlag = STRATA.flatMap((s) =>
  [true, false].map((then) => {
    const rs = judged.filter((j) => s.is(j) && j.removal.suspectToday === then);
    return {
      stratum: s.name,
      flaggedAtDraw: then,
      labelled: rs.length,
      needed: rs.filter((j) => j.removal.label === "needed").length,
    };
  }),
);

const agreement = {
  both: removed.filter((r) => r.flagged && r.replayFlagged).length,
  aloneOnly: removed.filter((r) => r.flagged && !r.replayFlagged).length,
  replayOnly: removed.filter((r) => !r.flagged && r.replayFlagged).length,
};
const design = {
  flaggedThen: judged.filter((j) => j.removal.suspectToday).length,
  agree: judged.filter((j) => j.removal.suspectToday === j.flagged).length,
};

if (values.json) {
  console.log(
    JSON.stringify(
      {
        date: new Date().toISOString(),
        sessions: sessions.size,
        removed: removed.length,
        duplicates: population.duplicates,
        agreement,
        design,
        results,
        bySource,
        byDrawFlag,
        sensitivity,
        census,
      },
      null,
      1,
    ),
  );
} else {
  const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
  const iv = (i: Interval | undefined) => (i ? `[${pct(i.low)}, ${pct(i.high)}]` : "");
  const chars = removed.reduce((n, r) => n + r.chars, 0);
  const flagged = removed.filter((r) => r.flagged);
  const setting = (values.set ?? []).join(", ") || "default settings";
  const when = values.load !== undefined ? `loaded from ${values.load}` : new Date().toISOString();
  console.log(`Replay of ${sessions.size} sessions, local/lexical, ${setting}, ${when}.`);
  const d = population.dollars;
  if (d !== undefined)
    console.log(
      `Dollars (prompt cache modelled): guard off $${d.off.toFixed(2)}, saved $${(d.off - d.on - d.classifier).toFixed(2)}, ` +
        `predicted recalls $${d.recalls.toFixed(2)}, saved after recalls $${(d.off - d.on - d.classifier - d.recalls).toFixed(2)}.`,
    );
  console.log(
    `Removed: ${removed.length} items (${(chars / 1000).toFixed(0)}k chars; ${population.duplicates} removed again by a later pass, counted once); ` +
      `flagged likely needed: ${flagged.length} items (${pct(flagged.length / Math.max(1, removed.length))}), ` +
      `${pct(flagged.reduce((n, r) => n + r.chars, 0) / Math.max(1, chars))} of the chars.`,
  );
  console.log(
    `Flag on the item alone vs in the replay: both ${agreement.both}, alone only ${agreement.aloneOnly}, replay only ${agreement.replayOnly}.`,
  );
  console.log(
    `Labelled: ${judged.length}; flagged by the proxy of their draw ${design.flaggedThen}, by today's ${judged.filter((j) => j.flagged).length}, same verdict ${design.agree}; ` +
      `still removed by today's replay ${judged.filter((j) => j.removedToday).length}.`,
  );
  for (const half of ["report", "tune"] as const) {
    const rs = judged.filter((j) => j.removal.half === half);
    const needed = rs.filter((j) => j.removal.label === "needed").length;
    console.log(
      `\n${halves[half]}: ${rs.length} labelled, ${needed} needed (unweighted ${pct(needed / Math.max(1, rs.length))} ${iv(wilson(needed, rs.length))})`,
    );
    for (const measure of ["needed", "harmful"] as const) {
      const r = results[half]?.[measure];
      if (r === undefined) {
        console.log(`  ${measure}: no estimate (a stratum without labels, or needed removals without stubCovers)`);
        continue;
      }
      console.log(
        `  ${measure}, by items: ${pct(r.items.rate)} stratified Wilson ${iv(r.items.wilson)}, bootstrap ${iv(r.items.bootstrap)}`,
      );
      console.log(`  ${measure}, by chars: ${pct(r.chars.rate)} bootstrap ${iv(r.chars.bootstrap)}`);
      for (const by of ["items", "chars"] as const)
        for (const s of r[by].strata)
          console.log(
            `    ${by} ${s.name}: share ${pct(s.share)}, labelled rate ${pct(s.rate)} (${s.hits} of ${s.labelled})`,
          );
    }
  }
  console.log("\nNeeded per source within each stratum (both halves):");
  for (const b of bySource.filter((x) => x.labelled > 0))
    console.log(
      `  ${b.stratum.padEnd(11)} ${b.source.padEnd(17)} ${b.needed}/${b.labelled} = ${pct(b.needed / b.labelled)} ${iv(wilson(b.needed, b.labelled))}`,
    );
  console.log("Needed within each stratum, by the flag of the proxy the label was drawn with (both halves):");
  for (const b of byDrawFlag.filter((x) => x.labelled > 0))
    console.log(
      `  ${b.stratum.padEnd(11)} ${b.flaggedAtDraw ? "flagged then" : "not then   "} ${b.needed}/${b.labelled} = ${pct(b.needed / b.labelled)} ${iv(wilson(b.needed, b.labelled))}`,
    );
  console.log(`\nCensus: ${census.labelled} of the ${removed.length} removed items carry a label.`);
  const line = (name: string, c: ReturnType<typeof censusOf>) =>
    console.log(
      `  ${name}: ${c.labelled} labelled, needed ${c.needed} = ${c.labelled ? pct(c.needed / c.labelled) : "–"} ${iv(c.neededRate)}, ` +
        `harmful ${c.harmful} = ${c.labelled ? pct(c.harmful / c.labelled) : "–"} ${iv(c.harmfulRate)}`,
    );
  line("held out", census.report);
  line("held out, outputs", census.reportOutputs);
  line("held out, exchanges", census.reportExchanges);
  line("tuning half", census.tune);
  console.log("  by the session split (bench/session-split.json), every label read for a removal:");
  for (const half of ["report", "tune"] as const)
    for (const part of [undefined, "output", "exchange", "checkpoint"] as const) {
      const c = sessionCensus(half, part);
      const what = part === "checkpoint" ? ", at mid-run checkpoints" : part ? `, ${part}s` : "";
      line(`  ${half === "report" ? "held-out" : "tuning"} sessions${what} (${c.removed} removed)`, c);
    }
  if (census.sameEntry > census.labelled) {
    console.log(
      `  with a label of the same entry at another point or extent, where no exact one: ${census.sameEntry} labelled`,
    );
    line("  held out", census.reportSameEntry);
    line("  tuning half", census.tuneSameEntry);
  }
  const c = census.report;
  const unlabelled = removed.length - census.labelled;
  if (values.set !== undefined || values.only !== undefined)
    console.log(`${unlabelled} of this setting's removals have no label (the default replay does not make them).`);
  else
    console.log(
      `To record in REMOVAL_CENSUS: sessions: ${sessions.size}, removed: ${removed.length}, labelled: ${c.labelled}, needed: ${c.needed}, harmful: ${c.harmful}` +
        (unlabelled > 0 ? ` (${unlabelled} removals have no label yet: label them first)` : ""),
    );
  const s = sensitivity;
  const or = (x: number | undefined) => (x === undefined ? "–" : pct(x));
  console.log(
    `\nThe weighted estimate (strata above), held out, needed by items: only labels today's replay still removes ${or(s.removedToday)}; only labels drawn ` +
      `from replays (replay, replay-drawn, replay-census) ${or(s.fromReplays)}; shares by the replay's own flags ${or(s.replayFlags)}`,
  );
}
process.exit(0);
