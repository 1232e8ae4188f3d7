// Between boundaries, what makes the next turn_end the guard's, as Pi's events reach the boundary machine:
// a tool turn (a checkpoint may start), the run's last turn, a possible recall, a branch to repair, a
// pending restore.
import { describe, expect, it } from "vitest";
import { type BoundaryEvent, initial, type Machine, step, turnEndDue } from "../../../../src/core/boundary/machine.ts";
import { boundaryDone, branchEvent, messageEvent } from "../../../../src/main/session/turn-watch.ts";

const call = (name: string) => [{ type: "toolCall", id: "c1", name, arguments: {} }];
/** A session whose guard is off for the boundary's own reasons: only the turn's flags make turn_end due. */
const quiet = (): Machine => ({
  ...initial({ enabled: false, midRun: true, midRunWait: false, waitsWhole: false }),
  turn: { toolTurn: false, lastTurn: false, recallMaybe: false, repairDue: false, restoresDue: false },
});
const send = (m: Machine, ...events: BoundaryEvent[]) => events.reduce((s, e) => step(s, e).state, m);

describe("the turn's flags in the machine", () => {
  it("a tool turn is taken once at turn_start; a reply without a tool call makes the run's last turn", () => {
    let m = send(quiet(), messageEvent({ role: "assistant", content: call("bash") }));
    expect(m.turn.lastTurn).toBe(false);
    m = send(m, messageEvent({ role: "toolResult", content: [] }));
    expect(m.turn.toolTurn).toBe(true);
    m = send(m, { type: "turn-start" });
    expect(m.turn.toolTurn).toBe(false);
    m = send(m, messageEvent({ role: "assistant", content: [{ type: "text", text: "done" }] }));
    expect(m.turn.lastTurn).toBe(true);
    expect(turnEndDue(m)).toBe(false);
  });

  it("the run's last turn is due when the run end waits whole for a pending pass", () => {
    const settings = { enabled: true, midRun: true, midRunWait: false, waitsWhole: true };
    let m = send({ ...quiet(), settings }, messageEvent({ role: "toolResult" }), { type: "turn-start" });
    expect(m.slot.pending).toBeDefined();
    expect(turnEndDue(m)).toBe(false);
    m = send(m, messageEvent({ role: "assistant", content: [] }));
    expect(turnEndDue(m)).toBe(true);
  });

  it("a recall call, a branch to repair or a pending restore makes turn_end due", () => {
    let m = send(quiet(), messageEvent({ role: "assistant", content: call("recall") }));
    expect(m.turn.recallMaybe).toBe(true);
    expect(m.hook || turnEndDue(m)).toBe(true);
    // A boundary read the run: no recall call in it now, nothing to repair.
    m = send(m, boundaryDone([]));
    expect(turnEndDue(m)).toBe(false);
    m = send(m, { type: "orphan" });
    expect(turnEndDue(m)).toBe(true);
    m = send(m, boundaryDone([]), { type: "restores", pending: true });
    expect(turnEndDue(m)).toBe(true);
    m = send(m, { type: "recall" }, boundaryDone([]), { type: "restores", pending: false });
    expect(turnEndDue(m)).toBe(false);
  });

  it("a branch read at start: nothing apart, no recall in an empty run; one that cannot be read needs both", () => {
    expect(branchEvent(() => [])).toEqual({
      event: { type: "branch", recallMaybe: false, repairDue: false },
      apart: [],
    });
    const unread = branchEvent(() => {
      throw new Error("unreadable");
    });
    expect(unread.event).toEqual({ type: "branch", recallMaybe: true, repairDue: true });
  });
});
