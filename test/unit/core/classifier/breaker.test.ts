import { describe, expect, it } from "vitest";
import { Breaker, retryAfterMs } from "../../../../src/core/classifier/breaker.ts";

const failed = { sent: 3, answered: 0, error: "System One API error (500)" };

describe("Breaker", () => {
  it("stays closed through one failed pass and opens at the second in a row", () => {
    const b = new Breaker({ baseMs: 30_000 });
    expect(b.report(0, failed)).toBe(false);
    expect(b.allow(1)).toBe(true);
    expect(b.report(1, failed)).toBe(true);
    expect(b.allow(2)).toBe(false);
    expect(b.state(2)).toMatchObject({ kind: "open", until: 30_001, failures: 2, error: failed.error });
  });

  it("a pass with one answer resets the count", () => {
    const b = new Breaker();
    b.report(0, failed);
    b.report(1, { sent: 5, answered: 1 });
    expect(b.report(2, failed)).toBe(false);
    expect(b.allow(3)).toBe(true);
  });

  it("ignores passes that sent nothing or were aborted from outside", () => {
    const b = new Breaker();
    b.report(0, { sent: 0, answered: 0 });
    b.report(0, { ...failed, aborted: true });
    b.report(0, failed);
    expect(b.allow(1)).toBe(true);
  });

  it("lets one probe through after the pause, and doubles the pause when it fails", () => {
    const b = new Breaker({ baseMs: 1000, maxMs: 3000 });
    b.report(0, failed);
    b.report(0, failed);
    expect(b.allow(999)).toBe(false);
    expect(b.allow(1000)).toBe(true);
    expect(b.report(1500, failed)).toBe(true);
    expect(b.allow(3499)).toBe(false);
    expect(b.allow(3500)).toBe(true);
    b.report(3500, failed);
    // capped at maxMs
    expect(b.state(3501)).toMatchObject({ kind: "open", until: 6500 });
    expect(b.allow(6500)).toBe(true);
    b.report(6500, { sent: 1, answered: 1 });
    expect(b.state(6501)).toEqual({ kind: "closed" });
    // back to the base pause after a success
    b.report(7000, failed);
    b.report(7000, failed);
    expect(b.state(7001)).toMatchObject({ until: 8000 });
  });

  it("holds off for a server's retry-after, within maxMs", () => {
    const b = new Breaker({ maxMs: 60_000 });
    b.holdOff(0, 120_000, "HTTP 429");
    expect(b.allow(59_999)).toBe(false);
    expect(b.allow(60_000)).toBe(true);
    b.holdOff(0, 0);
    expect(b.allow(60_001)).toBe(true);
  });
});

describe("Breaker.reset", () => {
  it("closes at once and starts counting afresh", () => {
    const b = new Breaker({ baseMs: 1000 });
    b.report(0, failed);
    b.report(0, failed);
    expect(b.allow(10)).toBe(false);
    b.reset();
    expect(b.allow(10)).toBe(true);
    expect(b.report(10, failed)).toBe(false);
  });
});

describe("retryAfterMs", () => {
  it("reads seconds, HTTP dates and retry-after-ms", () => {
    const now = Date.parse("2026-12-01T12:00:00Z");
    expect(retryAfterMs("120", null, now)).toBe(120_000);
    expect(retryAfterMs("Tue, 01 Dec 2026 12:01:00 GMT", null, now)).toBe(60_000);
    expect(retryAfterMs("120", "1500", now)).toBe(1500);
    expect(retryAfterMs("soon", null, now)).toBeUndefined();
    expect(retryAfterMs(null, null, now)).toBeUndefined();
    expect(retryAfterMs("0", null, now)).toBeUndefined();
  });
});
