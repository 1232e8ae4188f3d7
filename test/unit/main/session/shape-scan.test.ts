// The boundary's scan for a result apart from its call reads the context's entries in place; it answers
// as the scan of the flattened message list does, on Pi's projections with and without such results.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { ProjectedLike } from "../../../../src/main/pass/snapshot.ts";
import { needsShapeCheck, needsShapeCheckIn } from "../../../../src/main/session/boundary-shape.ts";
import { buildSession, propertyParams, sessionArb } from "../../../kit/arbitraries.ts";

describe("needsShapeCheckIn", () => {
  it("agrees with the flat scan, orphans or not", () => {
    let orphans = 0;
    fc.assert(
      fc.property(sessionArb, fc.nat(), (gen, pick) => {
        const sm = buildSession(gen);
        const calls = sm.getBranch().filter((e) => e.type === "message" && e.message.role === "assistant");
        // Omitting one assistant message leaves its results (if any) apart from their calls.
        const target = calls[pick % Math.max(1, calls.length)];
        if (target && pick % 2 === 0) sm.appendContextEdit(target.id, null);
        const context = sm.buildSessionProjection().entries as unknown as ProjectedLike[];
        const flat = needsShapeCheck(
          [],
          context.flatMap((p) => p.messages),
        );
        if (flat) orphans++;
        expect(needsShapeCheckIn([], context)).toBe(flat);
      }),
      propertyParams(120),
    );
    expect(orphans).toBeGreaterThan(0);
  });
});
