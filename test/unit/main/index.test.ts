// The extension's own wiring of the worker warm-up, driven through its hook handlers: a session opened
// and left alone sends nothing to the pass worker; once its first run starts, the session goes to the
// worker, and the run-end pass that follows has nothing left to send but the order.
import { join } from "node:path";
import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import type { TaskRunner } from "../../../src/main/platform/pool.ts";
import { thisThread } from "../../../src/workers/pass/pass-thread.ts";
import type { PassMessage } from "../../../src/workers/pass/protocol.ts";
import { generateSession, toProjection } from "../../kit/generate.ts";

/** Entries the pass worker was sent, per task, in order (the extension's own pool, run inline here). */
const traffic: Array<{ task: "sync" | "plan"; fresh: number }> = [];

vi.mock("../../../src/main/platform/pool.ts", async (importOriginal) => {
  const real = await importOriginal<typeof import("../../../src/main/platform/pool.ts")>();
  return {
    ...real,
    createTaskRunner: async (options: Parameters<typeof real.createTaskRunner>[0]) => {
      const inner = await real.createTaskRunner({ ...options, backend: "inline" });
      const counted: TaskRunner = {
        backend: inner.backend,
        destroy: () => inner.destroy(),
        run: (name, input, runOptions) => {
          const message = name === "pass" ? (input as PassMessage) : undefined;
          if (message?.kind === "sync" || message?.kind === "plan")
            traffic.push({ task: message.kind, fresh: message.sync.fresh.length });
          return inner.run(name, input, runOptions);
        },
      };
      return counted;
    },
  };
});

/** The extension's HTTP threads, as it creates and uses them (the real ones, wrapped to be counted). */
const httpThreads: Array<{ started: number; closed: number; fetched: number }> = [];

vi.mock("../../../src/main/platform/thread-fetch.ts", async (importOriginal) => {
  const real = await importOriginal<typeof import("../../../src/main/platform/thread-fetch.ts")>();
  return {
    ...real,
    createThreadFetch: (options?: Parameters<typeof real.createThreadFetch>[0]) => {
      const inner = real.createThreadFetch(options);
      const counted = { started: 0, closed: 0, fetched: 0 };
      httpThreads.push(counted);
      return {
        fetch: ((input: string | URL | Request, init?: RequestInit) => {
          counted.fetched++;
          return inner.fetch(input, init);
        }) as typeof globalThis.fetch,
        start: () => {
          counted.started++;
          inner.start();
        },
        get ready() {
          return inner.ready;
        },
        get pending() {
          return inner.pending;
        },
        get unavailable() {
          return inner.unavailable;
        },
        close: () => {
          counted.closed++;
          return inner.close();
        },
      };
    },
  };
});

const { default: contextGuard } = await import("../../../src/main/index.ts");

type Handler = (event: unknown, ctx: unknown) => unknown;

/** Pi's extension API as far as the guard uses it: handlers are collected and called by `emit`. */
function fakePi() {
  const handlers = new Map<string, Handler[]>();
  const api = new Proxy(
    {
      on: (name: string, handler: Handler) => handlers.set(name, [...(handlers.get(name) ?? []), handler]),
    } as Record<string, unknown>,
    { get: (target, key: string) => target[key] ?? (() => undefined) },
  );
  contextGuard(api as never);
  const emit = async (name: string, event: unknown, ctx: unknown) => {
    let out: unknown;
    for (const handler of handlers.get(name) ?? []) out = (await handler(event, ctx)) ?? out;
    return out;
  };
  return emit;
}

const entries = generateSession({ entries: 120, seed: 3 });
const projection = toProjection(entries);

const ctx = {
  hasUI: false,
  ui: { notify: () => {}, setStatus: () => {}, setWorkingMessage: () => {} },
  model: undefined,
  modelRegistry: { findOfType: () => undefined, getProviderAuthStatus: () => ({ configured: false }) },
  sessionManager: {
    buildSessionProjection: () => ({ entries: projection }),
    getBranch: () => entries,
    getSessionId: () => "warm-up-test",
    getEntry: (id: string) => entries.find((e) => e.id === id),
    getLeafEntry: () => entries.at(-1),
  },
};

const settle = { outcome: "completed", entries: [], context: { contextEntries: projection } };
const turns = (n: number) => new Promise((resolve) => setTimeout(resolve, n));

/** What the extension wrote on stderr (print mode's warning channel), captured instead of printed. */
const stderr: string[] = [];

beforeAll(() => {
  process.env.PI_CONTEXT_GUARD_CONFIG = join(import.meta.dirname, "does-not-exist", "context-guard.json");
});
beforeEach(() => {
  vi.spyOn(process.stderr, "write").mockImplementation((chunk: string | Uint8Array) => {
    stderr.push(String(chunk));
    return true;
  });
});
afterEach(() => {
  traffic.length = 0;
  httpThreads.length = 0;
  stderr.length = 0;
  vi.restoreAllMocks();
});

describe("worker warm-up in the extension", () => {
  it("sends nothing to the worker for a session that is only opened", async () => {
    const emit = fakePi();
    await emit("session_start", {}, ctx);
    await turns(100);
    expect(traffic).toEqual([]);
    // Without a UI the classifier problem is said once on stderr.
    expect(stderr.join("")).toContain("it is not in Pi's classifier catalog");
    await emit("session_shutdown", {}, ctx);
  });

  it("sends the session when its first run starts; the run-end pass then sends no entry", async () => {
    const emit = fakePi();
    await emit("session_start", {}, ctx);
    await emit("agent_start", {}, ctx);
    // Straight on, as a run that ends at once: the pass waits for the warm-up instead of racing it.
    await emit("agent_before_settle", settle, ctx);
    const plan = traffic.findIndex((t) => t.task === "plan");
    expect(plan).toBeGreaterThan(0);
    const ahead = traffic.slice(0, plan);
    expect(ahead.every((t) => t.task === "sync")).toBe(true);
    expect(ahead.reduce((n, t) => n + t.fresh, 0)).toBe(projection.length);
    expect(traffic[plan]?.fresh).toBe(0);
    // A second run start does not send the session again.
    traffic.length = 0;
    await emit("agent_start", {}, ctx);
    await emit("agent_before_settle", settle, ctx);
    expect(traffic.filter((t) => t.task === "sync")).toEqual([]);
    await emit("session_shutdown", {}, ctx);
  });

  it("without a run start, the first pass sends the session itself", async () => {
    const emit = fakePi();
    await emit("session_start", {}, ctx);
    await emit("agent_before_settle", settle, ctx);
    const sent = traffic.reduce((n, t) => n + t.fresh, 0);
    expect(sent).toBe(projection.length);
    expect(traffic.at(-1)?.task).toBe("plan");
    expect(traffic.at(-1)?.fresh).toBeGreaterThan(0);
    await emit("session_shutdown", {}, ctx);
  });
});

describe("the session's copy on the pass worker", () => {
  // The pool runs inline here, so the worker's state is this thread's.
  it("is dropped, settings and store, at session_shutdown", async () => {
    const before = thisThread.clients;
    const emit = fakePi();
    await emit("session_start", {}, ctx);
    await emit("agent_start", {}, ctx);
    await emit("agent_before_settle", settle, ctx);
    expect(thisThread.clients).toBe(before + 1);
    await emit("session_shutdown", {}, ctx);
    expect(thisThread.clients).toBe(before);
  });
});

describe("the classifier's HTTP thread in the extension", () => {
  /** A registry that has the configured classifier; it records the options of every call. */
  const calls: Array<{ fetch?: unknown }> = [];
  const withClassifier = {
    ...ctx,
    modelRegistry: {
      findOfType: (_type: string, provider: string, id: string) => ({
        type: "classifier",
        provider,
        id,
        api: "typesafe-system-one",
        baseUrl: "http://127.0.0.1:9/api/v1",
        input: ["text"],
      }),
      getProviderAuthStatus: () => ({ configured: true }),
      getApiKeyForProvider: async () => "k",
      classify: async (
        model: { api: string; provider: string; id: string },
        _c: unknown,
        options: { fetch?: unknown },
      ) => {
        calls.push(options);
        // As pi-ai does: the request goes out through the fetch it was handed (nothing listens there).
        await (options.fetch as typeof globalThis.fetch)("http://127.0.0.1:9/systemone").catch(() => undefined);
        return { ...model, model: model.id, answers: {}, stopReason: "error", errorMessage: "offline", timestamp: 0 };
      },
    },
  };

  it("starts when a run starts, carries the pass's classifier calls, and stops with the session", async () => {
    calls.length = 0;
    const emit = fakePi();
    await emit("session_start", {}, withClassifier);
    const thread = httpThreads.at(-1);
    expect(thread?.started).toBe(0);
    await emit("agent_start", {}, withClassifier);
    expect(thread?.started).toBe(1);
    await emit("agent_before_settle", settle, withClassifier);
    expect(calls.length).toBeGreaterThan(0);
    // Every call was handed a fetch, and the requests went through the thread's.
    expect(calls.every((options) => typeof options.fetch === "function")).toBe(true);
    expect(thread?.fetched).toBe(calls.length);
    await emit("session_shutdown", {}, withClassifier);
    expect(thread?.closed).toBe(1);
  });

  it("is not started for a session without a usable remote classifier", async () => {
    const emit = fakePi();
    await emit("session_start", {}, ctx);
    await emit("agent_start", {}, ctx);
    expect(httpThreads.at(-1)?.started).toBe(0);
    await emit("session_shutdown", {}, ctx);
  });
});
