// A boundary whose run holds no recall call does not build the snapshot for the recall signal (on Pi's
// thread, at every boundary); one whose run does is still read.
import { SessionManager } from "@earendil-works/pi-coding-agent";
import { describe, expect, it } from "vitest";
import { type ProjectedLike, SnapshotBuilder } from "../../../../src/main/pass/snapshot.ts";
import { PendingRestores, restoringDrafts } from "../../../../src/main/session/restore.ts";

const usage = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, cost: {} };

function run(recall: boolean) {
  const sm = SessionManager.inMemory("/tmp/cg-restore-gate");
  const assistant = (content: unknown[]) =>
    sm.appendMessage({
      role: "assistant",
      content,
      api: "f",
      provider: "f",
      model: "m",
      usage,
      stopReason: "toolUse",
      timestamp: 1,
    } as never);
  const result = (id: string, toolName: string, text: string) =>
    sm.appendMessage({
      role: "toolResult",
      toolCallId: id,
      toolName,
      content: [{ type: "text", text }],
      isError: false,
      timestamp: 1,
    } as never);
  sm.appendMessage({ role: "user", content: [{ type: "text", text: "task" }], timestamp: 1 } as never);
  assistant([{ type: "toolCall", id: "b1", name: "bash", arguments: { command: "cat log" } }]);
  const log = result("b1", "bash", "line\n".repeat(400));
  sm.appendContextEdit(log, { content: [{ type: "text", text: "[context-guard] distilled" }] });
  const tool = recall ? "recall" : "bash";
  assistant([{ type: "toolCall", id: "r1", name: tool, arguments: { entryId: log } }]);
  result("r1", tool, "line\n".repeat(400));
  const context = sm.buildSessionProjection().entries as unknown as ProjectedLike[];
  const builder = new SnapshotBuilder();
  let built = 0;
  const snapshots = {
    entries: (c: readonly ProjectedLike[]) => {
      built++;
      return builder.entries(c);
    },
  };
  const event = { context: { contextEntries: context }, entries: [] } as never;
  const drafts = restoringDrafts(new PendingRestores(), snapshots, event, { sessionManager: sm } as never);
  return { built, drafts };
}

describe("restoringDrafts", () => {
  it("builds no snapshot when the run recalled nothing", () => {
    const { built, drafts } = run(false);
    expect(drafts).toEqual([]);
    expect(built).toBe(0);
  });

  // What the signal then restores is test/e2e/recall-signal.test.ts's.
  it("still reads the run when it recalled", () => {
    expect(run(true).built).toBe(1);
  });
});
