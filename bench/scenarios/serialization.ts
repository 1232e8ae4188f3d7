// Benchmark 3b: how the session snapshot (SnapEntry[]) crosses to a worker. Structured clone (what the
// pool's postMessage does, and what the product uses) vs msgpackr (pack on the main thread, transfer the
// bytes, unpack in the worker). Main-thread cost is what stalls Pi; the worker side is reported for context.
import { deserialize, serialize } from "node:v8";
import { Worker } from "node:worker_threads";
import { pack, unpack } from "msgpackr";
import type { SnapEntry } from "../../src/core/shared/types.ts";
import { SnapshotBuilder } from "../../src/main/pass/snapshot.ts";
import { toProjection } from "../../test/kit/generate.ts";
import { settle, timeSync } from "../../test/kit/stall.ts";
import type { BenchMode } from "../lib/mode.ts";
import { baseSession } from "../lib/workloads.ts";

export interface SerializationSample {
  size: number;
  rep: number;
  /** JSON length of the entries, for scale. */
  jsonChars: number;
  cloneBytes: number;
  msgpackBytes: number;
  /** structuredClone() in one thread: serialize + deserialize. */
  structuredCloneMs: number;
  /** v8.serialize (≈ postMessage's main-thread work) and v8.deserialize (≈ the receiving thread's). */
  v8SerializeMs: number;
  v8DeserializeMs: number;
  packMs: number;
  unpackMs: number;
  /** Main thread: worker.postMessage(entries) returns after serializing. */
  postCloneMs: number;
  /** Main thread: pack + copy out of msgpackr's shared buffer + postMessage with transfer. */
  postMsgpackMs: number;
  /** Post → the worker's acknowledgement, including its decoding. */
  roundTripCloneMs: number;
  roundTripMsgpackMs: number;
  /** The worker's unpack (a structured clone is decoded before the worker's handler runs: see v8DeserializeMs). */
  workerDecodeMsgpackMs: number;
}

function startEcho(): Promise<Worker> {
  const worker = new Worker(new URL("../lib/echo-worker.ts", import.meta.url), {
    execArgv: [...process.execArgv, "--disable-warning=ExperimentalWarning"],
  });
  return new Promise((resolve, reject) => {
    worker.once("online", () => resolve(worker));
    worker.once("error", reject);
  });
}

function ack(worker: Worker): Promise<{ n: number; decodeMs: number }> {
  return new Promise((resolve) => worker.once("message", resolve));
}

export async function runSerialization(mode: BenchMode, log: (line: string) => void): Promise<SerializationSample[]> {
  const samples: SerializationSample[] = [];
  const worker = await startEcho();
  try {
    for (const size of mode.serializationSizes) {
      const entries: SnapEntry[] = new SnapshotBuilder().entries(toProjection(baseSession(size)));
      const jsonChars = JSON.stringify(entries).length;
      for (let rep = -1; rep < mode.reps; rep++) {
        // The two posts first, in alternating order (msgpackr reuses one buffer, so its second pack in a
        // row is cheaper than its first), then the single-thread timings.
        const post = { clone: 0, msgpack: 0, cloneTrip: 0, msgpackTrip: 0, unpackMs: 0 };
        for (const kind of rep % 2 === 0 ? (["clone", "msgpack"] as const) : (["msgpack", "clone"] as const)) {
          const reply = ack(worker);
          const t0 = performance.now();
          if (kind === "clone") worker.postMessage({ kind: "clone", value: entries });
          else {
            const packed = pack(entries).slice();
            worker.postMessage({ kind: "msgpack", bytes: packed }, [packed.buffer]);
          }
          post[kind] = performance.now() - t0;
          const r = await reply;
          if (kind === "clone") post.cloneTrip = performance.now() - t0;
          else {
            post.msgpackTrip = performance.now() - t0;
            post.unpackMs = r.decodeMs;
          }
          await settle();
        }
        const sc = timeSync(() => structuredClone(entries));
        const ser = timeSync(() => serialize(entries));
        const de = timeSync(() => deserialize(ser.value));
        const pk = timeSync(() => pack(entries));
        const bytes = pk.value.slice();
        const up = timeSync(() => unpack(bytes) as unknown[]);
        await settle();
        if (rep < 0) continue;
        samples.push({
          size,
          rep,
          jsonChars,
          cloneBytes: ser.value.length,
          msgpackBytes: bytes.length,
          structuredCloneMs: sc.ms,
          v8SerializeMs: ser.ms,
          v8DeserializeMs: de.ms,
          packMs: pk.ms,
          unpackMs: up.ms,
          postCloneMs: post.clone,
          postMsgpackMs: post.msgpack,
          roundTripCloneMs: post.cloneTrip,
          roundTripMsgpackMs: post.msgpackTrip,
          workerDecodeMsgpackMs: post.unpackMs,
        });
      }
      log(`  serialization ${size}: done`);
    }
  } finally {
    await worker.terminate();
  }
  return samples;
}
