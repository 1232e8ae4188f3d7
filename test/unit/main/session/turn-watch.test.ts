// Between boundaries, what makes the next turn_end the guard's: a tool turn (a checkpoint may start), the
// run's last turn, a possible recall, a branch to repair, a pending restore.
import { describe, expect, it } from "vitest";
import { TurnWatch } from "../../../../src/main/session/turn-watch.ts";

/** Due for the watch's own reasons: the boundary has none and no restore waits. */
const dueAlone = (w: TurnWatch) =>
  w.due(
    () => false,
    () => false,
  );
const call = (name: string) => [{ type: "toolCall", id: "c1", name, arguments: {} }];

describe("TurnWatch", () => {
  it("a tool turn is taken once at turn_start; a reply without a tool call makes the run's last turn", () => {
    const w = new TurnWatch();
    w.recallMaybe = false;
    w.messageEnd({ role: "assistant", content: call("bash") });
    expect(w.lastTurn).toBe(false);
    w.messageEnd({ role: "toolResult", content: [] });
    expect(w.takeToolTurn()).toBe(true);
    expect(w.takeToolTurn()).toBe(false);
    w.messageEnd({ role: "assistant", content: [{ type: "text", text: "done" }] });
    expect(w.lastTurn).toBe(true);
    const seen: boolean[] = [];
    expect(
      w.due(
        (last) => {
          seen.push(last);
          return false;
        },
        () => false,
      ),
    ).toBe(false);
    expect(seen).toEqual([true]);
  });

  it("a recall call, a branch to repair or a pending restore makes turn_end due", () => {
    const w = new TurnWatch();
    w.recallMaybe = false;
    expect(dueAlone(w)).toBe(false);
    w.messageEnd({ role: "assistant", content: call("recall") });
    expect(w.recallMaybe).toBe(true);
    expect(dueAlone(w)).toBe(true);
    // A boundary read the run: no recall call in it now, nothing to repair.
    w.boundaryDone([]);
    expect(w.recallMaybe).toBe(false);
    w.repairDue = true;
    expect(dueAlone(w)).toBe(true);
    w.boundaryDone([]);
    expect(
      w.due(
        () => false,
        () => true,
      ),
    ).toBe(true);
    // A restore check that fails counts as due: the boundary looks again.
    expect(
      w.due(
        () => false,
        () => {
          throw new Error("no branch");
        },
      ),
    ).toBe(true);
  });

  it("a branch read at start: nothing apart, no recall in an empty run", () => {
    const w = new TurnWatch();
    expect(w.checkBranch(() => [])).toEqual([]);
    expect(w.recallMaybe).toBe(false);
    expect(w.repairDue).toBe(false);
    // A branch that cannot be read leaves both due.
    expect(() =>
      w.checkBranch(() => {
        throw new Error("unreadable");
      }),
    ).toThrow();
    expect(w.recallMaybe && w.repairDue).toBe(true);
  });
});
