// A worker thread that runs pi-ai's System One client against the loopback classifier: the other side of
// bench/client-in-worker.ts. Each message is one request; the answer goes back with the same id.
import { parentPort, workerData } from "node:worker_threads";
import type { ClassifierRequest } from "../../src/core/shared/types.ts";
import { loopbackClassify } from "../../test/kit/hook.ts";

const classify = loopbackClassify((workerData as { baseUrl: string }).baseUrl);

parentPort?.on("message", async (message: { id: number; request: ClassifierRequest }) => {
  const outcome = await classify(message.request, { signal: new AbortController().signal, timeoutMs: 60_000 });
  parentPort?.postMessage({ id: message.id, outcome });
});
