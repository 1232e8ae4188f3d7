import { describe, expect, it } from "vitest";
import type { ClassifierOutcome, ClassifierRequest } from "../../../../src/core/shared/types.ts";
import {
  type ClassifyFn,
  classifyAll,
  FAIL_FAST_CALLS,
  type QueueProgress,
} from "../../../../src/main/pass/classify-queue.ts";
import { fullGc } from "../../../kit/stall.ts";
import { turnCounter } from "../../../kit/turns.ts";

const req = (n: number): ClassifierRequest => ({ state: { n }, questions: {} });
const answered: ClassifierOutcome = { status: "stop", answers: {}, inputTokens: 10 };

describe("classifyAll", () => {
  it("never has more than `concurrency` requests in flight", async () => {
    let inFlight = 0;
    let peak = 0;
    const classify: ClassifyFn = async () => {
      inFlight++;
      peak = Math.max(peak, inFlight);
      await new Promise((r) => setTimeout(r, 5));
      inFlight--;
      return answered;
    };
    const out = await classifyAll(
      Array.from({ length: 20 }, (_, i) => req(i)),
      classify,
      { concurrency: 3, timeoutMs: 5000 },
    );
    expect(peak).toBe(3);
    expect(out.outcomes.every((o) => o.status === "stop")).toBe(true);
    expect(out.sent).toBe(20);
    expect(out.timedOut).toBe(false);
  });

  it("reports progress: an outcome once no later attempt can change it, and every call sent", async () => {
    const progress: QueueProgress = { final: new Map(), sent: 0 };
    let release!: () => void;
    const held = new Promise<void>((r) => {
      release = r;
    });
    let calls = 0;
    const classify: ClassifyFn = async (request) => {
      calls++;
      const n = (request.state as { n: number }).n;
      // 0 answers, 1 fails once then answers, 2 waits.
      if (n === 1 && calls <= 2) return { status: "error", error: "flaky" };
      if (n === 2) await held;
      return answered;
    };
    const queue = classifyAll([req(0), req(1), req(2)], classify, { concurrency: 3, timeoutMs: 5000, progress });
    while (progress.final.size < 2) await new Promise((r) => setTimeout(r, 1));
    expect([...progress.final.keys()].sort()).toEqual([0, 1]);
    expect(progress.final.get(1)?.status).toBe("stop");
    expect(progress.sent).toBe(4);
    release();
    const out = await queue;
    expect(progress.final.size).toBe(3);
    expect(progress.sent).toBe(out.sent);
  });

  it("starts each call in an event-loop turn of its own, also when a whole window is ready at once", async () => {
    const turns = turnCounter();
    const startedAt: number[] = [];
    const classify: ClassifyFn = async () => {
      startedAt.push(turns.turn);
      return answered;
    };
    const out = await classifyAll(
      Array.from({ length: 12 }, (_, i) => req(i)),
      classify,
      { concurrency: 6, timeoutMs: 5000 },
    );
    turns.stop();
    expect(out.sent).toBe(12);
    expect(new Set(startedAt).size).toBe(12);
  });

  it("settles at the deadline when the classifier hangs and ignores the abort", async () => {
    const classify: ClassifyFn = () => new Promise(() => {});
    // Order, not a duration: a timer set with the deadline's delay (less a tick) fires before the pass settles.
    const order: string[] = [];
    const timer = new Promise<void>((r) => setTimeout(() => r(void order.push("timer")), 140));
    const out = await classifyAll([req(1), req(2)], classify, { concurrency: 2, timeoutMs: 150 });
    order.push("settled");
    await timer;
    expect(order).toEqual(["timer", "settled"]);
    expect(out.timedOut).toBe(true);
    expect(out.outcomes.map((o) => o.status)).toEqual(["timeout", "timeout"]);
  });

  it("passes the abort signal and the time left to each call", async () => {
    const seen: Array<{ aborted: boolean; timeoutMs: number }> = [];
    let signal: AbortSignal | undefined;
    const classify: ClassifyFn = (_r, o) => {
      signal = o.signal;
      seen.push({ aborted: o.signal.aborted, timeoutMs: o.timeoutMs });
      return new Promise(() => {});
    };
    await classifyAll([req(1)], classify, { concurrency: 1, timeoutMs: 100 });
    expect(seen[0]?.aborted).toBe(false);
    expect(seen[0]?.timeoutMs).toBeLessThanOrEqual(100);
    expect(signal?.aborted).toBe(true);
  });

  it("gives each call a signal of its own that the pass's end does not touch once the call answered", async () => {
    const signals: AbortSignal[] = [];
    const classify: ClassifyFn = async (_r, o) => {
      signals.push(o.signal);
      await new Promise((r) => setTimeout(r, 2));
      return answered;
    };
    const parent = new AbortController();
    const out = await classifyAll(
      Array.from({ length: 8 }, (_, i) => req(i)),
      classify,
      { concurrency: 2, timeoutMs: 5000, signal: parent.signal },
    );
    expect(out.sent).toBe(8);
    expect(new Set(signals).size).toBe(8);
    // Nothing was still hanging off the pass's signal when it closed: no call saw an abort.
    expect(signals.some((s) => s.aborted)).toBe(false);
    parent.abort();
    expect(signals.some((s) => s.aborted)).toBe(false);
  });

  it("aborts the signal of a call that is still running when the pass stops waiting", async () => {
    const signals: AbortSignal[] = [];
    const classify: ClassifyFn = (r, o) => {
      signals.push(o.signal);
      return r.state.n === 0 ? Promise.resolve(answered) : new Promise(() => {});
    };
    const out = await classifyAll([req(0), req(1)], classify, { concurrency: 2, timeoutMs: 50, attempts: 1 });
    expect(out.timedOut).toBe(true);
    expect(out.outcomes.map((o) => o.status)).toEqual(["stop", "timeout"]);
    expect(signals.map((s) => s.aborted)).toEqual([false, true]);
  });

  it("leaves no listener per call on the long-lived promises: a call's request is not kept by the pass", async () => {
    // Each request is held only weakly here; if the queue kept it reachable from something that lives
    // as long as the pass (a race against the deadline), it would survive a collection mid-pass.
    const refs: WeakRef<ClassifierRequest>[] = [];
    let gcDone!: () => void;
    const gcPoint = new Promise<void>((r) => {
      gcDone = r;
    });
    const classify: ClassifyFn = async (r) => {
      if (r.state.n === 39) {
        // The last call: every other call answered; collect and look.
        await new Promise((resolve) => setImmediate(resolve));
        fullGc();
        gcDone();
      }
      return answered;
    };
    const source = {
      count: 40,
      async get(i: number) {
        const request = { state: { n: i }, questions: { q: { kind: "bool", question: "x".repeat(10_000) } } };
        refs.push(new WeakRef(request as unknown as ClassifierRequest));
        return request as unknown as ClassifierRequest;
      },
    };
    const pending = classifyAll(source, classify, { concurrency: 1, timeoutMs: 60_000 });
    await gcPoint;
    const out = await pending;
    expect(out.sent).toBe(40);
    const alive = refs.slice(0, 38).filter((r) => r.deref() !== undefined).length;
    expect(alive).toBe(0);
  });

  it("retries a failed request once, and keeps the error when the retry fails too", async () => {
    const calls = new Map<number, number>();
    const classify: ClassifyFn = async (r) => {
      const n = r.state.n as number;
      calls.set(n, (calls.get(n) ?? 0) + 1);
      if (n === 1 && calls.get(n) === 1) return { status: "error", error: "flaky" };
      if (n === 2) return { status: "error", error: "down" };
      return answered;
    };
    const out = await classifyAll([req(1), req(2)], classify, { concurrency: 2, timeoutMs: 2000 });
    expect(calls.get(1)).toBe(2);
    expect(calls.get(2)).toBe(2);
    expect(out.outcomes[0]?.status).toBe("stop");
    expect(out.outcomes[1]).toMatchObject({ status: "error", error: "down" });
    expect(out.sent).toBe(4);
  });

  it("turns a thrown error into an error outcome", async () => {
    const classify: ClassifyFn = async () => {
      throw new Error("boom");
    };
    const out = await classifyAll([req(1)], classify, { concurrency: 1, timeoutMs: 1000, attempts: 1 });
    expect(out.outcomes[0]).toMatchObject({ status: "error", error: "boom" });
  });

  it("ignores an answer that arrives after the deadline", async () => {
    let late: ((o: ClassifierOutcome) => void) | undefined;
    const classify: ClassifyFn = () =>
      new Promise((resolve) => {
        late = resolve;
      });
    const out = await classifyAll([req(1)], classify, { concurrency: 1, timeoutMs: 50 });
    late?.(answered);
    await new Promise((r) => setTimeout(r, 10));
    expect(out.outcomes[0]?.status).toBe("timeout");
  });

  it("leaves requests that never started as timeout when the budget runs out", async () => {
    const classify: ClassifyFn = async () => {
      await new Promise((r) => setTimeout(r, 80));
      return answered;
    };
    const out = await classifyAll([req(1), req(2), req(3)], classify, { concurrency: 1, timeoutMs: 120 });
    expect(out.outcomes[0]?.status).toBe("stop");
    expect(out.outcomes.slice(1).map((o) => o.status)).toEqual(["timeout", "timeout"]);
    expect(out.timedOut).toBe(true);
  });

  it("stops when the parent signal aborts", async () => {
    const parent = new AbortController();
    const classify: ClassifyFn = () => new Promise(() => {});
    const pending = classifyAll([req(1)], classify, { concurrency: 1, timeoutMs: 10_000, signal: parent.signal });
    setTimeout(() => parent.abort(), 20);
    const out = await pending;
    // An outside stop is not a timeout (the record said `timeout` with `timedOut: false` before).
    expect(out.outcomes[0]?.status).toBe("aborted");
    expect(out.aborted).toBe(true);
    expect(out.timedOut).toBe(false);
  });

  it("stops sending once the classifier has failed FAIL_FAST_CALLS calls in a row without an answer", async () => {
    let calls = 0;
    const classify: ClassifyFn = async () => {
      calls++;
      return { status: "error", error: "System One API error (500)" };
    };
    const out = await classifyAll(
      Array.from({ length: 30 }, (_, i) => req(i)),
      classify,
      { concurrency: 2, timeoutMs: 5000 },
    );
    // Without it: 30 requests x 2 attempts. Calls already started when the limit is reached still finish.
    expect(calls).toBeLessThanOrEqual(FAIL_FAST_CALLS + 2);
    expect(out.sent).toBe(calls);
    expect(out.gaveUp).toBe(true);
    expect(out.answered).toBe(0);
    expect(out.lastError).toBe("System One API error (500)");
    expect(out.outcomes.every((o) => o.status === "error")).toBe(true);
  });

  it("keeps sending after an answer: only failures before any answer count", async () => {
    let calls = 0;
    const classify: ClassifyFn = async () => {
      calls++;
      return calls === 1 ? answered : { status: "error", error: "flaky" };
    };
    const out = await classifyAll(
      Array.from({ length: 10 }, (_, i) => req(i)),
      classify,
      { concurrency: 1, timeoutMs: 5000, attempts: 1 },
    );
    expect(calls).toBe(10);
    expect(out.answered).toBe(1);
    expect(out.gaveUp).toBe(false);
  });
});

describe("classifyAll at the deadline", () => {
  it("counts a client error that arrives at the deadline as a timeout", async () => {
    // The client's own timer fires as the deadline passes, before the deadline's timer gets to run.
    const classify: ClassifyFn = (_r, o) => {
      const until = performance.now() + o.timeoutMs + 10;
      while (performance.now() < until) {}
      return Promise.resolve({ status: "error", error: "Request timed out" });
    };
    const out = await classifyAll([req(1)], classify, { concurrency: 1, timeoutMs: 60, attempts: 1 });
    expect(out.outcomes[0]?.status).toBe("timeout");
    expect(out.timedOut).toBe(true);
  });
});
