// What routing reads from Pi's branch: the conversation the routing state digests.
import { describe, expect, it } from "vitest";
import { historyFromBranch } from "../../../../src/main/routing/routing-branch.ts";

describe("the routing history", () => {
  it("takes user and assistant text from the branch, newest first, without tool I/O, up to the compaction", () => {
    const msg = (role: string, content: unknown) => ({ type: "message", id: role, message: { role, content } });
    const branch = [
      msg("user", "before the compaction"),
      { type: "compaction", id: "c", summary: "SUMMARY" },
      msg("user", "first question"),
      msg("assistant", [
        { type: "thinking", thinking: "hmm" },
        { type: "text", text: "let me look" },
        { type: "toolCall", id: "t1", name: "bash", arguments: { command: "cat secret" } },
      ]),
      msg("toolResult", [{ type: "text", text: "TOOL OUTPUT" }]),
      { type: "custom_message", id: "cm", content: "CUSTOM" },
      msg("assistant", [{ type: "text", text: "the answer" }]),
    ];
    const h = historyFromBranch(branch as never);
    expect(h).toEqual([
      { role: "assistant", text: "the answer" },
      { role: "assistant", text: "let me look" },
      { role: "user", text: "first question" },
      { role: "summary", text: "SUMMARY" },
    ]);
  });
});
