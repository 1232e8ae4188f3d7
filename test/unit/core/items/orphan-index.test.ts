// The orphan index re-reads only the stretch a change can affect: appending entries without messages
// (edits, records) reads nothing, and a re-projected entry reads its own turn, not the session.
import { describe, expect, it } from "vitest";
import { OrphanIndex, type OrphanMessage } from "../../../../src/core/items/orphan-index.ts";

const call = (id: string): OrphanMessage => ({ role: "assistant", content: [{ type: "toolCall", id }] });
const result = (id: string): OrphanMessage => ({ role: "toolResult", toolCallId: id });

function counted(positions: OrphanMessage[][]) {
  let reads = 0;
  const index = new OrphanIndex((i) => {
    reads++;
    return positions[i] ?? [];
  });
  const append = (messages: OrphanMessage[]) => {
    positions.push(messages);
    index.changed(positions.length - 1, positions.length);
  };
  return { index, append, reads: () => reads };
}

describe("OrphanIndex", () => {
  it("reads nothing for appended entries without messages, and one turn for an edit", () => {
    const positions: OrphanMessage[][] = [];
    const { index, append, reads } = counted(positions);
    for (let t = 0; t < 50; t++) {
      append([{ role: "user" }]);
      append([call(`c${t}`)]);
      append([result(`c${t}`)]);
    }
    const before = reads();
    for (let k = 0; k < 1000; k++) append([]);
    expect(reads() - before).toBe(1000);
    expect(index.any).toBe(false);
    // The call of turn 10 omitted by an edit: its result stands apart, found by reading that turn only.
    const edited = reads();
    positions[31] = [];
    index.changed(31, positions.length);
    expect(index.positions).toEqual([32]);
    expect(reads() - edited).toBeLessThan(8);
  });
});
