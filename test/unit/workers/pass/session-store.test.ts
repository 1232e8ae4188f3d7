// The store hands a plan the projection it was sent, whether the order only grew (the last one extended,
// edited entries in their places) or lost entries; and its index stands for that very projection.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { sessionReads } from "../../../../src/core/distill/plan-index.ts";
import type { SnapEntry } from "../../../../src/core/shared/types.ts";
import { SessionStores } from "../../../../src/workers/pass/session-store.ts";
import { propertyParams } from "../../../kit/arbitraries.ts";
import { assistantEntry, toolCall, toolResultEntry, userEntry } from "../../../kit/snap.ts";

type Step = { kind: "add"; n: number } | { kind: "edit"; pick: number } | { kind: "cut"; keep: number };

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant("add" as const), n: fc.integer({ min: 1, max: 6 }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("edit" as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("cut" as const), keep: fc.nat() }) },
);

describe("SessionStores.sync", () => {
  it("returns each projection as sent, boundary after boundary", () => {
    fc.assert(
      fc.property(fc.array(fc.array(stepArb, { maxLength: 4 }), { minLength: 1, maxLength: 30 }), (boundaries) => {
        const stores = new SessionStores();
        let sent: SnapEntry[] = [];
        let storeId: string | undefined;
        let base: number | undefined;
        let n = 0;
        for (const [version, steps] of boundaries.entries()) {
          const now = sent.slice();
          const fresh: SnapEntry[] = [];
          for (const step of steps) {
            if (step.kind === "add") {
              for (let k = 0; k < step.n; k++) {
                const e =
                  n % 3 === 0
                    ? userEntry(`u${n}`, "q")
                    : n % 3 === 1
                      ? assistantEntry(`a${n}`, "", [toolCall(`c${n}`, "bash")])
                      : toolResultEntry(`r${n}`, `c${n - 1}`, "bash", "out");
                n++;
                now.push(e);
                fresh.push(e);
              }
            } else if (step.kind === "edit" && now.length > 0) {
              const at = step.pick % now.length;
              const e = { ...(now[at] as SnapEntry), edited: true, text: `[context-guard] ${step.pick}` };
              now[at] = e;
              fresh.push(e);
            } else if (step.kind === "cut") now.splice(step.keep % (now.length + 1));
          }
          let keep = 0;
          while (keep < now.length && keep < sent.length && now[keep]?.id === sent[keep]?.id) keep++;
          const tail = now.slice(keep).map((e) => e.id);
          const out = stores.sync({ storeId, base, fresh, order: { keep, tail, version } });
          if (!("entries" in out)) throw new Error(`store started over: ${JSON.stringify(out)}`);
          expect(out.entries.map((e) => e.id)).toEqual(now.map((e) => e.id));
          expect(out.entries).toEqual(now);
          expect(sessionReads(out.entries, out.index).positionOf(now.at(-1)?.id ?? "")).toBe(now.length - 1);
          storeId = out.storeId;
          base = version;
          sent = now;
        }
      }),
      propertyParams(200),
    );
  });
});
