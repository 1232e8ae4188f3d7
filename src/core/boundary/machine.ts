// A session's whole boundary machine: `step(state, event)` returns the next state and the effects that the
// objects of main/session carry out (start a pass behind the agent, land its drafts, stop a waiting
// boundary, register or drop the turn_end handler). It owns the slot of the pass behind the agent
// (slot.ts), the boundary's own pass and its hand-over to a prompt, the turn's flags that make the next
// turn_end the guard's, and close. Diagram: docs/DESIGN.md, "The boundary machine".
import type { PassPhase } from "../shared/types.ts";
import { endJob, type Job, jobsIn, newJob, type Slot, startQueued, takeEnded, withJob } from "./slot.ts";

export type { PassPhase } from "../shared/types.ts";
export type { Job, Slot } from "./slot.ts";

/** What of the settings the machine decides with. */
export interface Settings {
  enabled: boolean;
  midRun: boolean;
  /** Checkpoints are awaited at turn_end instead of going on behind the agent. */
  midRunWait: boolean;
  /** The run end waits for its pass whole (settleBudgetMs at least timeoutMs). */
  waitsWhole: boolean;
}

/** Between boundaries: what makes the next turn_end the guard's. */
export interface Turn {
  /** The turn that just ended produced tool results: the next turn_start may start a checkpoint. */
  toolTurn: boolean;
  /** The last reply called no tool: the turn_end after it is the run's last. */
  lastTurn: boolean;
  /** The run may hold a recall call: the next boundary reads it for the recall signal. */
  recallMaybe: boolean;
  /** A tool result stands apart from its call on the branch: the next boundary repairs it. */
  repairDue: boolean;
  /** A `/guard restore` waits for a boundary. */
  restoresDue: boolean;
}

/** What holds the current boundary: nothing, a wait a prompt can stop, or one already stopped. */
export type Hold = "none" | "open" | "stopped";

export interface Machine {
  closed: boolean;
  settings: Settings;
  slot: Slot;
  /** The boundary's own pass while the boundary waits for it and it asks the classifier. */
  asking?: PassPhase;
  hold: Hold;
  /** A prompt stopped the waiting boundary; cleared when the boundary lets go. */
  handingOver: boolean;
  /** A steer or follow-up was sent and no turn has started since. */
  queued: boolean;
  /** The last turn_end landed a pass behind the agent: the next checkpoint starts a turn later. */
  landed: boolean;
  turn: Turn;
  /** The turn_end handler is registered. */
  hook: boolean;
  nextId: number;
}

export type BoundaryEvent =
  | { type: "settings"; settings: Settings }
  /** A branch was opened or switched to: what its last run needs. */
  | { type: "branch"; recallMaybe: boolean; repairDue: boolean }
  | { type: "run-start" }
  | { type: "message"; role: "toolResult" | "assistant" | "other"; callsTools?: boolean; callsRecall?: boolean }
  | { type: "recall" }
  /** A request left out a tool result apart from its call. */
  | { type: "orphan" }
  | { type: "restores"; pending: boolean }
  | { type: "turn-start" }
  /** turn_end: `last` when the turn's reply called no tool. */
  | { type: "turn-end"; last: boolean }
  | { type: "turn-end-landed"; landed: boolean; last: boolean }
  /** agent_before_settle's pass, or turn_end's awaited checkpoint. */
  | { type: "pass"; phase: PassPhase }
  | { type: "pass-landed"; phase: PassPhase; landed: boolean }
  /** A boundary's list is final; `mayRecall` reads the run for recall calls. */
  | { type: "boundary-done"; mayRecall: () => boolean }
  | { type: "hold"; stoppable: boolean }
  | { type: "release" }
  /** A prompt was queued as a steer or a follow-up. */
  | { type: "prompt" }
  | { type: "ask"; phase: PassPhase }
  | { type: "answered" }
  /** The boundary stopped waiting for its pass (or took its rest): it goes on behind the agent. */
  | { type: "adopt"; phase: PassPhase; leaf?: string }
  | { type: "begun"; id: number; leaf?: string }
  | { type: "job-asking"; id: number }
  | { type: "quiet"; id: number }
  /** Job `id` ended; `leaf` is the branch it judged when it never said (it judged the context it started on). */
  | { type: "ended"; id: number; drafts: boolean; leaf?: string }
  /**
   * A boundary lands what has ended (the pending job and the one after it, or `parts` of them); `onBranch`
   * says whether a judged leaf is on the current branch.
   */
  | { type: "land"; onBranch: (leaf: string) => boolean; parts?: number }
  /** A checkpoint starts behind the agent unless one is pending. */
  | { type: "checkpoint" }
  /** A run end's pass follows the pending one. */
  | { type: "follow" }
  | { type: "close" };

export type Effect =
  /** Run a pass behind the agent as job `id`; a follower is told what job `after` judged. */
  | { type: "start"; id: number; phase: PassPhase; after?: number }
  /** The pending job has not begun: it judges the newer boundary's context instead. */
  | { type: "retarget"; id: number }
  /** The run end's pass waits behind job `after` as job `id`. */
  | { type: "queue"; id: number; after: number }
  /** The boundary's pass goes on behind the agent as job `id`. */
  | { type: "adopted"; id: number }
  /** Land what has ended: after the pending job ends (`ended`), within the budget, or only if it has. */
  | { type: "collect"; wait: "ended" | "budget" | "no" }
  /** Run the boundary's own pass. */
  | { type: "judge"; phase: PassPhase }
  | { type: "land"; id: number }
  /** Record job `id` without landing its edits. */
  | { type: "set-aside"; id: number; why: string }
  /** Jobs forgotten before they landed (their drafts, if any, never land). */
  | { type: "drop"; ids: number[]; why: string }
  /** Stop what holds the boundary: a prompt waits. */
  | { type: "stop-hold" }
  | { type: "hook"; on: boolean }
  | { type: "draw" };

export interface Step {
  state: Machine;
  effects: Effect[];
}

export function initial(settings: Settings): Machine {
  return {
    closed: false,
    settings,
    slot: {},
    hold: "none",
    handingOver: false,
    queued: false,
    landed: false,
    turn: { toolTurn: false, lastTurn: false, recallMaybe: true, repairDue: false, restoresDue: true },
    hook: false,
    nextId: 1,
  };
}

/** A pass that has ended with drafts waits for the next boundary. */
export const readyJob = (m: Machine): Job | undefined =>
  m.slot.pending?.ended && m.slot.pending.drafts ? m.slot.pending : undefined;

/**
 * Whether the next turn_end has work at the boundary: drafts to land, checkpoints the settings await, or,
 * at the run's last turn (`last`), a pending pass it waits for because the run end waits whole.
 */
export function boundaryDue(m: Machine, last: boolean): boolean {
  const { settings, slot } = m;
  if (m.closed || !settings.enabled) return false;
  if (settings.midRun && settings.midRunWait) return true;
  if (readyJob(m)) return true;
  return last && slot.pending !== undefined && settings.waitsWhole;
}

/** Whether the next turn_end needs the guard: the boundary's work, the recall signal, a repair, a restore. */
export function turnEndDue(m: Machine): boolean {
  return !m.closed && (m.turn.restoresDue || dueBesideRestores(m));
}

/** Whether it does for a reason other than a restore (then the restores need not be read). */
export function dueBesideRestores(m: Machine): boolean {
  const { turn } = m;
  return !m.closed && (turn.recallMaybe || turn.repairDue || boundaryDue(m, turn.lastTurn));
}

export function step(state: Machine, event: BoundaryEvent): Step {
  const out = state.closed ? { state, effects: [] } : apply(state, event);
  const due = turnEndDue(out.state);
  if (due === out.state.hook) return out;
  return { state: { ...out.state, hook: due }, effects: [...out.effects, { type: "hook", on: due }] };
}

const turned = (m: Machine, turn: Partial<Turn>): Step => ({
  state: { ...m, turn: { ...m.turn, ...turn } },
  effects: [],
});

function apply(m: Machine, e: BoundaryEvent): Step {
  switch (e.type) {
    case "settings":
      return { state: { ...m, settings: e.settings }, effects: [] };
    case "branch":
      return turned(m, { recallMaybe: e.recallMaybe, repairDue: e.repairDue });
    case "run-start":
      return turned(m, { toolTurn: false });
    case "message":
      if (e.role === "toolResult") return turned(m, { toolTurn: true });
      if (e.role !== "assistant") return { state: m, effects: [] };
      return turned(m, { lastTurn: e.callsTools !== true, ...(e.callsRecall ? { recallMaybe: true } : {}) });
    case "recall":
      return turned(m, { recallMaybe: true });
    case "orphan":
      return turned(m, { repairDue: true });
    case "restores":
      return turned(m, { restoresDue: e.pending });
    case "turn-start":
      return turnStart(m);
    case "turn-end":
      return turnEnd(m, e.last);
    case "turn-end-landed":
      return turnEndLanded(m, e.landed, e.last);
    case "pass":
      return pass(m, e.phase);
    case "pass-landed":
      return passLanded(m, e.phase, e.landed);
    case "boundary-done": {
      let recallMaybe = m.turn.recallMaybe;
      if (recallMaybe) recallMaybe = e.mayRecall();
      return turned(m, { repairDue: false, recallMaybe });
    }
    case "hold": {
      const stop = e.stoppable && m.queued;
      return {
        state: { ...m, hold: !e.stoppable ? "none" : stop ? "stopped" : "open" },
        effects: stop ? [{ type: "stop-hold" }] : [],
      };
    }
    case "release":
      return {
        state: { ...m, hold: "none", handingOver: false },
        effects: m.handingOver ? [{ type: "draw" }] : [],
      };
    case "prompt": {
      const queued = { ...m, queued: true };
      if (m.hold !== "open") return { state: queued, effects: [] };
      const effects: Effect[] = [{ type: "stop-hold" }];
      if (!m.handingOver) effects.push({ type: "draw" });
      return { state: { ...queued, hold: "stopped", handingOver: true }, effects };
    }
    case "ask":
      return { state: m.slot.pending || m.asking ? m : { ...m, asking: e.phase }, effects: [] };
    case "answered": {
      const { asking: _, ...rest } = m;
      return { state: rest, effects: [] };
    }
    case "adopt":
      return adopt(m, e.phase, e.leaf);
    case "begun":
      return jobChanged(m, e.id, (j) => ({ ...j, begun: true, ...(e.leaf !== undefined ? { leaf: e.leaf } : {}) }));
    case "job-asking":
      return jobChanged(m, e.id, (j) => (j.ended ? j : { ...j, asking: true }));
    case "quiet":
      return jobChanged(m, e.id, (j) => ({ ...j, asking: false }));
    case "ended": {
      const leaf = e.leaf;
      const told =
        leaf === undefined ? m.slot : withJob(m.slot, e.id, (j) => (j.leaf === undefined ? { ...j, leaf } : j));
      const { slot, started } = endJob(told, e.id, e.drafts);
      return {
        state: { ...m, slot },
        effects: started ? [{ type: "start", id: started.id, phase: "run-end", after: started.after }] : [],
      };
    }
    case "land":
      return land(m, e.onBranch, e.parts);
    case "checkpoint":
      return checkpoint(m);
    case "follow":
      return follow(m);
    case "close": {
      const ids = [...jobsIn(m.slot).map((j) => j.id), ...(m.slot.queued ? [m.slot.queued.id] : [])];
      const { asking: _, ...rest } = m;
      return {
        state: { ...rest, closed: true, slot: {}, hold: "none", handingOver: false },
        effects: ids.length > 0 ? [{ type: "drop", ids, why: "the session closed" }] : [],
      };
    }
  }
}

function jobChanged(m: Machine, id: number, change: (job: Job) => Job): Step {
  return { state: { ...m, slot: withJob(m.slot, id, change) }, effects: [] };
}

/** A checkpoint unless one is pending; one pending that has not begun judges this newer context instead. */
function checkpoint(m: Machine): Step {
  const pending = m.slot.pending;
  if (m.asking) return { state: m, effects: [] };
  if (pending) return { state: m, effects: pending.begun ? [] : [{ type: "retarget", id: pending.id }] };
  const id = m.nextId;
  return {
    state: { ...m, nextId: id + 1, slot: { ...m.slot, pending: newJob(id, "mid-run", false) } },
    effects: [{ type: "start", id, phase: "mid-run" }],
  };
}

/** A turn after a tool turn starts a checkpoint (unless the last turn_end landed one, or they are awaited). */
function toolTurn(m: Machine): Step {
  const s = m.settings;
  if (!s.enabled || !s.midRun || s.midRunWait || m.landed || m.slot.pending?.begun) return { state: m, effects: [] };
  return checkpoint(m);
}

/** A turn starts: a queued prompt has been taken up, and one after a tool turn may start a checkpoint. */
function turnStart(m: Machine): Step {
  const next: Machine = { ...m, turn: { ...m.turn, toolTurn: false, lastTurn: false } };
  const started = m.turn.toolTurn ? toolTurn(next) : { state: next, effects: [] };
  return { state: { ...started.state, queued: false, landed: false }, effects: started.effects };
}

/** turn_end lands what has ended; the run's last waits for the pending pass when the run end waits whole. */
function turnEnd(m: Machine, last: boolean): Step {
  if (!m.settings.enabled) return { state: m, effects: [] };
  const wait = last && m.settings.waitsWhole && m.slot.pending !== undefined;
  return { state: m, effects: [{ type: "collect", wait: wait ? "ended" : "no" }] };
}

function turnEndLanded(m: Machine, landed: boolean, last: boolean): Step {
  const next = { ...m, landed };
  if (landed || last || !m.settings.enabled || !m.settings.midRun) return { state: next, effects: [] };
  if (m.settings.midRunWait) return pass(next, "mid-run");
  return checkpoint(next);
}

/** A boundary's own pass: a pending pass lands first if it ends within the budget. */
function pass(m: Machine, phase: PassPhase): Step {
  const s = m.settings;
  if (!s.enabled || (phase === "mid-run" && !s.midRun)) return { state: m, effects: [] };
  if (m.slot.pending) return { state: m, effects: [{ type: "collect", wait: "budget" }] };
  return { state: m, effects: [{ type: "judge", phase }] };
}

/**
 * After the pending pass landed (or did not within the budget): a run end whose slot is still taken has its
 * own pass follow that one (at most one waits); a run end that landed it runs its own pass on the rest.
 */
function passLanded(m: Machine, phase: PassPhase, landed: boolean): Step {
  if (m.slot.pending) return phase === "run-end" ? follow(m) : { state: m, effects: [] };
  if (landed && phase !== "run-end") return { state: m, effects: [] };
  return { state: m, effects: [{ type: "judge", phase }] };
}

/** The run end's pass waits behind the pending one (at most one waits), and starts once that one has ended. */
function follow(m: Machine): Step {
  const pending = m.slot.pending;
  if (!pending || m.slot.queued || m.slot.second) return { state: m, effects: [] };
  const id = m.nextId;
  const queued: Machine = { ...m, nextId: id + 1, slot: { ...m.slot, queued: { id } } };
  const effects: Effect[] = [{ type: "queue", id, after: pending.id }];
  if (!pending.ended) return { state: queued, effects };
  const { slot, started } = startQueued(queued.slot, pending);
  if (started) effects.push({ type: "start", id: started.id, phase: "run-end", after: started.after });
  return { state: { ...queued, slot }, effects };
}

/** The boundary's pass goes on behind the agent: it takes the slot (a boundary lands what was there first). */
function adopt(m: Machine, phase: PassPhase, leaf: string | undefined): Step {
  const id = m.nextId;
  const job: Job = { ...newJob(id, phase, true), ...(leaf !== undefined ? { leaf } : {}) };
  const gone = [...jobsIn(m.slot).map((j) => j.id), ...(m.slot.queued ? [m.slot.queued.id] : [])];
  const { asking: _, ...rest } = m;
  const effects: Effect[] = [];
  if (gone.length > 0) effects.push({ type: "drop", ids: gone, why: "replaced by a handed-over pass" });
  effects.push({ type: "adopted", id });
  return { state: { ...rest, nextId: id + 1, slot: { pending: job } }, effects };
}

/** The jobs that have ended land, each on the branch it judged; one judged on another is set aside. */
function land(m: Machine, onBranch: (leaf: string) => boolean, parts?: number): Step {
  const { slot, taken } = takeEnded(m.slot, parts);
  const effects: Effect[] = [];
  for (const job of taken) {
    if (!job.drafts) continue;
    if (job.leaf === undefined || onBranch(job.leaf)) effects.push({ type: "land", id: job.id });
    else effects.push({ type: "set-aside", id: job.id, why: "judged on another branch" });
  }
  return { state: { ...m, slot }, effects };
}
