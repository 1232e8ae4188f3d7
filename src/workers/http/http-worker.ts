// The thread behind src/main/platform/thread-fetch.ts: performs the HTTP requests the classifier client hands it,
// so sockets, streams and the garbage they leave stay off Pi's main thread. One message per request;
// the answer goes back with the same id, its body (read up to MAX_ANSWER_BYTES) transferred, not copied.
import { EventEmitter } from "node:events";
import { parentPort } from "node:worker_threads";
import { EnvHttpProxyAgent, fetch } from "undici";
import { type FetchReply, type FetchRequest, readCapped } from "./http-protocol.ts";

// Like Pi's own dispatcher (pi-coding-agent core/http-dispatcher.js): honours HTTP(S)_PROXY and NO_PROXY
// from the environment the worker was started with, which includes Pi's proxy setting.
const dispatcher = new EnvHttpProxyAgent({
  allowH2: false,
  proxyTunnel: true,
  connect: { autoSelectFamilyAttemptTimeout: 2_000 },
});
// Undici can emit "error" on the dispatcher when a connection fails mid-body (Pi guards its own the same
// way); the request's rejection is the one that counts, and an unhandled "error" would end the thread.
EventEmitter.prototype.on.call(dispatcher, "error", () => {});

const inFlight = new Map<number, AbortController>();
/** Requests the main thread gave up on: it has answered them itself. */
const cancelled = new Set<number>();

async function perform(message: Extract<FetchRequest, { type: "fetch" }>): Promise<void> {
  const controller = new AbortController();
  inFlight.set(message.id, controller);
  let reply: FetchReply;
  try {
    const response = await fetch(message.url, {
      method: message.method,
      headers: message.headers,
      body: message.body,
      signal: controller.signal,
      dispatcher,
    });
    const body = await readCapped(response as unknown as Response);
    reply = {
      id: message.id,
      ok: true,
      status: response.status,
      statusText: response.statusText,
      headers: [...response.headers],
      body,
    };
  } catch (error) {
    // Stops a body still arriving (an over-size answer) as well as the connection.
    controller.abort();
    const e = error as Error & { cause?: unknown };
    const cause = e.cause instanceof Error ? e.cause.message : undefined;
    reply = { id: message.id, ok: false, name: e.name ?? "Error", message: e.message ?? String(error), cause };
  } finally {
    inFlight.delete(message.id);
  }
  // A request the main thread aborted has already been answered there.
  if (cancelled.delete(message.id)) return;
  parentPort?.postMessage(reply, reply.ok ? [reply.body] : []);
}

parentPort?.on("message", (message: FetchRequest) => {
  if (message.type === "abort") {
    const controller = inFlight.get(message.id);
    if (!controller) return;
    cancelled.add(message.id);
    controller.abort();
  } else void perform(message);
});
// The module loaded: from here on a failure is the thread's, not the installation's.
parentPort?.postMessage({ ready: true });
