/**
 * Three pieces of every boundary's work on Pi's thread, before and after, in one run on the same growing
 * session: the recall signal's read of the run (the snapshot brought up to date, then every entry since
 * the run's prompt) against the gate that reads Pi's projection for a recall call first, the
 * classifier lookup in Pi's model registry (what every boundary pays; a reused lookup was removed), and the scan for a result apart from its call over a flattened message list against one in place.
 * A checkpoint's edits land every `--every` turns, as the census's background checkpoints do.
 *
 *   node bench/boundary-work.ts [--turns 300] [--every 25]
 */
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { ModelRegistry, ModelRuntime, SessionManager } from "@earendil-works/pi-coding-agent";
import { runMayRecall } from "../src/core/recall/recall-gate.ts";
import { recallsInRun } from "../src/core/recall/recall-signal.ts";
import { DEFAULT_CONFIG } from "../src/core/shared/config.ts";
import { findClassifier } from "../src/main/pass/classifier.ts";
import { type ProjectedLike, SnapshotBuilder } from "../src/main/pass/snapshot.ts";
import { needsShapeCheck, needsShapeCheckIn } from "../src/main/session/boundary-shape.ts";
import { generateOutput } from "../test/kit/generate.ts";
import { machineInfo } from "./lib/machine.ts";

const { values } = parseArgs({
  options: { turns: { type: "string", default: "300" }, every: { type: "string", default: "25" } },
});
const turns = Number(values.turns);
const every = Number(values.every);

const runtime = await ModelRuntime.create({
  authPath: join(await mkdtemp(join(tmpdir(), "cg-bw-")), "auth.json"),
  modelsPath: null,
  refreshOnCreate: false,
});
runtime.registerProvider("openrouter", { baseUrl: "http://127.0.0.1:9", apiKey: "k" });
const registry = new ModelRegistry(runtime);

const usage = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: {} };
const sm = SessionManager.inMemory("/tmp/cg-bw");
sm.appendMessage({
  role: "user",
  content: [{ type: "text", text: "Work through the outputs" }],
  timestamp: 1,
} as never);
const builder = new SnapshotBuilder();
const results: string[] = [];
let edited = 0;
const t = {
  signal: [] as number[],
  gate: [] as number[],
  find: [] as number[],
  flat: [] as number[],
  inPlace: [] as number[],
};
const time = (list: number[], work: () => unknown) => {
  const t0 = performance.now();
  work();
  list.push(performance.now() - t0);
};
for (let i = 0; i < turns; i++) {
  const id = `c${i}`;
  sm.appendMessage({
    role: "assistant",
    content: [{ type: "toolCall", id, name: "bash", arguments: { command: `cat out${i}.txt` } }],
    api: "f",
    provider: "f",
    model: "m",
    usage,
    stopReason: "toolUse",
    timestamp: 1,
  } as never);
  const text = generateOutput("grep", 8_000 + ((i * 7919) % 37_000), i + 1);
  results.push(
    sm.appendMessage({
      role: "toolResult",
      toolCallId: id,
      toolName: "bash",
      content: [{ type: "text", text }],
      isError: false,
      timestamp: 1,
    } as never),
  );
  if (i > 0 && i % every === 0) {
    for (; edited < results.length - 5; edited++) {
      sm.appendContextEdit(results[edited] as string, {
        content: [{ type: "text", text: "[context-guard] kept 3 lines" }],
      });
    }
  }
  // The boundary: what the guard's turn_end reads (alternating which side goes first).
  const context = sm.buildSessionProjection().entries as unknown as ProjectedLike[];
  const sides = [
    () => time(t.signal, () => recallsInRun(builder.entries(context))),
    () => time(t.gate, () => runMayRecall(context)),
    () => time(t.find, () => findClassifier(registry, DEFAULT_CONFIG.model)),
    () =>
      time(t.flat, () =>
        needsShapeCheck(
          [],
          context.flatMap((p) => p.messages),
        ),
      ),
    () => time(t.inPlace, () => needsShapeCheckIn([], context)),
  ];
  for (const side of i % 2 === 0 ? sides : sides.reverse()) side();
}
/**
 * The sum without the slowest 1% of calls: on a shared machine those are a wait for a core or a
 * collection, whichever side they fall on.
 */
const sum = (xs: number[]) =>
  [...xs]
    .sort((a, b) => a - b)
    .slice(0, Math.ceil(xs.length * 0.99))
    .reduce((a, b) => a + b, 0);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
const row = (name: string, before: number[], after: number[]) =>
  `| ${name} | ${sum(before).toFixed(1)} ms (${median(before).toFixed(3)} / ${Math.max(...before).toFixed(2)}) | ${sum(after).toFixed(1)} ms (${median(after).toFixed(3)} / ${Math.max(...after).toFixed(2)}) | ${(sum(before) / Math.max(1e-6, sum(after))).toFixed(1)}× |`;
const m = machineInfo();
console.log(
  [
    `Boundary work, ${m.date}: ${turns} turns (8–45 KB outputs), edits landing every ${every}; ${m.cpuModel}, ${m.cores} cores, load ${m.loadStart}.`,
    "",
    "| Work at each boundary: sum over the run without the slowest 1% (median / longest call) | Before | After | Ratio of sums |",
    "|---|---:|---:|---:|",
    row("Recall signal: snapshot + run read / the gate", t.signal, t.gate),
    row("Classifier lookup: registry walk (no after: kept as is)", t.find, t.find),
    row("Shape scan: flattened list / in place", t.flat, t.inPlace),
  ].join("\n"),
);
