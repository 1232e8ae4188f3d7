// What a session's boundaries are doing, as the footer and `/guard` read it: a view of the boundary
// machine (machine.ts). A boundary (turn_end, agent_before_settle) either waits for its pass or lets it go
// on behind the agent until its drafts land at a later boundary; a prompt sent while a boundary waits
// makes it let go.

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
