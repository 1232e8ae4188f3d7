// The pass worker's side of the protocol, on this thread: a whole pass as its messages, each message a
// structured clone as the pool would deliver it, and the typed failures for anything the worker cannot
// answer.
import { describe, expect, it } from "vitest";
import { finishPass } from "../../../../src/core/distill/finish.ts";
import { planRunEnd } from "../../../../src/core/distill/plan.ts";
import { DEFAULT_CONFIG } from "../../../../src/core/shared/config.ts";
import type { ClassifierOutcome, ClassifierRequest, SnapEntry } from "../../../../src/core/shared/types.ts";
import {
  isWorkerFailure,
  PassWorkerError,
  unwrapFailure,
  workerFailure,
} from "../../../../src/workers/pass/failures.ts";
import { packedCount, unpackValue } from "../../../../src/workers/pass/packed-values.ts";
import { handlePass } from "../../../../src/workers/pass/pass-handler.ts";
import { thisThread } from "../../../../src/workers/pass/pass-thread.ts";
import { type MessageOf, PASS_KINDS, type PassKind, type PassMessage } from "../../../../src/workers/pass/protocol.ts";
import { pass } from "../../../../src/workers/tasks.ts";
import { grepRun } from "../../../kit/snap.ts";

/** A message as the pool delivers it: a structured clone. */
const send = <K extends PassKind>(message: MessageOf<K>) => handlePass(structuredClone(message));

/** Gives a client the default settings as version 1, as PassWorker does before its first plan. */
function settingsFor(client?: string): number {
  send({ kind: "settings", ...(client ? { client } : {}), version: 1, settings: DEFAULT_CONFIG });
  return 1;
}

const session = (tag: string, outputs: number) => grepRun(tag, outputs, 300, 9);

const dropEverything = (request: ClassifierRequest): ClassifierOutcome => {
  const answers: NonNullable<ClassifierOutcome["answers"]> = {};
  for (const [id, q] of Object.entries(request.questions))
    answers[id] =
      q.type === "bool"
        ? { type: "bool", probability: 0.02 }
        : { type: "choice", choice: "none", probabilities: { none: 0.95 } };
  return { status: "stop", answers };
};

describe("the pass protocol, worker side", () => {
  it("answers a whole pass message by message with what the pure pass computes", () => {
    const entries = session("w", 3);
    const ids = entries.map((e) => e.id);
    expect(send({ kind: "ping" })).toBe("pong");
    // Two entries ahead of the plan, the rest with it.
    const ahead = unwrapFailure(send({ kind: "sync", client: "w", sync: { fresh: entries.slice(0, 2) } }));
    if ("missing" in ahead) throw new Error("a new store asked for entries");
    const planned = unwrapFailure(
      send({
        kind: "plan",
        client: "w",
        passId: "p-w",
        settings: settingsFor("w"),
        sync: { storeId: ahead.storeId, fresh: entries.slice(2), order: { keep: 0, tail: ids, version: 1 } },
      }),
    );
    expect(planned.storeId).toBe(ahead.storeId);
    if (!("plan" in planned) || planned.plan.status !== "run") throw new Error(JSON.stringify(planned));
    const expected = planRunEnd(entries, DEFAULT_CONFIG);
    if (expected.status !== "run") throw new Error("the pure plan skipped");
    expect(planned.plan.requestCount).toBe(expected.requests.length);
    // The requests in two windows, equal to the pure plan's.
    const count = planned.plan.requestCount;
    const half = Math.ceil(count / 2);
    const got: ClassifierRequest[] = [];
    for (const [from, to] of [
      [0, half],
      [half, count],
    ] as const) {
      const pack = unwrapFailure(send({ kind: "requests", passId: "p-w", from, to }));
      expect(packedCount(pack)).toBe(to - from);
      for (let i = 0; i < to - from; i++) got.push(unpackValue<ClassifierRequest>(pack, i));
    }
    expect(got).toEqual(structuredClone(expected.requests));
    // Outcomes ahead in two slices, then finish without them.
    const outcomes = got.map(dropEverything);
    expect(unwrapFailure(send({ kind: "outcomes", passId: "p-w", from: half, list: outcomes.slice(half) }))).toBe(
      count,
    );
    expect(unwrapFailure(send({ kind: "outcomes", passId: "p-w", from: 0, list: outcomes.slice(0, half) }))).toBe(
      count,
    );
    const finished = unwrapFailure(send({ kind: "finish", passId: "p-w" }));
    expect(finished.parts).toBe(0);
    const pure = finishPass({
      plan: expected,
      entries,
      texts: expected.candidates.map((c) => entries.find((e) => e.id === c.entryId)?.text ?? ""),
      outcomes,
      config: DEFAULT_CONFIG,
    });
    expect({ drafts: finished.drafts, results: finished.results }).toEqual(structuredClone(pure));
    expect(finished.drafts).toHaveLength(3);
    // The pass is released: its later messages find nothing.
    expect(send({ kind: "finish", passId: "p-w" })).toEqual(workerFailure("pass-lost"));
  });

  it("finishes a handed-over pass in two parts: the answered one keeps the plan, the waiting one releases it", () => {
    const entries = session("h", 3);
    const planned = unwrapFailure(
      send({
        kind: "plan",
        client: "h",
        passId: "p-h",
        settings: settingsFor("h"),
        sync: { fresh: entries, order: { keep: 0, tail: entries.map((e) => e.id), version: 1 } },
      }),
    );
    if (!("plan" in planned) || planned.plan.status !== "run") throw new Error(JSON.stringify(planned));
    const count = planned.plan.requestCount;
    const pack = unwrapFailure(send({ kind: "requests", passId: "p-h", from: 0, to: count }));
    const outcomes = Array.from({ length: count }, (_, i) => dropEverything(unpackValue<ClassifierRequest>(pack, i)));
    // The last request is still being asked at the hand-over.
    const pending = [count - 1];
    const now = outcomes.map((o, i): ClassifierOutcome => (pending.includes(i) ? { status: "aborted" } : o));
    const held = thisThread.heldPasses;
    const first = unwrapFailure(
      send({
        kind: "finish",
        passId: "p-h",
        outcomes: now,
        split: { pending, part: "answered" },
      }),
    );
    expect(thisThread.heldPasses).toBe(held);
    const rest = unwrapFailure(send({ kind: "finish", passId: "p-h", outcomes, split: { pending, part: "waiting" } }));
    expect(thisThread.heldPasses).toBe(held - 1);
    // One output waited: the first part kept it, the second distilled it; the others are the first part's.
    expect(first.drafts).toHaveLength(2);
    expect(rest.drafts).toHaveLength(1);
    expect(rest.results.map((r) => r.entryId)).toEqual([rest.drafts[0]?.targetId]);
    const waited = first.results.find((r) => r.entryId === rest.drafts[0]?.targetId);
    expect(waited).toMatchObject({ outcome: "kept" });
    expect(waited?.reason).toContain("aborted");
    expect(send({ kind: "finish", passId: "p-h" })).toEqual(workerFailure("pass-lost"));
  });

  it("reports a pass it does not hold as pass-lost, for every message that names one", () => {
    const lost: PassMessage[] = [
      { kind: "requests", passId: "nobody", from: 0, to: 1 },
      { kind: "outcomes", passId: "nobody", from: 0, list: [] },
      { kind: "finish", passId: "nobody" },
      { kind: "finishPart", passId: "nobody" },
    ];
    for (const m of lost) {
      const reply = pass(structuredClone(m));
      expect(isWorkerFailure(reply)).toBe(true);
      expect(reply).toMatchObject({ failure: "pass-lost" });
      try {
        unwrapFailure(reply);
        expect.unreachable();
      } catch (error) {
        expect(error).toBeInstanceOf(PassWorkerError);
        expect((error as PassWorkerError).code).toBe("pass-lost");
      }
    }
  });

  it("answers a message outside the protocol with bad-message, and does not throw", () => {
    for (const m of [{ kind: "plan2" }, { kind: 7 }, {}, null, "sync", undefined]) {
      expect(pass(m as unknown as PassMessage)).toEqual(workerFailure("bad-message"));
    }
  });

  it("tells a store reply (start over) from a failure, and a failure from a value with a 'failure' field", () => {
    // A sync naming a store this worker is not: it starts over, and says so as a reply, not a failure.
    const reply = send({ kind: "sync", sync: { storeId: "another", fresh: [] } });
    expect(reply).toEqual({ storeId: expect.any(String), missing: [] });
    expect(isWorkerFailure(reply)).toBe(false);
    expect(isWorkerFailure({ failure: "something else", message: "x" })).toBe(false);
    expect(isWorkerFailure({ failure: "bad-message", message: "x" })).toBe(true);
  });

  it("keeps one store per client: two sessions on one thread do not disturb each other", () => {
    const a = session("ca", 1);
    const b = session("cb", 1);
    const order = (entries: SnapEntry[], version: number) => ({ keep: 0, tail: entries.map((e) => e.id), version });
    const first = (client: string, entries: SnapEntry[], passId: string) =>
      unwrapFailure(
        send({
          kind: "plan",
          client,
          passId,
          settings: settingsFor(client),
          sync: { fresh: entries, order: order(entries, 1) },
        }),
      );
    const pa = first("client-a", a, "pa1");
    const pb = first("client-b", b, "pb1");
    expect(pa.storeId).not.toBe(pb.storeId);
    // Each client's next pass sends nothing but the order: its store still holds its session.
    const next = (client: string, storeId: string, entries: SnapEntry[], passId: string, base = 1) =>
      send({
        kind: "plan",
        client,
        passId,
        settings: settingsFor(client),
        sync: { storeId, base, fresh: [], order: { keep: entries.length, tail: [], version: base + 1 } },
      });
    expect(next("client-a", pa.storeId, a, "pa2")).toMatchObject({ storeId: pa.storeId, plan: { status: "run" } });
    expect(next("client-b", pb.storeId, b, "pb2")).toMatchObject({ storeId: pb.storeId, plan: { status: "run" } });
    // Released, a client's store is gone: its next sync finds a new store and is asked to resend.
    expect(send({ kind: "release", client: "client-a" })).toBe(true);
    expect(send({ kind: "release", client: "client-a" })).toBe(false);
    const after = send({
      kind: "sync",
      client: "client-a",
      sync: { storeId: pa.storeId, base: 2, fresh: [] },
    });
    expect(after).toMatchObject({ missing: [] });
    expect(next("client-b", pb.storeId, b, "pb3", 2)).toMatchObject({ storeId: pb.storeId, plan: { status: "run" } });
  });

  it("keeps a few passes at most: abandoned ones do not pile up", () => {
    const entries = session("k", 1);
    const ids = entries.map((e) => e.id);
    // Every plan resends everything (no store named, no order held): each is a separate pass.
    for (let i = 0; i < 10; i++) {
      const out = send({
        kind: "plan",
        passId: `abandoned-${i}`,
        settings: settingsFor(),
        sync: { fresh: entries, order: { keep: 0, tail: ids, version: 1 } },
      });
      expect("plan" in out && out.plan.status).toBe("run");
      // The next plan starts a new store: forget the order this one held.
      send({ kind: "sync", sync: { storeId: "reset", fresh: [] } });
    }
    expect(thisThread.heldPasses).toBeLessThanOrEqual(8);
    expect(send({ kind: "requests", passId: "abandoned-0", from: 0, to: 1 })).toEqual(workerFailure("pass-lost"));
    expect(isWorkerFailure(send({ kind: "requests", passId: "abandoned-9", from: 0, to: 1 }))).toBe(false);
  });

  it("declares each kind once, and handles each", () => {
    expect(new Set(PASS_KINDS).size).toBe(PASS_KINDS.length);
    for (const kind of PASS_KINDS) {
      const message = { kind, passId: "none", from: 0, to: 0, list: [], sync: { fresh: [] }, config: DEFAULT_CONFIG };
      const reply = pass(message as never);
      expect(reply).not.toEqual(workerFailure("bad-message"));
    }
  });
});
