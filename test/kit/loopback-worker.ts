// Worker-thread host of the loopback System One server (see loopback-host.ts): the server's request
// parsing and answering then never runs on the thread whose stalls the benchmark measures.
import { parentPort, workerData } from "node:worker_threads";
import { type Behaviour, keywordPolicy, type LoopbackOptions, startLoopbackClassifier } from "./loopback-classifier.ts";

export interface HostSettings {
  latencyMs?: number;
  jitterMs?: number;
  behaviour?: Behaviour;
  /** keywordPolicy(new RegExp(keyword, flags)). */
  keyword?: string;
  flags?: string;
}

export type HostCommand =
  | { id: number; type: "set"; settings: HostSettings }
  | { id: number; type: "count" }
  | { id: number; type: "close" };

function options(s: HostSettings): Partial<LoopbackOptions> {
  const o: Partial<LoopbackOptions> = {};
  if (s.latencyMs !== undefined) o.latencyMs = s.latencyMs;
  if (s.jitterMs !== undefined) o.jitterMs = s.jitterMs;
  if (s.behaviour !== undefined) o.behaviour = s.behaviour;
  if (s.keyword !== undefined) o.policy = keywordPolicy(new RegExp(s.keyword, s.flags ?? ""));
  return o;
}

const port = parentPort;
if (!port) throw new Error("loopback-worker.ts runs as a worker thread");
const lb = await startLoopbackClassifier(options(workerData as HostSettings));
port.postMessage({ type: "ready", baseUrl: lb.baseUrl });
port.on("message", async (cmd: HostCommand) => {
  if (cmd.type === "set") lb.set(options(cmd.settings));
  if (cmd.type === "count") {
    port.postMessage({ id: cmd.id, count: lb.requests.length });
    // Keep memory flat over thousands of requests: the benchmark only needs the count.
    lb.requests.length = 0;
    lb.requestHeaders.length = 0;
    return;
  }
  if (cmd.type === "close") {
    await lb.close();
    port.postMessage({ id: cmd.id });
    port.close();
    return;
  }
  port.postMessage({ id: cmd.id });
});
