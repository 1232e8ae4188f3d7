// Splits the labelled removals (test/fixtures/labelled-removals.json) into a tuning half and a
// held-out half with a fixed seed, each label split evenly, and writes each removal's `half`. Removals
// that already have a half keep it, so a batch added later is split on its own. Run before any rule is
// tuned on the new labels: the held-out half is what the replay's figures are measured on.
//
//   node bench/split-labelled.ts [--seed 2028]
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { FIXTURES, type LabelledRemoval } from "../test/kit/labelled-removals.ts";
import { mulberry32 } from "../test/kit/prng.ts";

const { values } = parseArgs({ options: { seed: { type: "string", default: "2028" } } });
const path = join(FIXTURES, "labelled-removals.json");
const set = JSON.parse(readFileSync(path, "utf8")) as { removals: LabelledRemoval[] };
const rng = mulberry32(Number(values.seed));
const key = (r: LabelledRemoval) => `${r.session}:${String(r.line).padStart(6, "0")}`;
for (const label of ["needed", "not-needed"] as const) {
  const group = set.removals
    .filter((r) => r.label === label && r.half === undefined)
    .sort((a, b) => key(a).localeCompare(key(b)));
  for (let i = group.length - 1; i > 0; i--) {
    const j = Math.floor(rng() * (i + 1));
    [group[i], group[j]] = [group[j] as LabelledRemoval, group[i] as LabelledRemoval];
  }
  group.forEach((r, i) => {
    r.half = i < Math.ceil(group.length / 2) ? "tune" : "report";
  });
}
writeFileSync(path, `${JSON.stringify(set, null, 2)}\n`);
const count = (half: string, label: string) => set.removals.filter((r) => r.half === half && r.label === label).length;
for (const half of ["tune", "report"])
  process.stdout.write(`${half}: ${count(half, "needed")} needed, ${count(half, "not-needed")} not needed\n`);
