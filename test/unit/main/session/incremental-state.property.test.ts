// The state the guard keeps entry by entry on Pi's thread equals a fresh walk of the whole branch after
// any sequence of appends: the projection's orphan marks (tool results apart from their calls) and the
// footer's savings, pins and lifetime totals. Random sessions mix tool turns, errors, orphans, duplicate
// results, context edits, guard records, pins, compactions and moves to another branch (/tree).
import { SessionManager } from "@earendil-works/pi-coding-agent";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type OrphanMessage, stepOpen } from "../../../../src/core/items/orphan-index.ts";
import { PIN_TYPE, readPins } from "../../../../src/core/records/pins.ts";
import { currentSavings, lifetime } from "../../../../src/core/records/stats.ts";
import { RECORD_TYPE } from "../../../../src/core/shared/types.ts";
import { type ProjectedLike, SnapshotBuilder } from "../../../../src/main/pass/snapshot.ts";
import { withoutOrphans } from "../../../../src/main/session/boundary-shape.ts";
import { FooterFacts } from "../../../../src/main/session/footer-facts.ts";
import { LiveProjection } from "../../../../src/main/session/live-projection.ts";
import { propertyParams } from "../../../kit/arbitraries.ts";
import { FAUX_USAGE } from "../../../kit/pi-messages.ts";

type Op =
  | { k: "user" }
  | { k: "calls"; n: number; error: boolean }
  | { k: "result"; pick: number }
  | { k: "stray" }
  | { k: "edit"; pick: number; omit: boolean }
  | { k: "record"; pick: number }
  | { k: "pin"; pick: number; restore: boolean }
  | { k: "custom" }
  | { k: "compact"; pick: number }
  | { k: "tree"; pick: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 3, arbitrary: fc.constant({ k: "user" as const }) },
  {
    weight: 4,
    arbitrary: fc.record({ k: fc.constant("calls" as const), n: fc.integer({ min: 0, max: 3 }), error: fc.boolean() }),
  },
  { weight: 6, arbitrary: fc.record({ k: fc.constant("result" as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.constant({ k: "stray" as const }) },
  { weight: 3, arbitrary: fc.record({ k: fc.constant("edit" as const), pick: fc.nat(), omit: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant("record" as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant("pin" as const), pick: fc.nat(), restore: fc.boolean() }) },
  { weight: 1, arbitrary: fc.constant({ k: "custom" as const }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant("compact" as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant("tree" as const), pick: fc.nat() }) },
);

let clock = 1;
const assistant = (calls: string[], error: boolean) => ({
  role: "assistant" as const,
  content: calls.length
    ? calls.map((id) => ({ type: "toolCall" as const, id, name: "bash", arguments: {} }))
    : [{ type: "text" as const, text: "done" }],
  api: "faux",
  provider: "faux",
  model: "faux-1",
  usage: FAUX_USAGE,
  stopReason: error ? ("error" as const) : calls.length ? ("toolUse" as const) : ("stop" as const),
  timestamp: clock++,
});
const result = (callId: string) => ({
  role: "toolResult" as const,
  toolCallId: callId,
  toolName: "bash",
  content: [{ type: "text" as const, text: `output of ${callId} `.repeat(5) }],
  isError: false,
  timestamp: clock++,
});

/** Applies one step to the session; steps that do not fit the branch do nothing. */
function apply(sm: SessionManager, op: Op, calls: string[]): void {
  const branch = sm.getBranch();
  const messages = branch.filter((e) => e.type === "message");
  const pick = <T>(list: readonly T[], n: number) => (list.length ? list[n % list.length] : undefined);
  switch (op.k) {
    case "user":
      sm.appendMessage({ role: "user", content: "go on", timestamp: clock++ });
      return;
    case "calls": {
      const ids = Array.from({ length: op.n }, () => `call${clock++}`);
      calls.push(...ids);
      sm.appendMessage(assistant(ids, op.error) as never);
      return;
    }
    case "result": {
      const id = pick(calls, op.pick);
      if (id) sm.appendMessage(result(id) as never);
      return;
    }
    case "stray":
      sm.appendMessage(result(`stray${clock++}`) as never);
      return;
    case "edit": {
      const target = pick(messages, op.pick);
      const role = (target as { message?: { role?: string } } | undefined)?.message?.role;
      if (!target || (role !== "user" && role !== "assistant" && role !== "toolResult")) return;
      sm.appendContextEdit(target.id, op.omit ? null : { content: [{ type: "text", text: "[guarded]" }] });
      return;
    }
    case "record": {
      const target = pick(messages, op.pick);
      if (!target) return;
      const results = [{ kind: "output", entryId: target.id, outcome: "removed", reason: "r", beforeChars: 90 }];
      sm.appendCustomEntry(RECORD_TYPE, { phase: "mid-run", savedChars: 40, requests: 1, results });
      return;
    }
    case "pin": {
      const target = pick(messages, op.pick);
      if (target) sm.appendCustomEntry(PIN_TYPE, { v: 1, action: op.restore ? "restore" : "pin", ids: [target.id] });
      return;
    }
    case "custom":
      sm.appendCustomEntry("other", { n: clock++ });
      return;
    case "compact": {
      const kept = pick(messages, op.pick);
      if (kept) sm.appendCompaction("so far", kept.id, 100);
      return;
    }
    case "tree": {
      const to = pick(branch, op.pick);
      if (to) sm.branch(to.id);
      return;
    }
  }
}

/** The orphan marks of a fresh walk of Pi's projection. */
function freshOrphans(entries: ReadonlyArray<{ messages: readonly unknown[] }>): number[] {
  const out: number[] = [];
  let open: string[] = [];
  entries.forEach((p, i) => {
    let orphan = false;
    for (const m of p.messages as OrphanMessage[]) {
      const next = stepOpen(open, m);
      if (next) open = next;
      else orphan = true;
    }
    if (orphan) out.push(i);
  });
  return out;
}

const requestOf = (sm: SessionManager) =>
  sm.buildSessionProjection().messages.filter((m) => (m as { role?: string }).role !== "system");

describe("state kept per appended entry", () => {
  it("equals a fresh walk of the branch after every step", () => {
    fc.assert(
      fc.property(fc.array(opArb, { minLength: 1, maxLength: 60 }), (ops) => {
        const sm = SessionManager.inMemory("/repo");
        const live = new LiveProjection();
        const facts = new FooterFacts();
        const builder = new SnapshotBuilder();
        const calls: string[] = [];
        sm.appendMessage({ role: "user", content: "start", timestamp: clock++ });
        for (const op of ops) {
          apply(sm, op, calls);
          const projection = sm.buildSessionProjection().entries;
          live.update(sm);
          expect(live.orphanPositions).toEqual(freshOrphans(projection));
          // Vouching for a request never hides an orphan the full read would find.
          const request = requestOf(sm);
          const whole = live.requestWhole(sm, request);
          expect(whole).toBe(freshOrphans(projection).length === 0);
          if (whole) expect(withoutOrphans(request)).toBeUndefined();
          expect(live.contextWhole(sm, projection)).toBe(whole);
          const snap = builder.entries(projection as unknown as ProjectedLike[]);
          const shown = facts.shown(snap, builder);
          expect(shown.savings).toEqual(currentSavings(snap));
          expect(shown.pins).toEqual(readPins(snap));
          expect(facts.lifetime(sm)).toEqual(lifetime(sm.getBranch()));
        }
      }),
      propertyParams(150),
    );
  });

  it("does not vouch for messages that are not the projection's", () => {
    const sm = SessionManager.inMemory("/repo");
    const live = new LiveProjection();
    sm.appendMessage({ role: "user", content: "start", timestamp: clock++ });
    sm.appendMessage(assistant(["a1"], false) as never);
    sm.appendMessage(result("a1") as never);
    const request = requestOf(sm);
    expect(live.requestWhole(sm, request)).toBe(true);
    // Another extension dropped the call: the request is read, and the result goes.
    expect(live.requestWhole(sm, [request[0], request[2]])).toBe(false);
    expect(withoutOrphans([request[0], request[2]])).toEqual([request[0]]);
  });
});
