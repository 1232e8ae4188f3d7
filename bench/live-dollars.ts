/**
 * What the footer's live dollars cost: on Pi's thread, turning branch entries into the light ledger (all
 * of them once, then only the new ones at a boundary); on the pass pool's thread, pricing both arms of
 * the whole branch once, then only a boundary's new entries. On a real session's guarded branch (the replay's --write of pi-mono, 1,100+ entries).
 *
 *   node bench/live-dollars.ts [--reps 7]
 */
import { copyFile, mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { SessionManager } from "@earendil-works/pi-coding-agent";
import { LOCAL_MODEL_REF } from "../src/core/classifier/lexical.ts";
import { LivePricer } from "../src/core/replay/saved-so-far.ts";
import { DEFAULT_CONFIG } from "../src/core/shared/config.ts";
import { localClassify } from "../src/main/pass/classifier.ts";
import { createTaskRunner } from "../src/main/platform/pool.ts";
import { LOCAL_NOTE, replayFiles } from "../src/main/replay/command.ts";
import { loadPriceBook } from "../src/main/replay/prices.ts";
import { BranchLedger } from "../src/main/session/live-savings.ts";
import { summarize } from "./lib/stats.ts";

const SESSION = join(import.meta.dirname, "../test/fixtures/sessions/badlogic__pi-mono__large-session.jsonl");
const { values } = parseArgs({ options: { reps: { type: "string", default: "7" } } });
const REPS = Number(values.reps);

const dir = await mkdtemp(join(tmpdir(), "cg-live-dollars-"));
const runner = await createTaskRunner({ backend: "piscina", minThreads: 1, maxThreads: 1 });
const prices = await loadPriceBook();
const out = join(dir, "guarded.jsonl");
await replayFiles([SESSION], {
  classifier: { ref: LOCAL_MODEL_REF, note: LOCAL_NOTE, classify: localClassify() },
  config: DEFAULT_CONFIG,
  runner,
  prices,
  write: out,
});
await runner.destroy();
const copy = join(dir, "copy.jsonl");
await copyFile(out, copy);
const manager = SessionManager.open(copy, dir);
const branch = manager.getBranch();
const lookup = (id: string) => manager.getEntry(id);

const first: number[] = [];
const boundary: number[] = [];
const pricing: number[] = [];
const step: number[] = [];
let net = 0;
for (let r = 0; r < REPS; r++) {
  const ledger = new BranchLedger();
  let t = performance.now();
  ledger.sync(branch.slice(0, -20), prices, lookup);
  const earlier = [...ledger.entries];
  const profiles = new Map(ledger.profiles(prices));
  first.push(performance.now() - t);
  t = performance.now();
  ledger.sync(branch, prices, lookup);
  const fresh = ledger.entries.slice(earlier.length);
  const after = new Map(ledger.profiles(prices));
  boundary.push(performance.now() - t);
  // The pool thread: the branch before the boundary priced whole, then the boundary's entries alone.
  const pricer = new LivePricer();
  t = performance.now();
  pricer.append(earlier);
  pricer.useProfiles(profiles);
  pricer.advance();
  pricing.push(performance.now() - t);
  t = performance.now();
  pricer.append(fresh);
  pricer.useProfiles(after);
  pricer.advance();
  net = pricer.result().net;
  step.push(performance.now() - t);
}
const line = (what: string, xs: number[]) => {
  const s = summarize(xs);
  return `${what}: median ${s.median.toFixed(1)} ms (max ${s.max.toFixed(1)})`;
};
console.log(`${branch.length} entries on the guarded branch; saved so far $${net.toFixed(2)}; ${REPS} repetitions`);
console.log(line("Pi's thread, the whole branch the first time", first));
console.log(line("Pi's thread, a boundary with 20 new entries", boundary));
console.log(line("pool thread, pricing both arms of the branch", pricing));
console.log(line("pool thread, pricing the boundary's 20 new entries", step));
