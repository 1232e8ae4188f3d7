// What a session's boundaries are doing, as one state with explicit transitions. A boundary (turn_end,
// agent_before_settle) either waits for its pass or lets it go on behind the agent until its drafts land
// at a later boundary; a prompt sent while a boundary waits makes it let go. The footer and `/guard`
// read this state; the objects that run the passes only report events to it.

import type { PassPhase } from "../shared/types.ts";
import type { Machine } from "./machine.ts";

export type { PassPhase } from "../shared/types.ts";

export type BoundaryState =
  /** No pass is asked for or pending (one may be planning, which takes moments). */
  | { kind: "idle"; handingOver: boolean }
  /** A boundary waits while its pass asks the classifier. */
  | { kind: "asking"; phase: PassPhase; handingOver: boolean }
  /** A pass goes on behind the agent (a checkpoint, a handed-over rest, a run-end pass over its budget). */
  | { kind: "background"; phase: PassPhase; asking: boolean; handingOver: boolean }
  /** Shut down, or Pi is exiting: nothing more happens. */
  | { kind: "closed" };

export type BoundaryEvent =
  /** A pass started asking the classifier; `behind` when it is the pass pending behind the agent. */
  | { type: "ask"; phase: PassPhase; behind: boolean }
  /** The pass a boundary waited for stopped asking (it ended, failed or was stopped). */
  | { type: "answered" }
  /** A checkpoint started behind the agent (it plans, then asks). */
  | { type: "start-behind"; phase: PassPhase }
  /** The boundary stopped waiting for its pass, or took a handed-over rest: it goes on behind, asking. */
  | { type: "go-behind"; phase: PassPhase }
  /** The pass behind the agent stopped asking (its drafts wait for a boundary). */
  | { type: "quiet" }
  /** The pass behind the agent landed, or was dropped, or ended with nothing to land. */
  | { type: "landed" }
  /** A prompt stopped a waiting boundary: it hands over. */
  | { type: "prompt" }
  /** The boundary stopped waiting (after a hand-over, the prompt starts). */
  | { type: "released" }
  | { type: "close" };

export const IDLE: BoundaryState = { kind: "idle", handingOver: false };

/**
 * The state after `event`. An event that does not apply to the state it meets (a late report of a pass
 * that was already taken behind, anything after close) leaves the state as it is.
 */
export function transition(state: BoundaryState, event: BoundaryEvent): BoundaryState {
  if (state.kind === "closed") return state;
  switch (event.type) {
    case "close":
      return { kind: "closed" };
    case "prompt":
      return state.handingOver ? state : { ...state, handingOver: true };
    case "released":
      return state.handingOver ? { ...state, handingOver: false } : state;
    case "ask":
      if (event.behind) {
        return state.kind === "background" && !state.asking ? { ...state, asking: true } : state;
      }
      return state.kind === "idle" ? { kind: "asking", phase: event.phase, handingOver: state.handingOver } : state;
    case "answered":
      return state.kind === "asking" ? { kind: "idle", handingOver: state.handingOver } : state;
    case "start-behind":
      return state.kind === "idle"
        ? { kind: "background", phase: event.phase, asking: false, handingOver: state.handingOver }
        : state;
    case "go-behind":
      // One pass at a time is behind the agent: a boundary lands or waits for it before it runs another.
      return state.kind === "background"
        ? state
        : { kind: "background", phase: event.phase, asking: true, handingOver: state.handingOver };
    case "quiet":
      return state.kind === "background" && state.asking ? { ...state, asking: false } : state;
    case "landed":
      return state.kind === "background" ? { kind: "idle", handingOver: state.handingOver } : state;
  }
}

/** What the footer and `/guard` show of the state, most pressing first. */
export type BoundaryView = "handing-over" | "asking" | "background-asking" | "quiet";

export function boundaryView(state: BoundaryState): BoundaryView {
  if (state.kind === "closed") return "quiet";
  if (state.handingOver) return "handing-over";
  if (state.kind === "asking") return "asking";
  return state.kind === "background" && state.asking ? "background-asking" : "quiet";
}

/** The state the footer and `/guard` read, as the machine has it. */
export function shown(m: Machine): BoundaryState {
  if (m.closed) return { kind: "closed" };
  const { pending, second } = m.slot;
  const handingOver = m.handingOver;
  if (pending) {
    return { kind: "background", phase: pending.phase, asking: pending.asking || second?.asking === true, handingOver };
  }
  return m.asking ? { kind: "asking", phase: m.asking, handingOver } : { kind: "idle", handingOver };
}
