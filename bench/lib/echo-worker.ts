// A raw worker for the serialization benchmark: receives a structured-clone payload or msgpackr bytes,
// decodes them, and acknowledges with the time it spent decoding.
import { parentPort } from "node:worker_threads";
import { unpack } from "msgpackr";

const port = parentPort;
if (!port) throw new Error("echo-worker.ts runs as a worker thread");
port.on("message", (m: { kind: "clone"; value: unknown } | { kind: "msgpack"; bytes: Uint8Array }) => {
  const t0 = performance.now();
  let n = 0;
  if (m.kind === "msgpack") n = (unpack(m.bytes) as unknown[]).length;
  else n = (m.value as unknown[]).length;
  port.postMessage({ n, decodeMs: performance.now() - t0 });
});
