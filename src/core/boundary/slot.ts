// The slot of the pass behind the agent, as data: at most one pending pass from its start until its drafts
// land, the one that follows it (queued until the pending one has ended, then started), and the rule that
// two passes never plan at once. The machine (machine.ts) changes it; main/session runs what it says.
import type { PassPhase } from "../shared/types.ts";

export interface Job {
  id: number;
  phase: PassPhase;
  /** It has taken the context it judges (a checkpoint that has not may still judge a newer one). */
  begun: boolean;
  /** Its plan is made and it asks the classifier. */
  asking: boolean;
  ended: boolean;
  /** It ended with drafts to land. */
  drafts: boolean;
  /** The branch it judged: the last entry of its context that stays on the branch. */
  leaf?: string;
}

export interface Slot {
  /** Started, and its drafts have not landed yet (finished or not). */
  pending?: Job;
  /** The follower once started, until the pending one has landed. */
  second?: Job;
  /** The run end's pass waiting for the pending one to end. */
  queued?: { id: number };
}

/** Where `id` is in the slot. */
export function jobOf(slot: Slot, id: number): Job | undefined {
  if (slot.pending?.id === id) return slot.pending;
  if (slot.second?.id === id) return slot.second;
  return undefined;
}

/** The slot with job `id` changed by `change` (a job no longer in the slot is left alone). */
export function withJob(slot: Slot, id: number, change: (job: Job) => Job): Slot {
  if (slot.pending?.id === id) return { ...slot, pending: change(slot.pending) };
  if (slot.second?.id === id) return { ...slot, second: change(slot.second) };
  return slot;
}

export const newJob = (id: number, phase: PassPhase, running: boolean): Job => ({
  id,
  phase,
  begun: running,
  asking: running,
  ended: false,
  drafts: false,
});

/** The queued follower starts once `first` has ended: after it if it left drafts, else in its place. */
export function startQueued(slot: Slot, first: Job): { slot: Slot; started?: { id: number; after: number } } {
  const next = slot.queued;
  if (!next) return { slot };
  const { queued: _, ...rest } = slot;
  const job = newJob(next.id, "run-end", false);
  const started = { id: next.id, after: first.id };
  if (first.drafts && slot.pending?.id === first.id) return { slot: { ...rest, second: job }, started };
  return { slot: { ...rest, pending: job }, started };
}

/**
 * Job `id` ended (with drafts or none). One that ended with none leaves the slot at once, so no boundary
 * is needed to clear it; the follower starts when the pending one has ended.
 */
export function endJob(
  slot: Slot,
  id: number,
  drafts: boolean,
): { slot: Slot; started?: { id: number; after: number } } {
  const job = jobOf(slot, id);
  if (!job || job.ended) return { slot };
  const done: Job = { ...job, ended: true, asking: false, drafts };
  let next = withJob(slot, id, () => done);
  if (!drafts) {
    const { pending, second, ...rest } = next;
    next = {
      ...rest,
      ...(pending && pending.id !== id ? { pending } : {}),
      ...(second && second.id !== id ? { second } : {}),
    };
  }
  if (next.pending === undefined || next.pending.id === id) return startQueued(next, done);
  return { slot: next };
}

/**
 * The jobs that land at a boundary, in order: the pending one if it has ended, then the one after it if
 * that has ended too. What is left in the slot is returned with them.
 */
export function takeEnded(slot: Slot, parts = 2): { slot: Slot; taken: Job[] } {
  const taken: Job[] = [];
  let next = slot;
  for (let part = 0; part < parts; part++) {
    const job = next.pending;
    if (!job?.ended) break;
    const { pending: _, second, ...rest } = next;
    next = second ? { ...rest, pending: second } : rest;
    taken.push(job);
  }
  return { slot: next, taken };
}

/** Every job the slot holds or has queued. */
export function jobsIn(slot: Slot): Job[] {
  return [slot.pending, slot.second].filter((j): j is Job => j !== undefined);
}
