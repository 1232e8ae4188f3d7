// What the boundary machine is told between boundaries, read from Pi's events: a reply's tool calls (a tool
// turn, the run's last turn, a possible recall), a branch as it is opened (its last run may hold a recall
// call; a tool result may stand apart from its call), and a boundary's context read for recall calls. The
// machine (core/boundary/machine.ts) decides what the next turn_end needs; nothing here keeps state.
import type { BoundaryEvent } from "../../core/boundary/machine.ts";
import { runMayRecall } from "../../core/recall/recall-gate.ts";
import type { ProjectedLike } from "../pass/snapshot.ts";
import { traceSwallowed } from "../platform/swallowed.ts";
import { branchBreaks } from "./boundary-shape.ts";

type Block = { type?: string; name?: unknown };
/** An assistant message's content asks for a tool, or for the `recall` tool. */
const callsTools = (content: unknown): boolean =>
  Array.isArray(content) && content.some((b) => (b as Block)?.type === "toolCall");
const callsRecall = (content: unknown): boolean =>
  Array.isArray(content) && content.some((b) => (b as Block)?.type === "toolCall" && (b as Block).name === "recall");

/** message_end as the machine hears it. */
export function messageEvent(m: { role?: string; content?: unknown }): BoundaryEvent {
  if (m.role === "toolResult") return { type: "message", role: "toolResult" };
  if (m.role !== "assistant") return { type: "message", role: "other" };
  return { type: "message", role: "assistant", callsTools: callsTools(m.content), callsRecall: callsRecall(m.content) };
}

/**
 * A branch as it is opened: the event for the machine, and the results that stand apart from their calls.
 * A branch that cannot be read needs the next boundary for both.
 */
export function branchEvent(entries: () => ProjectedLike[]): { event: BoundaryEvent; apart: string[] } {
  try {
    const context = entries();
    const breaks = branchBreaks(context);
    return {
      event: { type: "branch", recallMaybe: runMayRecall(context), repairDue: breaks.length > 0 },
      apart: breaks.map((b) => b.resultId),
    };
  } catch (error) {
    // The boundaries still check every list they return.
    traceSwallowed("session.check-branch", error);
    return { event: { type: "branch", recallMaybe: true, repairDue: true }, apart: [] };
  }
}

/** A boundary's list is final: the run is read for recall calls (a run that cannot be read still may). */
export function boundaryDone(context: readonly ProjectedLike[]): BoundaryEvent {
  return {
    type: "boundary-done",
    mayRecall: () => {
      try {
        return runMayRecall(context);
      } catch (error) {
        traceSwallowed("session.recall-read", error);
        return true;
      }
    },
  };
}
