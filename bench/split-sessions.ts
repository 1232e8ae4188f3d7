// Splits the real sessions of ../shared/sessions into a tuning half and a held-out half, by session, with a
// fixed seed, and writes bench/session-split.json. Priced and unpriced sessions are split apart so that each
// half gets its share of dollars. A session already in the file keeps its half: sessions added later are
// split on their own. Run before any rule is tuned on new sessions; the held-out half is what docs quote.
//
//   node bench/split-sessions.ts [--seed 2029] [--dir ../shared/sessions]
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { mulberry32 } from "../test/kit/prng.ts";
import { recordedDollars, type SessionSplit, SPLIT_FILE } from "./lib/session-split.ts";

const REPO = resolve(import.meta.dirname, "..");
const { values } = parseArgs({
  options: { seed: { type: "string", default: "2029" }, dir: { type: "string", default: "../shared/sessions" } },
});
const dir = resolve(REPO, values.dir as string);
const split: SessionSplit = existsSync(SPLIT_FILE)
  ? (JSON.parse(readFileSync(SPLIT_FILE, "utf8")) as SessionSplit)
  : { seed: Number(values.seed), tune: [], report: [] };
const known = new Set([...split.tune, ...split.report]);
const fresh = readdirSync(dir)
  .filter((f) => f.endsWith(".jsonl") && !known.has(f))
  .sort();
const rng = mulberry32(split.seed + known.size);
for (const priced of [true, false]) {
  const group = fresh.filter((f) => recordedDollars(readFileSync(join(dir, f), "utf8")) > 0 === priced);
  for (let i = group.length - 1; i > 0; i--) {
    const j = Math.floor(rng() * (i + 1));
    [group[i], group[j]] = [group[j] as string, group[i] as string];
  }
  group.forEach((f, i) => {
    (i % 2 === 0 ? split.tune : split.report).push(f);
  });
}
split.tune.sort();
split.report.sort();
writeFileSync(SPLIT_FILE, `${JSON.stringify(split, null, 2)}\n`);
process.stdout.write(`tune: ${split.tune.length} sessions, report: ${split.report.length}\n`);
