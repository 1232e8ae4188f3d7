// An omitted exchange's stub carries the key facts its messages and tool calls held; one that is not
// omitted is never scanned for them.
import { describe, expect, it } from "vitest";
import { findRunStart } from "../../../../src/core/distill/run.ts";
import { collectExchanges, withKeyFacts } from "../../../../src/core/items/exchanges.ts";
import type { SnapEntry } from "../../../../src/core/shared/types.ts";
import { assistantEntry, callResultEntry, toolCall, userEntry } from "../../../kit/snap.ts";

const JOB = "636322f1-f10c-4d50-8af4-325bcb8721c0";

function session(): SnapEntry[] {
  const call = toolCall("c1", "bash", { command: "clawdbot cron list --json" });
  const filler = "the weekly job ran on schedule and finished without errors\n".repeat(60);
  return [
    userEntry("u1", "Set up the weekly business nudge"),
    assistantEntry("a1", "", [call]),
    callResultEntry("t1", call, `${filler}{"id": "${JOB}", "file": "notes/anthony-business-todos.md"}`),
    assistantEntry("a2", `Created the job ${JOB}; it posts to https://hooks.example.com/v1/nudge.`),
    userEntry("u2", "Now something else"),
    assistantEntry("a3", "Done."),
  ];
}

describe("withKeyFacts", () => {
  it("lists the exchange's id, URL and path on its stub, keeping it shorter than the exchange", () => {
    const entries = session();
    const [ex] = collectExchanges(
      entries,
      findRunStart(entries),
      { pruneExchanges: true, keepRecentExchanges: 0 },
      new Set(),
    );
    expect(ex?.stub).not.toContain("It held");
    const shown = withKeyFacts(ex!, entries);
    expect(shown.stub).toContain(
      `messages, ~951 tokens). It held: https://hooks.example.com/v1/nudge, ${JOB}, notes/anthony-business-todos.md. Full exchange: recall({"entryId":"u1"}).`,
    );
    expect(shown.stub.length).toBeLessThan(shown.chars);
    expect({ ...shown, stub: ex!.stub }).toEqual(ex);
  });
});
