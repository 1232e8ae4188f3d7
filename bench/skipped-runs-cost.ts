/**
 * What looking for skipped run ends (src/core/items/skipped-runs.ts) adds to planning a run end: planRunEnd
 * on a generated session with no guard record, with one early checkpoint record and no run-end record
 * (the worst case: every run since looks skipped), and with every output listed by a run-end record (the
 * usual session). Median of five plans each. `--root DIR` plans with another checkout's code (one
 * without the rule, to compare).
 *
 *   node bench/skipped-runs-cost.ts [--entries 20000] [--root DIR]
 */
import { resolve } from "node:path";
import { parseArgs } from "node:util";

const { values } = parseArgs({
  options: { entries: { type: "string", default: "20000" }, root: { type: "string", default: "." } },
});
const root = resolve(values.root);
const { generateSession, toProjection } = await import(`${root}/test/kit/generate.ts`);
const { SnapshotBuilder } = await import(`${root}/src/main/pass/snapshot.ts`);
const { planRunEnd } = await import(`${root}/src/core/distill/plan.ts`);
const { DEFAULT_CONFIG } = await import(`${root}/src/core/shared/config.ts`);

type Entry = { id: string; role?: string } & Record<string, unknown>;
const entries: Entry[] = new SnapshotBuilder().entries(
  toProjection(generateSession({ entries: Number(values.entries), seed: 3 })),
);
const record = (id: string, phase: string, entryId: string): Entry => ({
  id,
  type: "custom",
  customType: "context-guard",
  visible: false,
  text: "",
  images: 0,
  data: { v: 1, phase, results: [{ kind: "large", entryId, reason: "kept" }] },
});
const first = entries.findIndex((e) => e.role === "toolResult");
const sessions: Array<[string, Entry[]]> = [
  ["no guard record", entries],
  [
    "one early checkpoint record",
    [...entries.slice(0, first + 1), record("r0", "mid-run", entries[first]?.id ?? ""), ...entries.slice(first + 1)],
  ],
  [
    "every output listed at a run end",
    entries.flatMap((e, i) => (e.role === "toolResult" ? [e, record(`r${i}`, "run-end", e.id)] : [e])),
  ],
];
console.log(`${root}, ${new Date().toISOString()}`);
for (const [name, session] of sessions) {
  const times: number[] = [];
  let requests = 0;
  for (let k = 0; k < 5; k++) {
    const started = performance.now();
    const plan = planRunEnd(session, DEFAULT_CONFIG, { family: "anthropic" });
    times.push(performance.now() - started);
    requests = plan.status === "run" ? plan.requests.length : 0;
  }
  times.sort((a, b) => a - b);
  console.log(`${name}: ${session.length} entries, ${(times[2] ?? 0).toFixed(0)} ms, ${requests} requests`);
}
