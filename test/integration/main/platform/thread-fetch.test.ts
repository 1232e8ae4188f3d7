// The classifier's HTTP thread: pi-ai's real System One client, handed createThreadFetch().fetch, against
// the loopback classifier. Answers, errors, aborts and time limits must come out as they do with the
// ordinary fetch; a thread that fails loses its requests as failures (never as answers) and is replaced,
// and no request waits for a thread to boot, or fails because one cannot.
import { createServer, type Server } from "node:http";
import { connect } from "node:net";
import type { ClassifierContext } from "@earendil-works/pi-ai";
import { classify } from "@earendil-works/pi-ai/api/typesafe-system-one";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createThreadFetch, type ThreadFetch } from "../../../../src/main/platform/thread-fetch.ts";
import { loopbackModel } from "../../../kit/hook.ts";
import { BROKEN_HTTP_WORKER, CRASHING_HTTP_WORKER } from "../../../kit/http-worker-faults.ts";
import { keywordPolicy, type LoopbackClassifier, startLoopbackClassifier } from "../../../kit/loopback-classifier.ts";

let lb: LoopbackClassifier;
const opened: ThreadFetch[] = [];
const open = (entry?: string) => {
  const tf = createThreadFetch(entry ? { entry } : {});
  opened.push(tf);
  return tf;
};
/** A thread fetch whose thread is up (until then requests would go to the ordinary fetch). */
const threadFetch = async (entry?: string) => {
  const tf = open(entry);
  tf.start();
  await until(() => tf.ready);
  return tf;
};

const context = {
  state: { items: { a: "error: the build failed", b: "all good" } },
  questions: {
    a: { type: "bool", instructions: "Needed?", criteria: { true: "needed", false: "not needed" } },
    b: { type: "bool", instructions: "Needed?", criteria: { true: "needed", false: "not needed" } },
    kind: { type: "choice", instructions: "What is it?", criteria: { log: "a log", code: "source code" } },
  },
} as unknown as ClassifierContext;

const ask = (fetch?: typeof globalThis.fetch, extra: { signal?: AbortSignal; timeoutMs?: number } = {}) =>
  classify(loopbackModel(lb.baseUrl), context, { apiKey: "k", maxRetries: 0, ...(fetch ? { fetch } : {}), ...extra });

beforeAll(async () => {
  lb = await startLoopbackClassifier({ policy: keywordPolicy(/error|fail/i) });
});
afterEach(async () => {
  lb.set({ behaviour: "answer", latencyMs: 0 });
  await Promise.all(opened.splice(0).map((tf) => tf.close()));
});
afterAll(async () => {
  await lb.close();
});

describe("createThreadFetch with pi-ai's System One client", () => {
  it("gets the same answers, usage and request as the ordinary fetch", async () => {
    const tf = await threadFetch();
    const direct = await ask();
    const before = lb.requests.length;
    const threaded = await ask(tf.fetch);
    expect(threaded.stopReason).toBe("stop");
    expect(threaded.answers).toEqual(direct.answers);
    expect(threaded.usage).toEqual(direct.usage);
    expect((threaded.answers.a as { probability: number }).probability).toBeGreaterThan(0.5);
    expect((threaded.answers.b as { probability: number }).probability).toBeLessThan(0.5);
    // The server saw the same body and the client's own headers.
    expect(lb.requests[before]).toEqual(lb.requests[before - 1]);
    expect(lb.requestHeaders[before]?.authorization).toBe("Bearer k");
    expect(lb.requestHeaders[before]?.["content-type"]).toBe("application/json");
    expect(tf.pending).toBe(0);
  });

  it("reports the server's errors as the ordinary fetch does (status and body)", async () => {
    const tf = await threadFetch();
    for (const behaviour of ["error500", "malformed", "wrong-types"] as const) {
      lb.set({ behaviour });
      const direct = await ask();
      const threaded = await ask(tf.fetch);
      expect(threaded.stopReason, behaviour).toBe("error");
      expect(threaded.errorMessage, behaviour).toBe(direct.errorMessage);
    }
  });

  it("returns a response without a body for a bodiless status", async () => {
    const server = createServer((_req, res) => {
      res.writeHead(204, { "x-seen": "yes" });
      res.end();
    });
    const url = await listen(server);
    try {
      const tf = await threadFetch();
      const response = await tf.fetch(url, { method: "POST", body: "{}" });
      expect(response.status).toBe(204);
      expect(response.headers.get("x-seen")).toBe("yes");
      expect(response.body).toBeNull();
    } finally {
      server.close();
    }
  });

  it("stops a hanging request when its signal aborts, and the thread serves the next one", async () => {
    const tf = await threadFetch();
    lb.set({ behaviour: "hang" });
    const controller = new AbortController();
    const pending = ask(tf.fetch, { signal: controller.signal });
    await until(() => tf.pending === 1);
    controller.abort();
    const result = await pending;
    expect(result.stopReason).toBe("aborted");
    expect(tf.pending).toBe(0);
    lb.set({ behaviour: "answer" });
    expect((await ask(tf.fetch)).stopReason).toBe("stop");
  });

  it("ends a hanging request at pi-ai's timeoutMs with its timeout error", async () => {
    const tf = await threadFetch();
    lb.set({ behaviour: "hang" });
    const result = await ask(tf.fetch, { timeoutMs: 150 });
    expect(result.stopReason).toBe("error");
    expect(result.errorMessage).toContain("timed out after 150ms");
    expect(tf.pending).toBe(0);
  });

  it("fails a request whose connection is refused like a network error", async () => {
    const server = createServer();
    const url = await listen(server);
    await new Promise((resolve) => server.close(resolve));
    const tf = await threadFetch();
    const error = await tf.fetch(url, { method: "POST", body: "{}" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TypeError);
    expect(String((error as Error & { cause?: Error }).cause?.message)).toMatch(/ECONNREFUSED|connect/);
  });

  it("sends a body it cannot carry as plain text through the ordinary fetch", async () => {
    const tf = await threadFetch();
    const body = new TextEncoder().encode(
      JSON.stringify({ model: "m", state: context.state, questions: { a: { type: "noul", instructions: "?" } } }),
    );
    const response = await tf.fetch(`${lb.baseUrl}/systemone`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: "Bearer k" },
      body,
    });
    expect(response.status).toBe(200);
    expect(tf.pending).toBe(0);
  });
});

describe("a failing HTTP thread", () => {
  it("loses its requests as failures and is replaced", async () => {
    const tf = await threadFetch(CRASHING_HTTP_WORKER);
    const first = await ask(tf.fetch);
    expect(first.stopReason).toBe("error");
    expect(first.answers).toEqual({});
    expect(first.errorMessage).toContain("exited");
    expect(tf.unavailable).toBeUndefined();
    expect(tf.ready).toBe(false);
    // The next request does not wait for a new thread; the one it starts takes the requests after.
    const meanwhile = await ask(tf.fetch);
    expect(meanwhile.stopReason).toBe("stop");
    await until(() => tf.ready);
    // The replacement crashes too (same entry), which shows a new thread took the request.
    const second = await ask(tf.fetch);
    expect(second.stopReason).toBe("error");
    expect(second.errorMessage).toContain("exited");
    expect(tf.pending).toBe(0);
  });

  it("does not hold requests while it boots, nor lose them when it cannot load", async () => {
    const tf = open(BROKEN_HTTP_WORKER);
    const during = await ask(tf.fetch);
    expect(during.stopReason).toBe("stop");
    await until(() => tf.unavailable !== undefined);
    expect(tf.unavailable).toContain("does not load");
    const after = await ask(tf.fetch);
    expect(after.stopReason).toBe("stop");
    expect(Object.keys(after.answers).sort()).toEqual(["a", "b", "kind"]);
    expect(tf.ready).toBe(false);
  });

  it("after close, fails what was in flight and sends later requests through the ordinary fetch", async () => {
    const tf = await threadFetch();
    lb.set({ behaviour: "hang" });
    const pending = ask(tf.fetch);
    await until(() => tf.pending === 1);
    await tf.close();
    expect((await pending).stopReason).toBe("error");
    lb.set({ behaviour: "answer" });
    expect((await ask(tf.fetch)).stopReason).toBe("stop");
  });
});

describe("the proxy Pi is configured with", () => {
  let proxy: Server;
  const tunnels: string[] = [];
  const saved = { HTTP_PROXY: process.env.HTTP_PROXY, NO_PROXY: process.env.NO_PROXY };

  beforeAll(async () => {
    // A CONNECT proxy, as Pi's dispatcher tunnels to plain-HTTP origins too.
    proxy = createServer();
    proxy.on("connect", (req, client, head) => {
      tunnels.push(String(req.url));
      const [host, port] = String(req.url).split(":");
      const upstream = connect(Number(port), host, () => {
        client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
        upstream.write(head);
        upstream.pipe(client);
        client.pipe(upstream);
      });
      upstream.on("error", () => client.destroy());
      client.on("error", () => upstream.destroy());
    });
    const url = await listen(proxy);
    // The thread takes its environment when it starts, as it would take Pi's.
    process.env.HTTP_PROXY = url;
    process.env.NO_PROXY = "";
  });
  afterAll(() => {
    for (const [key, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
    proxy.closeAllConnections();
    proxy.close();
  });

  it("carries the classifier's requests through HTTP_PROXY", async () => {
    const tf = await threadFetch();
    const result = await ask(tf.fetch);
    expect(result.stopReason).toBe("stop");
    expect(tunnels).toEqual([`127.0.0.1:${lb.port}`]);
  });
});

function listen(server: Server): Promise<string> {
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      resolve(`http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}/`);
    });
  });
}

async function until(done: () => boolean): Promise<void> {
  while (!done()) await new Promise((resolve) => setTimeout(resolve, 10));
  expect(done()).toBe(true);
}
