/**
 * Writes a generated heavy session as a Pi session file.
 *
 *   npm exec -- node bench/generate-sample.ts --entries 2000 --seed 7 --out bench/out/session-2000.jsonl
 *
 * Options: --entries N (default 2000), --seed S (default 1), --out PATH (default bench/out/session-<N>.jsonl),
 * --big (include 50 KB outputs), --cwd DIR (session header cwd).
 */
import { statSync } from "node:fs";
import { parseArgs } from "node:util";
import { DEFAULT_CWD, generateSession, writeSessionFile } from "../test/kit/generate.ts";

const { values } = parseArgs({
  options: {
    entries: { type: "string", default: "2000" },
    seed: { type: "string", default: "1" },
    out: { type: "string" },
    big: { type: "boolean", default: false },
    cwd: { type: "string", default: DEFAULT_CWD },
  },
});

const entries = Number.parseInt(values.entries, 10);
const seed = Number.parseInt(values.seed, 10);
if (!Number.isFinite(entries) || entries < 2)
  throw new Error(`--entries must be an integer >= 2 (got ${values.entries})`);
if (!Number.isFinite(seed)) throw new Error(`--seed must be an integer (got ${values.seed})`);
const out = values.out ?? `bench/out/session-${entries}.jsonl`;

const t0 = performance.now();
const session = generateSession({ entries, seed, bigOutputs: values.big });
const t1 = performance.now();
const generator = `bench/generate-sample.ts --entries ${entries} --seed ${seed}${values.big ? " --big" : ""}`;
writeSessionFile(out, session, values.cwd, generator);
const t2 = performance.now();

let toolCalls = 0;
for (const e of session) {
  const m = e.message as { role?: string; content?: { type: string }[] } | undefined;
  if (e.type === "message" && m?.role === "assistant")
    toolCalls += (m.content ?? []).filter((b) => b.type === "toolCall").length;
}
const mb = statSync(out).size / (1024 * 1024);
console.log(
  `${out}: ${session.length} entries, ${toolCalls} tool calls, ${mb.toFixed(1)} MiB ` +
    `(generate ${(t1 - t0).toFixed(0)} ms, write ${(t2 - t1).toFixed(0)} ms)`,
);
