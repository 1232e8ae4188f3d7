// The oracle's gates count the requests actually left after a pass: the assistant messages after its
// position, up to the next compaction (which rebuilds the context anyway).
import type { SessionEntry } from "@earendil-works/pi-coding-agent";
import { describe, expect, it } from "vitest";
import { oracleFor } from "../../../../src/main/replay/needed-later.ts";

const msg = (id: string, role: string) =>
  ({ type: "message", id, parentId: null, timestamp: "", message: { role, content: [] } }) as unknown as SessionEntry;
const compaction = (id: string) =>
  ({
    type: "compaction",
    id,
    parentId: null,
    timestamp: "",
    summary: "",
    firstKeptEntryId: id,
  }) as unknown as SessionEntry;

describe("oracleFor().requestsAhead", () => {
  it("counts the assistant messages after a position, up to the next compaction", () => {
    const branch = [
      msg("u1", "user"),
      msg("a1", "assistant"),
      msg("a2", "assistant"),
      compaction("c1"),
      msg("a3", "assistant"),
      msg("u2", "user"),
      msg("a4", "assistant"),
    ];
    const oracle = oracleFor(branch, () => 0);
    expect(branch.map((_, i) => oracle.requestsAhead(i))).toEqual([2, 1, 0, 2, 1, 1, 0]);
  });
});
