import { SessionManager } from "@earendil-works/pi-coding-agent";
import { describe, expect, it } from "vitest";
import { BranchIndex } from "../../../../src/main/session/branch-index.ts";

const user = (sm: SessionManager, text: string) =>
  sm.appendMessage({ role: "user", content: [{ type: "text", text }], timestamp: 1 });
const result = (sm: SessionManager, callId: string) =>
  sm.appendMessage({
    role: "toolResult",
    toolCallId: callId,
    toolName: "bash",
    content: [{ type: "text", text: "x" }],
    isError: false,
    timestamp: 1,
  } as never);

describe("BranchIndex", () => {
  it("matches Pi's branch as entries are appended, and follows /tree to another branch", () => {
    const sm = SessionManager.inMemory("/tmp/cg");
    const index = new BranchIndex();
    const a = user(sm, "a");
    const r1 = result(sm, "c1");
    expect(index.sync(sm).entries.map((e) => e.id)).toEqual(sm.getBranch().map((e) => e.id));
    const r2 = result(sm, "c2");
    expect(index.sync(sm).entries.map((e) => e.id)).toEqual([a, r1, r2]);
    expect(index.entryOfCall.get("c2")).toBe(r2);
    // Branch from r1: r2 leaves the branch, a new entry joins.
    sm.branch(r1);
    const r3 = result(sm, "c3");
    index.sync(sm);
    expect(index.entries.map((e) => e.id)).toEqual(sm.getBranch().map((e) => e.id));
    expect(index.entries.map((e) => e.id)).toEqual([a, r1, r3]);
    expect(index.position.has(r2)).toBe(false);
    expect(index.entryOfCall.has("c2")).toBe(false);
    expect(index.callOf.get(r3)).toBe("c3");
  });
});
