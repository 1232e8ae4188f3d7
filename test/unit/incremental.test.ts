// The main thread's per-pass work is incremental: the snapshot builder reuses what sits at the same
// position as last time, and the mirror sends the order as a delta against what the worker's store holds.
// Whatever sequence of projections arrives (growth, edits, reverts, compaction, a branch switch) and
// whatever the store went through (an answer lost, a replaced worker), the result must be exactly what
// a from-scratch build would give.
import { SessionManager } from "@earendil-works/pi-coding-agent";
import fc from "fast-check";
import { beforeEach, describe, expect, it } from "vitest";
import type { SnapEntry } from "../../src/core/shared/types.ts";
import { type ProjectedLike, SnapshotBuilder } from "../../src/main/pass/snapshot.ts";
import { WorkerMirror } from "../../src/main/pass/worker-mirror.ts";
import { paced } from "../../src/main/platform/pace.ts";
import type { SyncInput } from "../../src/workers/pass/protocol.ts";
import { SessionStores } from "../../src/workers/pass/session-store.ts";
import { propertyParams } from "../kit/arbitraries.ts";
import { turnCounter } from "../kit/turns.ts";

// One thread's stores, as a worker holds them; clearStore empties the default one, as a new worker starts.
const stores = new SessionStores();
const syncEntries = (input: SyncInput) => stores.sync(input);
const clearStore = () => stores.clear();

type Source = ProjectedLike["sourceEntry"] & { message?: { role: string; content: unknown } };

let serial = 0;
function source(role: "user" | "assistant" | "toolResult", text: string): Source {
  const id = `e${serial++}`;
  return { id, type: "message", message: { role, content: [{ type: "text", text }] } };
}

/**
 * A session branch as Pi projects it: entries from the root (or the latest compaction) to the leaf. An
 * edit is a context_edit entry on the branch, and an entry shows its latest edit (as in Pi's
 * buildSessionProjection; the builder relies on that).
 */
class Sim {
  branch: Source[] = [];
  /** Earlier branches, to navigate back to (Pi's /tree). */
  seen: Source[][] = [];
  project(): ProjectedLike[] {
    const edits = new Map<string, { content: unknown } | null>();
    for (const s of this.branch) {
      if (s.type === "context_edit") edits.set(s.targetId as string, s.replacement as { content: unknown } | null);
    }
    return this.branch.map((s, i) => {
      if (s.type === "compaction")
        return { sourceEntry: s, messages: i > 0 ? [] : [{ role: "compactionSummary", summary: s.summary }] };
      if (s.type !== "message") return { sourceEntry: s, messages: [] };
      const edit = edits.get(s.id);
      const message = s.message as { role: string; content: unknown };
      if (edit === undefined) return { sourceEntry: s, messages: [message] };
      // Pi builds a new message object on every projection of an edited entry, with the edit's content.
      return { sourceEntry: s, messages: edit === null ? [] : [{ ...message, content: edit.content }] };
    });
  }
}

type Op =
  | { kind: "append"; n: number; text: string }
  | { kind: "edit"; at: number; text: string | null }
  | { kind: "revert"; at: number }
  | { kind: "compact"; keepFrom: number }
  | { kind: "switch"; keepTo: number; n: number }
  | { kind: "back"; to: number }
  | { kind: "same" };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant("append" as const), n: fc.integer({ min: 1, max: 40 }), text: fc.string() }),
  fc.record({
    kind: fc.constant("edit" as const),
    at: fc.nat(),
    text: fc.option(fc.string({ maxLength: 8 }), { nil: null }),
  }),
  fc.record({ kind: fc.constant("revert" as const), at: fc.nat() }),
  fc.record({ kind: fc.constant("compact" as const), keepFrom: fc.nat() }),
  fc.record({ kind: fc.constant("switch" as const), keepTo: fc.nat(), n: fc.integer({ min: 0, max: 10 }) }),
  fc.record({ kind: fc.constant("back" as const), to: fc.nat() }),
  fc.constant({ kind: "same" as const }),
);

const ROLES = ["user", "assistant", "toolResult"] as const;

function apply(sim: Sim, op: Op): void {
  const len = sim.branch.length;
  if (op.kind !== "same") sim.seen.push([...sim.branch]);
  if (op.kind === "back") {
    sim.branch = [...(sim.seen[op.to % sim.seen.length] as Source[])];
  }
  if (op.kind === "append") {
    for (let i = 0; i < op.n; i++) sim.branch.push(source(ROLES[i % 3] as (typeof ROLES)[number], `${op.text}${i}`));
  } else if (op.kind === "edit" && len > 0) {
    // context_edit targets messages only.
    const target = sim.branch[op.at % len] as Source;
    if (target.type !== "message") return;
    const replacement = op.text === null ? null : { content: [{ type: "text", text: `[cg] ${op.text}` }] };
    sim.branch.push({ id: `x${serial++}`, type: "context_edit", targetId: target.id, replacement });
  } else if (op.kind === "revert" && len > 0) {
    // Pi has no "undo an edit": navigating to the entry before the edit's entry shows the earlier content.
    const target = (sim.branch[op.at % len] as Source).id;
    const at = sim.branch.findLastIndex((s) => s.type === "context_edit" && s.targetId === target);
    if (at >= 0) sim.branch = sim.branch.slice(0, at);
  } else if (op.kind === "compact" && len > 0) {
    // A compaction: the projection starts with a summary, then the kept tail.
    const summary: Source = { id: `c${serial++}`, type: "compaction", summary: "earlier work" };
    sim.branch = [summary, ...sim.branch.slice(op.keepFrom % len)];
  } else if (op.kind === "switch") {
    // Another branch: a shared prefix, then entries of its own.
    sim.branch = sim.branch.slice(0, len === 0 ? 0 : op.keepTo % (len + 1));
    for (let i = 0; i < op.n; i++) sim.branch.push(source("user", `branch ${i}`));
  }
}

const initialArb = fc.integer({ min: 0, max: 60 });
const opsArb = fc.array(opArb, { minLength: 1, maxLength: 12 });

describe("SnapshotBuilder reuses by position", () => {
  it("gives what a fresh builder gives, and knows every entry's position", () => {
    fc.assert(
      fc.property(initialArb, opsArb, (initial, ops) => {
        const sim = new Sim();
        apply(sim, { kind: "append", n: initial, text: "t" });
        const builder = new SnapshotBuilder();
        for (const op of [{ kind: "same" } as Op, ...ops]) {
          apply(sim, op);
          const projection = sim.project();
          const got = builder.entries(projection);
          expect(got).toEqual(new SnapshotBuilder().entries(projection));
          projection.forEach((p, i) => {
            expect(builder.positionOf(p.sourceEntry.id)).toBe(i);
          });
        }
      }),
      propertyParams(120),
    );
  });

  it("follows Pi's own projection through edits, compactions, branches and summaries", () => {
    // The builder skips the positions it shares with the last projection unless an edit came or went:
    // checked here against Pi's buildSessionProjection itself, not a model of it.
    type PiOp =
      | { kind: "message"; n: number }
      | { kind: "custom"; n: number }
      | { kind: "edit"; at: number; text: string | null }
      | { kind: "compact"; keep: number }
      | { kind: "branch"; to: number; summary: boolean }
      | { kind: "state" };
    const piOpArb: fc.Arbitrary<PiOp> = fc.oneof(
      {
        arbitrary: fc.record({ kind: fc.constant("message" as const), n: fc.integer({ min: 1, max: 12 }) }),
        weight: 4,
      },
      fc.record({ kind: fc.constant("custom" as const), n: fc.integer({ min: 1, max: 2 }) }),
      {
        arbitrary: fc.record({
          kind: fc.constant("edit" as const),
          at: fc.nat(),
          text: fc.option(fc.string({ maxLength: 6 }), { nil: null }),
        }),
        weight: 3,
      },
      fc.record({ kind: fc.constant("compact" as const), keep: fc.nat() }),
      fc.record({ kind: fc.constant("branch" as const), to: fc.nat(), summary: fc.boolean() }),
      fc.constant({ kind: "state" as const }),
    );
    const now = Date.UTC(2026, 0, 1);
    fc.assert(
      fc.property(fc.array(piOpArb, { minLength: 1, maxLength: 25 }), (ops) => {
        const sm = SessionManager.inMemory("/tmp/cg");
        const builder = new SnapshotBuilder();
        let k = 0;
        for (const op of ops) {
          const branch = sm.getBranch();
          if (op.kind === "message") {
            for (let i = 0; i < op.n; i++, k++) {
              const role = ROLES[k % 3] as (typeof ROLES)[number];
              const content = [{ type: "text", text: `${role} ${k}` }];
              if (role === "toolResult")
                sm.appendMessage({
                  role,
                  toolCallId: `c${k}`,
                  toolName: "read",
                  content,
                  isError: false,
                  timestamp: now,
                } as never);
              else sm.appendMessage({ role, content, timestamp: now } as never);
            }
          } else if (op.kind === "custom") {
            for (let i = 0; i < op.n; i++) sm.appendCustomMessageEntry("note", `custom ${k++}`, true);
          } else if (op.kind === "edit") {
            const editable = branch.filter(
              (e) => e.type === "custom_message" || (e.type === "message" && e.message.role !== "system"),
            );
            const target = editable[op.at % Math.max(1, editable.length)];
            if (target)
              sm.appendContextEdit(
                target.id,
                op.text === null ? null : { content: [{ type: "text", text: `[cg] ${op.text}` }] },
              );
          } else if (op.kind === "compact" && branch.length > 0) {
            sm.appendCompaction("earlier work", (branch[op.keep % branch.length] as { id: string }).id, 1000);
          } else if (op.kind === "branch" && branch.length > 0) {
            const to = (branch[op.to % branch.length] as { id: string }).id;
            if (op.summary) sm.branchWithSummary(to, "abandoned path");
            else sm.branch(to);
          } else if (op.kind === "state") {
            sm.appendThinkingLevelChange("high");
          }
          const projection = sm.buildSessionProjection().entries as unknown as ProjectedLike[];
          expect(builder.entries(projection)).toEqual(new SnapshotBuilder().entries(projection));
          projection.forEach((p, i) => {
            expect(builder.positionOf(p.sourceEntry.id)).toBe(i);
          });
        }
      }),
      propertyParams(150),
    );
  });

  it("returns the very snapshot objects of the last build for positions that did not change", () => {
    const sim = new Sim();
    apply(sim, { kind: "append", n: 30, text: "x" });
    const builder = new SnapshotBuilder();
    const first = builder.entries(sim.project());
    apply(sim, { kind: "edit", at: 4, text: "short" });
    apply(sim, { kind: "append", n: 2, text: "y" });
    const second = builder.entries(sim.project());
    for (let i = 0; i < 30; i++) {
      if (i === 4) expect(second[i]).not.toBe(first[i]);
      else expect(second[i]).toBe(first[i]);
    }
    // The edited entry's snapshot is also reused while the same edit shows.
    expect(builder.entries(sim.project())[4]).toBe(second[4]);
  });

  it("a build that runs while a paced one is paused leaves both right", () => {
    const sim = new Sim();
    apply(sim, { kind: "append", n: 1500, text: "p" });
    const builder = new SnapshotBuilder();
    builder.entries(sim.project());
    apply(sim, { kind: "edit", at: 3, text: "cut" });
    const a = sim.project();
    // A compaction moves every entry: the build of b walks all positions.
    apply(sim, { kind: "compact", keepFrom: 10 });
    apply(sim, { kind: "edit", at: 5, text: "cut" });
    const b = sim.project();
    // The paced build of b pauses after two slices; a redraw builds a in between.
    const paused = builder.steps(b);
    expect(paused.next().done).toBe(false);
    expect(paused.next().done).toBe(false);
    expect(builder.entries(a)).toEqual(new SnapshotBuilder().entries(a));
    let r = paused.next();
    while (!r.done) r = paused.next();
    expect(r.value).toEqual(new SnapshotBuilder().entries(b));
    b.forEach((p, i) => {
      expect(builder.positionOf(p.sourceEntry.id)).toBe(i);
    });
    expect(builder.entries(a)).toEqual(new SnapshotBuilder().entries(a));
  });

  it("paced and straight builds agree", async () => {
    const sim = new Sim();
    apply(sim, { kind: "append", n: 2000, text: "z" });
    const projection = sim.project();
    const pacedBuild = await new SnapshotBuilder().entriesPaced(projection);
    expect(pacedBuild).toEqual(new SnapshotBuilder().entries(projection));
  });
});

describe("WorkerMirror keeps the store exact", () => {
  beforeEach(() => clearStore());

  /** One plan's sync, as run-end sends it, retried once after the store asks for everything. */
  function roundTrip(
    mirror: WorkerMirror,
    snaps: SnapEntry[],
    loseAnswer: boolean,
    ahead = false,
    planFails = false,
  ): SnapEntry[] | undefined {
    for (let attempt = 0; attempt < 2; attempt++) {
      if (ahead) {
        // What a large pass does: the entries go ahead of the plan, without an order.
        const part = { storeId: mirror.storeId, base: mirror.orderVersion, fresh: mirror.prepare(snaps).fresh };
        const out = syncEntries(structuredClone(part));
        if ("missing" in out) {
          mirror.reset(out.storeId);
          continue;
        }
        mirror.accept(out.storeId, part);
        // The plan task failed before it touched the store (its worker call was cut off).
        if (planFails) return undefined;
      }
      const sync = mirror.prepare(snaps);
      const out = syncEntries(structuredClone(sync));
      if ("missing" in out) {
        mirror.reset(out.storeId);
        continue;
      }
      // The worker applied it but the answer never reached the main thread (a task timed out).
      if (!loseAnswer) mirror.accept(out.storeId, sync);
      return out.entries;
    }
    return undefined;
  }

  it.each([
    ["comparing every position", false],
    ["told by the builder what changed", true],
  ])(
    "the store's entries equal the snapshots after every pass, with lost answers and emptied stores (%s)",
    (_, told) => {
      fc.assert(
        fc.property(
          initialArb,
          fc.array(
            fc.tuple(
              opArb,
              fc.constantFrom("ok", "ok", "ok", "lost", "cleared", "ahead", "ahead-lost", "ahead-failed"),
            ),
            { minLength: 1, maxLength: 12 },
          ),
          (initial, steps) => {
            clearStore();
            const sim = new Sim();
            apply(sim, { kind: "append", n: initial, text: "t" });
            const builder = new SnapshotBuilder();
            const mirror = new WorkerMirror(told ? builder : undefined);
            for (const [op, fate] of steps) {
              apply(sim, op);
              const snaps = builder.entries(sim.project());
              if (fate === "cleared") clearStore();
              const failed = fate === "ahead-failed";
              const held = roundTrip(mirror, snaps, fate.endsWith("lost"), fate.startsWith("ahead"), failed);
              if (!failed) expect(held).toEqual(snaps);
            }
          },
        ),
        propertyParams(120),
      );
    },
  );

  it("told by the builder what changed, prepares the very sync a full comparison prepares", () => {
    fc.assert(
      fc.property(
        initialArb,
        fc.array(fc.tuple(opArb, fc.nat(3)), { minLength: 1, maxLength: 12 }),
        (initial, steps) => {
          const sim = new Sim();
          apply(sim, { kind: "append", n: initial, text: "t" });
          const builder = new SnapshotBuilder();
          const told = new WorkerMirror(builder);
          const walks = new WorkerMirror();
          for (const [op, redraws] of steps) {
            apply(sim, op);
            // Footer redraws build projections between passes: the builder's log spans them.
            for (let r = 0; r < redraws; r++) builder.entries(sim.project());
            const snaps = builder.entries(sim.project());
            const a = told.prepare(snaps);
            const b = walks.prepare(snaps);
            expect(a.fresh.map((e) => e.id)).toEqual(b.fresh.map((e) => e.id));
            expect({ keep: a.order?.keep, tail: a.order?.tail }).toEqual({ keep: b.order?.keep, tail: b.order?.tail });
            told.accept("store", a);
            walks.accept("store", b);
          }
        },
      ),
      propertyParams(120),
    );
  });

  it("the builder names what a steady pass must look at: new positions and re-edited ones", () => {
    const sim = new Sim();
    apply(sim, { kind: "append", n: 300, text: "a" });
    const builder = new SnapshotBuilder();
    const first = builder.entries(sim.project());
    apply(sim, { kind: "edit", at: 7, text: "gone" });
    builder.entries(sim.project());
    apply(sim, { kind: "append", n: 5, text: "b" });
    apply(sim, { kind: "edit", at: 42, text: "cut" });
    const now = builder.entries(sim.project());
    expect(builder.changesBetween(first, now)).toEqual({ from: 300, changed: [7, 42] });
    // Back to an earlier entry (both edits undone), then on again: everything from where the branches
    // part may differ, and so may what was edited on the way.
    apply(sim, { kind: "switch", keepTo: 100, n: 0 });
    builder.entries(sim.project());
    apply(sim, { kind: "append", n: 150, text: "c" });
    builder.entries(sim.project());
    apply(sim, { kind: "append", n: 150, text: "d" });
    const later = builder.entries(sim.project());
    expect(builder.changesBetween(first, later)).toEqual({ from: 100, changed: [7, 42] });
    // An array it did not build, or one from too many builds ago: it cannot tell.
    expect(builder.changesBetween([...first], now)).toBeUndefined();
    for (let i = 0; i < 70; i++) builder.entries(sim.project());
    expect(builder.changesBetween(first, builder.entries(sim.project()))).toBeUndefined();
  });

  it("an entry sent ahead of a plan that then failed is not taken for the version the last order had", () => {
    const sim = new Sim();
    apply(sim, { kind: "append", n: 6, text: "a" });
    const builder = new SnapshotBuilder();
    const mirror = new WorkerMirror();
    const before = builder.entries(sim.project());
    expect(roundTrip(mirror, before, false)).toEqual(before);
    // An edit goes ahead of a plan that never reaches the store.
    apply(sim, { kind: "edit", at: 2, text: "short" });
    expect(roundTrip(mirror, builder.entries(sim.project()), false, true, true)).toBeUndefined();
    // The edit is undone (a branch switch): position 2 shows the very snapshot of the last order again.
    apply(sim, { kind: "revert", at: 2 });
    const after = builder.entries(sim.project());
    expect(after[2]).toBe(before[2]);
    expect(roundTrip(mirror, after, false)).toEqual(after);
  });

  it("after the first pass, a pass that appends sends only the new entries and the new ids", () => {
    const sim = new Sim();
    apply(sim, { kind: "append", n: 500, text: "a" });
    const builder = new SnapshotBuilder();
    const mirror = new WorkerMirror(builder);
    roundTrip(mirror, builder.entries(sim.project()), false);
    apply(sim, { kind: "edit", at: 10, text: "gone" });
    apply(sim, { kind: "append", n: 3, text: "b" });
    const sync = mirror.prepare(builder.entries(sim.project()));
    expect(sync.fresh.map((e) => e.id)).toEqual([
      (sim.branch[10] as Source).id,
      ...sim.branch.slice(500).map((s) => s.id),
    ]);
    expect(sync.order).toMatchObject({ keep: 500, tail: sim.branch.slice(500).map((s) => s.id) });
  });
});

describe("paced", () => {
  it("gives the event loop a turn during a long walk", async () => {
    const turns = turnCounter();
    function* walk() {
      const until = performance.now() + 30;
      while (performance.now() < until) yield;
      return "done";
    }
    expect(await paced(walk(), 1)).toBe("done");
    turns.stop();
    expect(turns.turn).toBeGreaterThan(3);
  });
});
