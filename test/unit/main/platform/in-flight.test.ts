import { describe, expect, it } from "vitest";
import { InFlight } from "../../../../src/main/platform/in-flight.ts";

describe("InFlight (bookkeeping of requests and windows in flight)", () => {
  it("counts, hands back and forgets items by id", () => {
    const table = new InFlight<string>();
    table.set(3, "c");
    table.set(1, "a");
    table.set(1, "a2");
    expect(table.size).toBe(2);
    expect(table.get(1)).toBe("a2");
    expect(table.take(1)).toBe("a2");
    expect(table.take(1)).toBeUndefined();
    expect(table.get(1)).toBeUndefined();
    expect(table.size).toBe(1);
    table.set(0, "zero");
    expect(table.drain()).toEqual([
      [0, "zero"],
      [3, "c"],
    ]);
    expect(table.size).toBe(0);
    expect(table.take(3)).toBeUndefined();
  });

  it("releases an id only while it still holds the given item", () => {
    const table = new InFlight<{ n: number }>();
    const first = { n: 1 };
    const second = { n: 2 };
    table.set(5, first);
    table.set(5, second);
    table.release(5, first);
    expect(table.get(5)).toBe(second);
    expect(table.size).toBe(1);
    table.release(5, second);
    expect(table.get(5)).toBeUndefined();
    expect(table.size).toBe(0);
  });

  it("treats falsy items as present", () => {
    const table = new InFlight<number>();
    table.set(7, 0);
    expect(table.size).toBe(1);
    expect(table.take(7)).toBe(0);
    expect(table.size).toBe(0);
  });
});
