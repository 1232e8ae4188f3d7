// A `fetch` whose HTTP work runs on a worker thread (src/workers/http/http-worker.ts). pi-ai's classifier
// client takes a `fetch` option: handing it this one keeps Pi's registry, auth, headers and the
// client's own request and answer handling on the main thread, while the connection, its streams and
// the garbage they make (measured in bench/: about half of the client's main-thread CPU and collector
// time) move off it. No request waits for the thread: while it boots, and for good if it cannot start,
// requests go to the ordinary fetch, as does a request it cannot carry as plain data. Either way an
// answer's body is read up to MAX_ANSWER_BYTES, and an answer no Response can hold (a status outside
// 200-599) fails like a broken connection: nothing a server sends can throw on Pi's thread.
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import {
  type FetchReply,
  type FetchRequest,
  readCapped,
  safeStatusText,
  validStatus,
  type WorkerMessage,
} from "../../workers/http/http-protocol.ts";
import { callback } from "./callbacks.ts";
import { InFlight } from "./in-flight.ts";
import { workerFlags } from "./pool.ts";

export interface ThreadFetch {
  /** Same contract as the global fetch. */
  readonly fetch: typeof globalThis.fetch;
  /** Starts the thread ahead of the first request (booting it takes tens of milliseconds). */
  start(): void;
  /** The thread is up and takes requests (until then they go to the ordinary fetch). */
  readonly ready: boolean;
  /** Requests sent to the thread and not answered yet. */
  readonly pending: number;
  /** Why requests go to the ordinary fetch instead (the thread could not start), if they do. */
  readonly unavailable: string | undefined;
  /** Stops the thread; requests in flight fail like a dropped connection. */
  close(): Promise<void>;
}

/** The worker entry next to this module: `.ts` when running from a checkout, `.js` from the package. */
function httpWorkerPath(): string {
  const ext = import.meta.url.endsWith(".ts") ? ".ts" : ".js";
  return fileURLToPath(new URL(`../../workers/http/http-worker${ext}`, import.meta.url));
}

/** Statuses whose response must not carry a body (the Response constructor rejects one). */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

/**
 * The answer as a Response, or a network error when no Response can carry it: a status outside 200-599
 * (HTTP 999, 600, 1xx) means a broken server, and a reason phrase with characters a Response refuses is
 * dropped (the client never reads it).
 */
function toResponse(status: number, statusText: string, headers: [string, string][], body: ArrayBuffer): Response {
  if (!validStatus(status)) throw networkError(`the classifier answered with an invalid HTTP status (${status})`);
  const init = { status, statusText: safeStatusText(statusText), headers: new Headers(headers) };
  return new Response(NULL_BODY.has(status) ? null : body, init);
}

/** The ordinary fetch, with the same cap and checks as the thread's. */
async function cappedFetch(input: string | URL | Request, init?: RequestInit): Promise<Response> {
  const response = await globalThis.fetch(input, init);
  let body: ArrayBuffer;
  try {
    body = await readCapped(response);
  } catch (error) {
    if (init?.signal?.aborted) throw init.signal.reason;
    const e = error as Error;
    throw networkError(e.message);
  }
  return toResponse(response.status, response.statusText, [...response.headers], body);
}

interface Waiting {
  resolve(response: Response): void;
  reject(error: unknown): void;
  cleanup(): void;
}

/** What fetch rejects with when the connection fails: a TypeError whose cause says why. */
const networkError = (message: string, cause?: string) =>
  new TypeError("fetch failed", { cause: new Error(cause ? `${message}: ${cause}` : message) });

export function createThreadFetch(options: { entry?: string } = {}): ThreadFetch {
  let worker: Worker | undefined;
  /** The running thread has loaded its module. */
  let ready = false;
  let ids = 0;
  let closed = false;
  /** Set when a thread failed before its module loaded: it would fail the same way every time. */
  let unavailable: string | undefined;
  const waiting = new InFlight<Waiting>();

  const failAll = (why: string) => {
    for (const [, w] of waiting.drain()) {
      w.cleanup();
      w.reject(networkError(why));
    }
  };

  const answer = (reply: FetchReply) => {
    const entry = waiting.take(reply.id);
    if (!entry) return;
    entry.cleanup();
    if (!reply.ok) {
      const named = reply.name === "AbortError" || reply.name === "TimeoutError";
      entry.reject(named ? new DOMException(reply.message, reply.name) : networkError(reply.message, reply.cause));
      return;
    }
    try {
      entry.resolve(toResponse(reply.status, reply.statusText, reply.headers, reply.body));
    } catch (error) {
      entry.reject(error);
    }
  };

  const boot = (): Worker | undefined => {
    if (worker) return worker;
    let w: Worker;
    try {
      w = new Worker(options.entry ?? httpWorkerPath(), { execArgv: workerFlags() });
    } catch (error) {
      unavailable = `the HTTP worker could not start: ${(error as Error).message}`;
      return undefined;
    }
    ready = false;
    // The thread never keeps Pi's process alive on its own; a request in flight holds a timer that does.
    w.unref();
    w.on(
      "message",
      callback("http-message", (message: WorkerMessage) => {
        if ("ready" in message) {
          if (worker === w) ready = true;
        } else answer(message);
      }),
    );
    // A thread that fails or exits takes its requests with it. The next request starts a new one,
    // unless this one never loaded its module: then the installation is at fault, not the moment.
    const lost = (why: string) => {
      if (worker !== w) return;
      worker = undefined;
      if (!ready) unavailable = why;
      ready = false;
      failAll(why);
    };
    w.on(
      "error",
      callback("http-lost", (error: Error) => lost(`the HTTP worker failed: ${error.message}`)),
    );
    w.on(
      "exit",
      callback("http-lost", (code: number) => lost(`the HTTP worker exited (code ${code})`)),
    );
    worker = w;
    return w;
  };

  const fetchInThread = (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const body = init?.body;
    const plain = !(input instanceof Request) && (body === undefined || body === null || typeof body === "string");
    if (closed || unavailable !== undefined || !plain) return cappedFetch(input, init);
    const signal = init?.signal ?? undefined;
    if (signal?.aborted) return Promise.reject(signal.reason);
    const w = boot();
    if (!w || !ready) return cappedFetch(input, init);
    const id = ++ids;
    return new Promise<Response>((resolve, reject) => {
      // Keeps the process alive while the request is out, as an open socket would.
      const hold = setInterval(() => {}, 60_000);
      const cleanup = () => {
        clearInterval(hold);
        signal?.removeEventListener("abort", onAbort);
      };
      const onAbort = callback("http-abort", () => {
        if (!waiting.take(id)) return;
        cleanup();
        reject(signal?.reason);
        w.postMessage({ type: "abort", id } satisfies FetchRequest);
      });
      waiting.set(id, { resolve, reject, cleanup });
      signal?.addEventListener("abort", onAbort, { once: true });
      const message: FetchRequest = {
        type: "fetch",
        id,
        url: String(input),
        method: init?.method ?? "GET",
        headers: [...new Headers(init?.headers)],
        ...(typeof body === "string" ? { body } : {}),
      };
      w.postMessage(message);
    });
  };

  return {
    fetch: fetchInThread as typeof globalThis.fetch,
    start: () => {
      if (!closed && unavailable === undefined) boot();
    },
    get ready() {
      return ready && !closed;
    },
    get pending() {
      return waiting.size;
    },
    get unavailable() {
      return unavailable;
    },
    async close() {
      closed = true;
      const w = worker;
      worker = undefined;
      ready = false;
      failAll("the HTTP worker was closed");
      await w?.terminate();
    },
  };
}
