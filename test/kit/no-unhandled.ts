/** A test file's guard against promise rejections that nobody handled while it ran. */
import { afterAll, expect } from "vitest";

/** Collects unhandled rejections from now on; the file's afterAll expects none. */
export function failOnUnhandledRejections(): void {
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);
  process.on("unhandledRejection", onUnhandled);
  afterAll(() => {
    process.off("unhandledRejection", onUnhandled);
    expect(unhandled).toEqual([]);
  });
}
