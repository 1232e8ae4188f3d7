// The state the footer and `/guard` read, as the machine's events make it: one test per event that moves
// it, from the states it applies to and from those it leaves alone (the machine itself: machine.test.ts).
import { describe, expect, it } from "vitest";
import { type BoundaryState, boundaryView, shown } from "../../../../src/core/boundary/boundary-state.ts";
import { type BoundaryEvent, initial, type Machine, step } from "../../../../src/core/boundary/machine.ts";

const settings = { enabled: true, midRun: true, midRunWait: false, waitsWhole: false };
const IDLE: BoundaryState = { kind: "idle", handingOver: false };
const asking: BoundaryState = { kind: "asking", phase: "run-end", handingOver: false };
const behind: BoundaryState = { kind: "background", phase: "mid-run", asking: false, handingOver: false };
const behindAsking: BoundaryState = { kind: "background", phase: "mid-run", asking: true, handingOver: false };

function run(...events: BoundaryEvent[]): Machine {
  return events.reduce((m, e) => step(m, e).state, initial(settings));
}
/** A checkpoint started at a turn after a tool turn (job 1). */
const checkpoint: BoundaryEvent[] = [{ type: "message", role: "toolResult" }, { type: "turn-start" }];

describe("the boundary state as the machine moves it", () => {
  it("ask and answered: the boundary's own pass asks from idle, not beside a pass behind the agent", () => {
    expect(shown(run({ type: "ask", phase: "run-end" }))).toEqual(asking);
    expect(shown(run({ type: "ask", phase: "run-end" }, { type: "answered" }))).toEqual(IDLE);
    expect(shown(run(...checkpoint, { type: "ask", phase: "run-end" }))).toEqual(behind);
  });

  it("a checkpoint is behind the agent from its start, and asking once it asks, until it stops", () => {
    expect(shown(run(...checkpoint))).toEqual(behind);
    expect(shown(run(...checkpoint, { type: "job-asking", id: 1 }))).toEqual(behindAsking);
    expect(shown(run(...checkpoint, { type: "job-asking", id: 1 }, { type: "quiet", id: 1 }))).toEqual(behind);
  });

  it("adopt: the boundary stops waiting for its pass, which goes on asking behind the agent", () => {
    expect(shown(run({ type: "ask", phase: "run-end" }, { type: "adopt", phase: "run-end" }))).toEqual({
      kind: "background",
      phase: "run-end",
      asking: true,
      handingOver: false,
    });
  });

  it("a pass behind the agent is gone once it lands, or at once when it ends with nothing to land", () => {
    const ended = [...checkpoint, { type: "begun", id: 1 }, { type: "ended", id: 1, drafts: true }] as BoundaryEvent[];
    expect(shown(run(...ended))).toEqual(behind);
    expect(shown(run(...ended, { type: "land", onBranch: () => true }))).toEqual(IDLE);
    expect(shown(run(...checkpoint, { type: "ended", id: 1, drafts: false }))).toEqual(IDLE);
  });

  it("prompt and release: a waiting boundary hands over, whatever its pass does, until it lets go", () => {
    const hold: BoundaryEvent = { type: "hold", stoppable: true };
    for (const before of [[], [{ type: "ask", phase: "run-end" }], checkpoint] as BoundaryEvent[][]) {
      const handing = run(...before, hold, { type: "prompt" });
      expect(shown(handing)).toEqual({ ...shown(run(...before)), handingOver: true });
      expect(shown(step(handing, { type: "release" }).state)).toEqual(shown(run(...before)));
    }
    // Going behind keeps the hand-over until the boundary lets go.
    const going = run({ type: "ask", phase: "run-end" }, hold, { type: "prompt" }, { type: "adopt", phase: "run-end" });
    expect(shown(going)).toMatchObject({ kind: "background", handingOver: true });
  });

  it("close: from any state, and nothing after it", () => {
    for (const before of [[], [{ type: "ask", phase: "run-end" }], checkpoint] as BoundaryEvent[][]) {
      expect(shown(run(...before, { type: "close" }))).toEqual({ kind: "closed" });
    }
    const closed = run({ type: "close" });
    expect(step(closed, { type: "ask", phase: "run-end" }).state).toBe(closed);
    expect(step(closed, { type: "prompt" }).state).toBe(closed);
  });
});

describe("the boundary view", () => {
  it("names the most pressing thing: a hand-over, then a waited-for pass, then one behind the agent", () => {
    expect(boundaryView(IDLE)).toBe("quiet");
    expect(boundaryView(asking)).toBe("asking");
    expect(boundaryView(behindAsking)).toBe("background-asking");
    expect(boundaryView(behind)).toBe("quiet");
    expect(boundaryView({ ...asking, handingOver: true })).toBe("handing-over");
    expect(boundaryView({ kind: "closed" })).toBe("quiet");
  });
});
