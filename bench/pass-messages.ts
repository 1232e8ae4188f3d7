/**
 * What each message between Pi's thread and the pass worker weighs (bytes of its structured clone, as v8
 * serializes it) on a generated session: a cold pass, then a steady one over the same projection. The
 * settings travel once per session; before they did, every plan and every finish carried the config.
 *
 *   node bench/pass-messages.ts [--entries 2000]
 */
import { parseArgs } from "node:util";
import { serialize } from "node:v8";
import { DEFAULT_CONFIG } from "../src/core/shared/config.ts";
import type { ProjectedLike } from "../src/main/pass/snapshot.ts";
import { createTaskRunner, type TaskRunner } from "../src/main/platform/pool.ts";
import type { PassMessage } from "../src/workers/pass/protocol.ts";
import { dropAll } from "../test/kit/answers.ts";
import { generateSession, toProjection } from "../test/kit/generate.ts";
import { benchConfig, HookAdapter, runHook } from "../test/kit/hook.ts";

const { values } = parseArgs({ options: { entries: { type: "string", default: "2000" } } });
const ENTRIES = Number(values.entries);

const inner = await createTaskRunner({ backend: "inline" });
const sizes: Array<{ kind: PassMessage["kind"]; bytes: number }> = [];
const recording: TaskRunner = {
  backend: inner.backend,
  destroy: () => inner.destroy(),
  run: (name, input, options) => {
    if (name === "pass") sizes.push({ kind: (input as PassMessage).kind, bytes: serialize(input).length });
    return inner.run(name, input, options);
  },
};

const session = new HookAdapter(recording);
const context = toProjection(generateSession({ entries: ENTRIES, seed: 7 })) as unknown as ProjectedLike[];
const configBytes = serialize(DEFAULT_CONFIG).length;
console.log(`session: ${ENTRIES} generated entries; the config alone: ${configBytes} bytes`);
console.log("pass    message     count  bytes (median)  bytes (total)");
for (const pass of ["cold", "steady"]) {
  sizes.length = 0;
  const result = await runHook(session, context, dropAll, benchConfig());
  if (result.status === "failed") throw new Error(result.reason);
  const kinds = [...new Set(sizes.map((s) => s.kind))];
  for (const kind of kinds) {
    const list = sizes
      .filter((s) => s.kind === kind)
      .map((s) => s.bytes)
      .sort((a, b) => a - b);
    const total = list.reduce((n, b) => n + b, 0);
    const median = list[Math.floor(list.length / 2)] ?? 0;
    console.log(
      `${pass.padEnd(8)}${kind.padEnd(12)}${String(list.length).padStart(5)}  ${String(median).padStart(14)}  ${String(total).padStart(13)}`,
    );
  }
}
await session.release();
await inner.destroy();
