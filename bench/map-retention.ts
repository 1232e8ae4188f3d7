/**
 * Why in-flight bookkeeping on Pi's thread avoids a long-lived Map (src/main/platform/in-flight.ts): the same
 * set/take loop over entries that point at 30 KB request bodies, six in flight at a time as in a pass,
 * kept once in a Map and once in InFlight, each table first aged into the old generation. Reports the
 * young-generation collections and how much the old generation grew without a full collection (what
 * survived young collections and was promoted). Not part of the suite; an input for a design decision.
 *
 *   npm exec -- node bench/map-retention.ts [--requests 20000]
 */
import { PerformanceObserver } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { getHeapSpaceStatistics } from "node:v8";
import { InFlight } from "../src/main/platform/in-flight.ts";
import { nextTurn } from "../src/main/platform/pace.ts";

const { values } = parseArgs({ options: { requests: { type: "string", default: "20000" } } });
const requests = Number(values.requests);

interface Table {
  set(id: number, value: { body: string }): void;
  take(id: number): { body: string } | undefined;
}

function mapTable(): Table {
  const map = new Map<number, { body: string }>();
  return {
    set: (id, value) => map.set(id, value),
    take: (id) => {
      const value = map.get(id);
      map.delete(id);
      return value;
    },
  };
}

const oldSpaceUsed = () => getHeapSpaceStatistics().find((s) => s.space_name === "old_space")?.space_used_size ?? 0;

let minorCount = 0;
let minorMs = 0;
let minorMax = 0;
let majorCount = 0;
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    const kind = (e as { detail?: { kind?: number } }).detail?.kind;
    if (kind === 1) {
      minorCount++;
      minorMs += e.duration;
      minorMax = Math.max(minorMax, e.duration);
    } else majorCount++;
  }
}).observe({ entryTypes: ["gc"] });

async function run(label: string, table: Table): Promise<void> {
  // Age the table: a pass's bookkeeping lives for seconds, long enough to be promoted.
  for (let i = 0; i < 40; i++) {
    (globalThis as { junk?: unknown }).junk = new Array(50_000).fill(i);
    await nextTurn();
  }
  (globalThis as { junk?: unknown }).junk = undefined;
  minorCount = 0;
  minorMs = 0;
  minorMax = 0;
  majorCount = 0;
  const before = oldSpaceUsed();
  const filler = "y".repeat(30_000);
  let id = 0;
  let checksum = 0;
  while (id < requests) {
    const wave: number[] = [];
    for (let k = 0; k < 6; k++) {
      id++;
      table.set(id, { body: JSON.stringify({ id, filler }) });
      wave.push(id);
    }
    await nextTurn();
    for (const w of wave) checksum += table.take(w)?.body.length ?? 0;
  }
  const grew = (oldSpaceUsed() - before) / 2 ** 20;
  console.log(
    `${label.padEnd(10)} young collections ${String(minorCount).padStart(4)}, ${minorMs.toFixed(0).padStart(4)} ms ` +
      `(mean ${(minorMs / Math.max(1, minorCount)).toFixed(2)}, max ${minorMax.toFixed(1)}), ` +
      `old generation ${grew >= 0 ? "+" : ""}${grew.toFixed(0)} MiB, full collections ${majorCount} (checksum ${checksum})`,
  );
}

console.log(`${requests} bodies of 30 KB, six in flight:`);
await run("Map", mapTable());
await run("InFlight", new InFlight<{ body: string }>());
