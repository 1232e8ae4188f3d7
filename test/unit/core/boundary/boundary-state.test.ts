// The boundary state: one test per transition, from the states it applies to and from those it leaves alone.
import { describe, expect, it } from "vitest";
import {
  type BoundaryEvent,
  type BoundaryState,
  boundaryView,
  IDLE,
  transition,
} from "../../../../src/core/boundary/boundary-state.ts";

const asking: BoundaryState = { kind: "asking", phase: "run-end", handingOver: false };
const behind: BoundaryState = { kind: "background", phase: "mid-run", asking: false, handingOver: false };
const behindAsking: BoundaryState = { kind: "background", phase: "mid-run", asking: true, handingOver: false };
const closed: BoundaryState = { kind: "closed" };

function run(state: BoundaryState, ...events: BoundaryEvent[]): BoundaryState {
  return events.reduce(transition, state);
}

describe("boundary state transitions", () => {
  it("ask: a waited-for pass asks from idle; one behind the agent asks from background", () => {
    expect(transition(IDLE, { type: "ask", phase: "run-end", behind: false })).toEqual(asking);
    expect(transition(behind, { type: "ask", phase: "mid-run", behind: true })).toEqual(behindAsking);
    // A late report of a pass already taken behind, or one of the other kind, changes nothing.
    expect(transition(behind, { type: "ask", phase: "run-end", behind: false })).toBe(behind);
    expect(transition(IDLE, { type: "ask", phase: "mid-run", behind: true })).toBe(IDLE);
  });

  it("answered: the boundary's pass stopped asking", () => {
    expect(transition(asking, { type: "answered" })).toEqual(IDLE);
    expect(transition(behindAsking, { type: "answered" })).toBe(behindAsking);
  });

  it("start-behind: a checkpoint starts behind the agent, not asking yet", () => {
    expect(transition(IDLE, { type: "start-behind", phase: "mid-run" })).toEqual(behind);
    expect(transition(behindAsking, { type: "start-behind", phase: "mid-run" })).toBe(behindAsking);
  });

  it("go-behind: a boundary stops waiting for its pass, which goes on asking behind the agent", () => {
    expect(transition(asking, { type: "go-behind", phase: "run-end" })).toEqual({
      kind: "background",
      phase: "run-end",
      asking: true,
      handingOver: false,
    });
    expect(transition(IDLE, { type: "go-behind", phase: "run-end" })).toMatchObject({ kind: "background" });
    // At most one pass is behind the agent.
    expect(transition(behind, { type: "go-behind", phase: "run-end" })).toBe(behind);
  });

  it("quiet: the pass behind the agent stopped asking, and its drafts wait", () => {
    expect(transition(behindAsking, { type: "quiet" })).toEqual(behind);
    expect(transition(asking, { type: "quiet" })).toBe(asking);
  });

  it("landed: the pass behind the agent is gone", () => {
    expect(transition(behind, { type: "landed" })).toEqual(IDLE);
    expect(transition(behindAsking, { type: "landed" })).toEqual(IDLE);
    expect(transition(asking, { type: "landed" })).toBe(asking);
  });

  it("prompt and released: a waiting boundary hands over, whatever its pass does", () => {
    for (const state of [IDLE, asking, behind]) {
      const handing = transition(state, { type: "prompt" });
      expect(handing).toEqual({ ...state, handingOver: true });
      expect(transition(handing, { type: "released" })).toEqual(state);
    }
    expect(transition(IDLE, { type: "released" })).toBe(IDLE);
    // Going behind keeps the hand-over until the boundary lets go.
    const handing = run(asking, { type: "prompt" }, { type: "go-behind", phase: "run-end" });
    expect(handing).toMatchObject({ kind: "background", handingOver: true });
  });

  it("close: from any state, and nothing after it", () => {
    for (const state of [IDLE, asking, behind, behindAsking])
      expect(transition(state, { type: "close" })).toEqual(closed);
    expect(transition(closed, { type: "ask", phase: "run-end", behind: false })).toBe(closed);
    expect(transition(closed, { type: "prompt" })).toBe(closed);
  });
});

describe("the boundary view", () => {
  it("names the most pressing thing: a hand-over, then a waited-for pass, then one behind the agent", () => {
    expect(boundaryView(IDLE)).toBe("quiet");
    expect(boundaryView(asking)).toBe("asking");
    expect(boundaryView(behindAsking)).toBe("background-asking");
    expect(boundaryView(behind)).toBe("quiet");
    expect(boundaryView({ ...asking, handingOver: true })).toBe("handing-over");
    expect(boundaryView(closed)).toBe("quiet");
  });
});
