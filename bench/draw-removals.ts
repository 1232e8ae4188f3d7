// Draws removals to label by hand (test/fixtures/labelled-removals.md): replays real sessions with
// local/lexical and the default settings, collects every removed item (the removed chunks of an
// output, a small output, an omitted exchange), and draws a stratified sample with a fixed seed: the
// items the proxy of the day flags and those it does not, so that enough needed ones are found.
//
//   node bench/draw-removals.ts --seed 28 --flagged 120 --unflagged 110 --out /tmp/drawn.json FILE...
import { readFileSync, writeFileSync } from "node:fs";
import { basename } from "node:path";
import { parseArgs } from "node:util";
import type { SessionEntry } from "@earendil-works/pi-coding-agent";
import { findSuspects } from "../src/core/replay/proxy.ts";
import { DEFAULT_CONFIG, type GuardConfig } from "../src/core/shared/config.ts";
import { createTaskRunner } from "../src/main/platform/pool.ts";
import { loadPriceBook } from "../src/main/replay/prices.ts";
import { laterMessages } from "../src/main/replay/proxy-input.ts";
import { readSessionFile } from "../src/main/replay/reader.ts";
import type { LabelledRemoval } from "../test/kit/labelled-removals.ts";
import { pieceFor, removalKey } from "../test/kit/labelled-removals.ts";
import { mulberry32 } from "../test/kit/prng.ts";
import { replayRemovals } from "./lib/replay-removals.ts";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    seed: { type: "string", default: "28" },
    flagged: { type: "string", default: "120" },
    unflagged: { type: "string", default: "110" },
    out: { type: "string", default: "drawn-removals.json" },
    // The settings of labelled-removals.md's "replay-aggressive": they remove more.
    aggressive: { type: "boolean", default: false },
    // Removals already labelled (a labelled-removals.json) are not drawn again.
    exclude: { type: "string" },
    // Draw from the removals of earlier runs (their "all") instead of replaying: default first, so an
    // item both runs removed counts as the default run's.
    merge: { type: "boolean", default: false },
    // Take every tool output of at least 200 characters as removed whole at the first run end after
    // it, as labelled-removals.md's "hand-picked" ones: this widens the set beyond what the classifier
    // of the day removes.
    whole: { type: "boolean", default: false },
  },
});

type Drawn = LabelledRemoval & { flagged: boolean; chars: number };

const config: GuardConfig = {
  ...DEFAULT_CONFIG,
  excludeTools: [...DEFAULT_CONFIG.excludeTools],
  enabled: true,
  model: "local/lexical",
  ...(values.aggressive
    ? {
        minResultChars: 1500,
        smallResultMinChars: 200,
        chunkKeepThreshold: 0.8,
        smallKeepThreshold: 0.75,
        keepWholeThreshold: 0.9,
        focusWholeThreshold: 0.85,
        maxKeepRatio: 0.4,
      }
    : {}),
};
const all: Drawn[] = [];
if (values.merge) {
  const seen = new Set<string>();
  for (const path of positionals) {
    for (const r of (JSON.parse(readFileSync(path, "utf8")) as { all: Drawn[] }).all) {
      if (seen.has(`${r.session}:${r.line}`)) continue;
      seen.add(`${r.session}:${r.line}`);
      all.push(r);
    }
  }
} else if (values.whole) await wholeOutputs();
else await replay();

async function wholeOutputs(): Promise<void> {
  for (const path of positionals) {
    const file = await readSessionFile(path);
    const session = basename(path);
    const later = laterMessages(file.branch);
    const ends = later.filter((m) => m.role === "assistant" && m.calls.length === 0).map((m) => m.index);
    for (const m of later) {
      if (m.role !== "toolResult" || m.text.length < 200) continue;
      const end = ends.find((i) => i > m.index);
      if (end === undefined) continue;
      const entry = file.branch[m.index] as SessionEntry;
      const r: LabelledRemoval = {
        session,
        line: file.lineOf.get(entry) ?? 0,
        ...(file.version >= 2 ? { entryId: entry.id } : {}),
        removed: "all",
        afterLine: file.lineOf.get(file.branch[end] as SessionEntry) ?? 0,
        what: `whole output: ${m.text.slice(0, 60).replace(/\s+/g, " ")}`,
        suspectToday: false,
        source: "hand-picked",
        heldOut: false,
        label: "not-needed",
        reason: "",
      };
      const piece = pieceFor(file, r);
      const tier = findSuspects([piece], later)[0]?.tier;
      all.push({ ...r, flagged: tier === "likely-needed", chars: piece.text.length });
    }
    process.stderr.write(`${session}: ${all.length} so far\n`);
  }
}

async function replay(): Promise<void> {
  const runner = await createTaskRunner({ backend: "piscina", minThreads: 1, maxThreads: 1 });
  const prices = await loadPriceBook();
  try {
    for (const path of positionals) {
      const file = await readSessionFile(path);
      const source = values.aggressive ? ("replay-aggressive" as const) : ("replay" as const);
      const { removals: found } = await replayRemovals(file, { runner, config, prices, source });
      const later = laterMessages(file.branch);
      for (const r of found) {
        const piece = pieceFor(file, r);
        const tier = findSuspects([piece], later)[0]?.tier;
        all.push({ ...r, flagged: tier === "likely-needed", chars: piece.text.length });
      }
      process.stderr.write(`${basename(path)}: ${found.length} removals\n`);
    }
  } finally {
    await runner.destroy();
  }
}

// A removal already labelled at the same point and extent is not drawn again (removalKey).
const labelled = new Set(
  values.exclude
    ? (JSON.parse(readFileSync(values.exclude, "utf8")) as { removals: LabelledRemoval[] }).removals.map(removalKey)
    : [],
);
const fresh = all.filter((r) => !labelled.has(removalKey(r)));
const rng = mulberry32(Number(values.seed));
function draw(items: Drawn[], n: number): Drawn[] {
  const pool = [...items];
  for (let i = pool.length - 1; i > 0; i--) {
    const j = Math.floor(rng() * (i + 1));
    [pool[i], pool[j]] = [pool[j] as Drawn, pool[i] as Drawn];
  }
  return pool.slice(0, n);
}
const flagged = draw(
  fresh.filter((r) => r.flagged),
  Number(values.flagged),
);
const unflagged = draw(
  fresh.filter((r) => !r.flagged),
  Number(values.unflagged),
);
writeFileSync(
  values.out,
  `${JSON.stringify({ total: all.length, all, drawn: [...flagged, ...unflagged] }, null, 1)}\n`,
);
process.stderr.write(
  `${all.length} removals, ${all.filter((r) => r.flagged).length} flagged; drew ${flagged.length} flagged, ${unflagged.length} not\n`,
);
