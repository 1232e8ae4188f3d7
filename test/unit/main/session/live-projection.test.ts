// The guard's own projection of the branch, synced from Pi's SessionManager at events, equals Pi's
// projection after every step: appends, context edits, a compaction, and a move to another branch (/tree).
import { SessionManager } from "@earendil-works/pi-coding-agent";
import { describe, expect, it } from "vitest";
import { LiveProjection } from "../../../../src/main/session/live-projection.ts";

const user = (text: string) => ({ role: "user" as const, content: text, timestamp: 1 });
const result = (id: string, text: string) => ({
  role: "toolResult" as const,
  toolCallId: id,
  toolName: "bash",
  content: [{ type: "text" as const, text }],
  isError: false,
  timestamp: 2,
});

/** What the comparison reads: each projected entry's source id and its messages. */
const shape = (entries: ReadonlyArray<{ sourceEntry: { id: string }; messages: readonly unknown[] }>) =>
  entries.map((e) => ({ id: e.sourceEntry.id, messages: e.messages }));

describe("LiveProjection", () => {
  it("equals Pi's projection after each step, reading only what is new", () => {
    const sm = SessionManager.inMemory("/repo");
    const live = new LiveProjection();
    const check = () => expect(shape(live.sync(sm))).toEqual(shape(sm.buildSessionProjection().entries));
    check();
    sm.appendMessage(user("start"));
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) {
      ids.push(sm.appendMessage(result(`c${i}`, `output ${i}`) as never));
      check();
    }
    sm.appendContextEdit(ids[1] as string, { content: [{ type: "text", text: "[gone]" }] });
    sm.appendContextEdit(ids[2] as string, null);
    sm.appendCustomEntry("context-guard", { n: 1 });
    check();
    // Walks back only to the entry it saw last: later syncs do not read the branch whole.
    let reads = 0;
    const counting = {
      getLeafEntry: () => sm.getLeafEntry(),
      getEntry: (id: string) => {
        reads++;
        return sm.getEntry(id);
      },
      getBranch: () => {
        throw new Error("read the whole branch");
      },
    };
    sm.appendMessage(user("next"));
    live.sync(counting);
    expect(reads).toBe(1);
    sm.appendCompaction("so far", ids[4] as string, 100);
    sm.appendMessage(user("after"));
    check();
    // /tree back to an earlier entry, then on from there: a branch it never saw.
    sm.branch(ids[3] as string);
    check();
    sm.appendMessage(user("elsewhere"));
    check();
  });
});
