import { describe, expect, it } from "vitest";
import { HandOver } from "../../../../src/main/session/hand-over.ts";

describe("HandOver", () => {
  it("stops what holds the boundary when a steer or follow-up comes, and says so until it is done", async () => {
    const handOver = new HandOver();
    const stop = new AbortController();
    let redrawn = 0;
    let release: () => void = () => undefined;
    const held = handOver.hold(
      stop,
      () =>
        new Promise<string>((resolve) => {
          release = () => resolve("answered part");
        }),
      () => redrawn++,
    );
    expect(handOver.input(undefined)).toBe(false);
    expect(stop.signal.aborted).toBe(false);
    expect(handOver.input("followUp")).toBe(true);
    expect(stop.signal.aborted).toBe(true);
    expect(handOver.waiting).toBe(true);
    release();
    expect(await held).toBe("answered part");
    expect(handOver.waiting).toBe(false);
    expect(redrawn).toBe(1);
  });

  it("does not hold a boundary for a prompt queued before it started, until a turn takes it up", async () => {
    const handOver = new HandOver();
    expect(handOver.input("steer")).toBe(false);
    const first = new AbortController();
    await handOver.hold(
      first,
      async () => undefined,
      () => undefined,
    );
    expect(first.signal.aborted).toBe(true);
    handOver.turnStarted();
    const second = new AbortController();
    await handOver.hold(
      second,
      async () => undefined,
      () => undefined,
    );
    expect(second.signal.aborted).toBe(false);
  });
});
