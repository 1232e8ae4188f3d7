// What decides, between boundaries, whether the next turn_end needs the guard beyond the boundary object's
// own reasons: a turn that produced tool results (a checkpoint may start at the next turn_start), a reply
// that called no tool (the run's last turn), a run that may hold a recall call (the recall signal), and a
// branch that holds a tool result apart from its call (the next boundary repairs it).
import { runMayRecall } from "../../core/recall/recall-gate.ts";
import type { ProjectedLike } from "../pass/snapshot.ts";
import { branchBreaks } from "./boundary-shape.ts";

type Block = { type?: string; name?: unknown };
/** An assistant message's content asks for a tool, or for the `recall` tool. */
const callsTools = (content: unknown): boolean =>
  Array.isArray(content) && content.some((b) => (b as Block)?.type === "toolCall");
const callsRecall = (content: unknown): boolean =>
  Array.isArray(content) && content.some((b) => (b as Block)?.type === "toolCall" && (b as Block).name === "recall");

export class TurnWatch {
  /** The turn that just ended produced tool results: the next turn_start may start a checkpoint. */
  toolTurn = false;
  /** The last reply called no tool: the turn_end after it is the run's last. */
  lastTurn = false;
  /** The run may hold a recall call: the next boundary reads it for the recall signal. */
  recallMaybe = true;
  /** A tool result stands apart from its call on the branch: the next boundary repairs it. */
  repairDue = false;

  /** Reads the branch as it is opened; returns the results that stand apart from their calls. */
  checkBranch(entries: () => ProjectedLike[]): string[] {
    this.recallMaybe = true;
    this.repairDue = true;
    const context = entries();
    this.recallMaybe = runMayRecall(context);
    const breaks = branchBreaks(context);
    this.repairDue = breaks.length > 0;
    return breaks.map((b) => b.resultId);
  }

  messageEnd(m: { role?: string; content?: unknown }): void {
    if (m.role === "toolResult") this.toolTurn = true;
    else if (m.role === "assistant") {
      this.lastTurn = !callsTools(m.content);
      if (callsRecall(m.content)) this.recallMaybe = true;
    }
  }

  /** turn_start: whether a checkpoint is due now (once per tool turn). */
  takeToolTurn(): boolean {
    const due = this.toolTurn;
    this.toolTurn = false;
    this.lastTurn = false;
    return due;
  }

  /** A boundary repaired the branch and read the run for recalls: later ones need not until told. */
  boundaryDone(context: readonly ProjectedLike[]): void {
    this.repairDue = false;
    try {
      if (this.recallMaybe) this.recallMaybe = runMayRecall(context);
    } catch {
      // swallow-ok: Still maybe.
    }
  }

  /** Whether the next turn_end needs the guard, given the boundary's own reason and pending restores. */
  due(boundaryDue: (lastTurn: boolean) => boolean, restoresPending: () => boolean): boolean {
    if (this.recallMaybe || this.repairDue || boundaryDue(this.lastTurn)) return true;
    try {
      return restoresPending();
    } catch {
      // swallow-ok: a restore list that cannot be read counts as pending: the boundary reads it again.
      return true;
    }
  }
}
