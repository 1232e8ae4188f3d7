// The gate before the recall signal: on Pi's own projections of generated sessions (recalls, steers,
// several runs), it says no only where the signal finds no recall in the run, and it does say no.
import { SessionManager } from "@earendil-works/pi-coding-agent";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { runMayRecall } from "../../../../src/core/recall/recall-gate.ts";
import { recallsInRun } from "../../../../src/core/recall/recall-signal.ts";
import { type ProjectedLike, SnapshotBuilder } from "../../../../src/main/pass/snapshot.ts";
import { buildSession, propertyParams, sessionArb } from "../../../kit/arbitraries.ts";

/** Sessions whose `mcp_search` calls are recalls instead. */
const withRecalls = sessionArb.map((gen) => ({
  ...gen,
  exchanges: gen.exchanges.map((ex) => ({
    ...ex,
    turns: ex.turns.map((t) => ({
      ...t,
      calls: t.calls.map((c) => (c.tool === "mcp_search" ? { ...c, tool: "recall", args: { entryId: "e1" } } : c)),
    })),
  })),
}));

/** Each prefix of the branch, projected by Pi as a boundary at that point sees it. */
function prefixes(sm: SessionManager): ProjectedLike[][] {
  const header = sm.getHeader();
  const branch = sm.getBranch();
  return branch.map((_, k) => {
    const at = SessionManager.inMemory("/tmp/cg-gate", undefined, [header, ...branch.slice(0, k + 1)] as never);
    return at.buildSessionProjection().entries as unknown as ProjectedLike[];
  });
}

describe("runMayRecall", () => {
  it("is true wherever the run holds a recall, and false somewhere", () => {
    let saidNo = 0;
    fc.assert(
      fc.property(withRecalls, (gen) => {
        for (const context of prefixes(buildSession(gen))) {
          const found = recallsInRun(new SnapshotBuilder().entries(context)).size > 0;
          const gate = runMayRecall(context);
          if (found) expect(gate).toBe(true);
          if (!gate) saidNo++;
        }
      }),
      propertyParams(60),
    );
    expect(saidNo).toBeGreaterThan(0);
  });

  it("reads past a steer, and stops at the run's prompt", () => {
    const sm = SessionManager.inMemory("/tmp/cg-gate");
    const usage = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: {} };
    const assistant = (content: unknown[], stopReason: string) =>
      sm.appendMessage({
        role: "assistant",
        content,
        api: "f",
        provider: "f",
        model: "m",
        usage,
        stopReason,
        timestamp: 1,
      } as never);
    const user = (text: string) =>
      sm.appendMessage({ role: "user", content: [{ type: "text", text }], timestamp: 1 } as never);
    const result = (id: string) =>
      sm.appendMessage({
        role: "toolResult",
        toolCallId: id,
        toolName: "recall",
        content: [{ type: "text", text: "x" }],
        isError: false,
        timestamp: 1,
      } as never);
    const context = () => sm.buildSessionProjection().entries as unknown as ProjectedLike[];
    user("task");
    assistant([{ type: "toolCall", id: "r1", name: "recall", arguments: { entryId: "e" } }], "toolUse");
    result("r1");
    user("a steer");
    assistant([{ type: "toolCall", id: "b1", name: "bash", arguments: { command: "ls" } }], "toolUse");
    expect(runMayRecall(context())).toBe(true);
    assistant([{ type: "text", text: "done" }], "stop");
    user("next task");
    assistant([{ type: "toolCall", id: "b2", name: "bash", arguments: { command: "ls" } }], "toolUse");
    expect(runMayRecall(context())).toBe(false);
  });
});
