// The boundary object's hand-over: a prompt stops what holds a boundary, and the state says so until the
// boundary lets go (the transitions themselves: test/unit/core/boundary/boundary-state.test.ts).
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import { describe, expect, it } from "vitest";
import { Boundary, type BoundaryHost } from "../../../../src/main/session/boundary.ts";

const ctx = {} as ExtensionContext;

function boundary(): { boundary: Boundary; redrawn: () => number } {
  let redrawn = 0;
  const config = { enabled: true, midRun: true, midRunWait: false, settleBudgetMs: 150, timeoutMs: 30_000 };
  const host = { draw: () => redrawn++, config: () => config } as unknown as BoundaryHost;
  return { boundary: new Boundary(host), redrawn: () => redrawn };
}

describe("Boundary: the hand-over", () => {
  it("stops what holds the boundary when a steer or follow-up comes, and says so until it is done", async () => {
    const { boundary: b, redrawn } = boundary();
    const stop = new AbortController();
    let release: () => void = () => undefined;
    const held = b.hold(
      stop,
      ctx,
      () =>
        new Promise<string>((resolve) => {
          release = () => resolve("answered part");
        }),
    );
    expect(b.input(undefined)).toBe(false);
    expect(stop.signal.aborted).toBe(false);
    expect(b.input("followUp")).toBe(true);
    expect(stop.signal.aborted).toBe(true);
    expect(b.view).toBe("handing-over");
    // A second prompt changes nothing more.
    expect(b.input("steer")).toBe(false);
    release();
    expect(await held).toBe("answered part");
    expect(b.state).toEqual({ kind: "idle", handingOver: false });
    expect(redrawn()).toBe(1);
  });

  it("does not hold a boundary for a prompt queued before it started, until a turn takes it up", async () => {
    const { boundary: b, redrawn } = boundary();
    expect(b.input("steer")).toBe(false);
    const first = new AbortController();
    await b.hold(first, ctx, async () => undefined);
    expect(first.signal.aborted).toBe(true);
    // Stopped from the start: no prompt waited on this boundary, so the footer had nothing to say.
    expect(b.view).toBe("quiet");
    expect(redrawn()).toBe(0);
    b.turnStarted(ctx, () => []);
    const second = new AbortController();
    await b.hold(second, ctx, async () => undefined);
    expect(second.signal.aborted).toBe(false);
  });

  it("is closed for good: nothing more is held or shown", async () => {
    const { boundary: b } = boundary();
    b.close();
    expect(b.closed).toBe(true);
    const stop = new AbortController();
    const held = b.hold(stop, ctx, () => new Promise<void>((resolve) => setTimeout(resolve, 1)));
    b.input("followUp");
    await held;
    expect(b.state).toEqual({ kind: "closed" });
    expect(b.view).toBe("quiet");
  });
});
