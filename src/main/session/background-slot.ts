// The slot of the pass behind the agent (background-pass.ts): the machine's slot (core/boundary/slot.ts)
// says what starts and lands; this runs the passes and keeps their contexts and drafts. Drafts are
// re-validated when they land (pass/revalidate.ts).

import { type Effect, type Job, readyJob } from "../../core/boundary/machine.ts";
import { jobOf } from "../../core/boundary/slot.ts";
import { recordDraft } from "../../core/records/record.ts";
import { type Judged, keptWhole, type Landed, revalidate } from "../pass/revalidate.ts";
import type { ProjectedLike } from "../pass/snapshot.ts";
import { background } from "../platform/callbacks.ts";
import { BoundaryMachine } from "./boundary-machine.ts";

/** What the shell keeps of a job the machine has in its slot: what it judges, and its run. */
interface JobRun {
  /** The boundary's context the checkpoint judges (the latest one until it begins). */
  context: readonly ProjectedLike[];
  /** Resolves once it asks the classifier or ends. */
  planned: Promise<void>;
  done: Promise<void>;
  result: Judged | undefined;
}

/** What a running checkpoint tells its holder. */
export interface RunningJob {
  /** The machine's id of the job. */
  readonly id: number;
  /** Marks it begun and returns the context to judge. */
  begin(): readonly ProjectedLike[];
  asking(): void;
}

/**
 * The last entry of a judged context that is on the branch for good. A boundary's context also shows the
 * drafts of the extensions whose handlers ran before ours, as entries of a preview whose ids Pi does not
 * keep when it appends them; none of those is a `message` entry.
 */
function leafOf(context: readonly ProjectedLike[]): string | undefined {
  for (let i = context.length - 1; i >= 0; i--) {
    const source = (context[i] as ProjectedLike).sourceEntry;
    if (source.type === "message") return source.id;
  }
  return context.at(-1)?.sourceEntry.id;
}

/** A pass that waits for the pending one to end: it plans on `context`, told what that one judged. */
interface Successor {
  context: readonly ProjectedLike[];
  run: (job: RunningJob, first: Judged | undefined) => Promise<Judged | undefined>;
}

/**
 * The one pass behind the agent, from its start until its drafts land, and at most one that follows it
 * (a run end that found the slot taken): the boundary machine (core/boundary/slot.ts) decides which starts,
 * waits and lands; this runs them and keeps what they judged until they land.
 */
export class BackgroundSlot {
  readonly #machine: BoundaryMachine;
  readonly #runs = new Map<number, JobRun>();
  /** Followers queued, until they start. */
  readonly #queued = new Map<number, Successor>();
  /** Told when a pass ends; one that ended with nothing to land has left the slot already. */
  readonly #ended: (drafts: boolean) => void;

  constructor(ended: (drafts: boolean) => void = () => undefined, machine = new BoundaryMachine()) {
    this.#ended = ended;
    this.#machine = machine;
  }

  get #pending(): Job | undefined {
    return this.#machine.state.slot.pending;
  }

  /** A checkpoint was started and its drafts have not landed yet (finished or not). */
  get pending(): boolean {
    return this.#pending !== undefined;
  }

  /** A pending pass has taken the context it judges. */
  get begun(): boolean {
    return this.#pending?.begun === true;
  }

  /** A checkpoint is planning (in the worker): it will skip or start asking within moments. */
  get planning(): boolean {
    const job = this.#pending;
    return job?.begun === true && !job.asking && !job.ended;
  }

  /** Resolves once the pending checkpoint asks the classifier or ends: its plan is made. */
  async planned(): Promise<void> {
    const job = this.#pending;
    await (job && this.#runs.get(job.id)?.planned);
  }

  /**
   * The pending pass's drafts once it has ended, before they land (re-validated then), with the last
   * entry of the context it judged (its drafts belong to the branch that holds it).
   */
  get ready(): (Judged & { leaf?: string }) | undefined {
    const job = readyJob(this.#machine.state);
    const result = job && this.#runs.get(job.id)?.result;
    if (!job || !result) return undefined;
    return job.leaf === undefined ? result : { ...result, leaf: job.leaf };
  }

  /** Resolves once the pending checkpoint has ended (its drafts can land). */
  async finished(): Promise<void> {
    const job = this.#pending;
    await (job && this.#runs.get(job.id)?.done);
  }

  /**
   * Starts `run` unless a checkpoint is pending. `run` calls `begin` once it is ready to plan (the pass
   * worker is up) and judges the context it returns, and calls `asking` once its plan asks the
   * classifier. A failed run lands nothing (`run` reports its own failures). Returns whether it started.
   * One pending that has not begun judges `context` instead, so a checkpoint that waited for the worker
   * is not one about outputs too young to judge.
   */
  start(
    context: readonly ProjectedLike[] | (() => readonly ProjectedLike[]),
    run: (job: RunningJob) => Promise<Judged | undefined>,
    /** What the machine said at the boundary (else it is asked for a checkpoint now). */
    effects: readonly Effect[] = this.#machine.send({ type: "checkpoint" }),
  ): boolean {
    const read = typeof context === "function" ? context : () => context;
    let started = false;
    for (const effect of effects) {
      if (effect.type === "retarget") {
        const pending = this.#runs.get(effect.id);
        if (pending) pending.context = read();
      } else if (effect.type === "start" && effect.after === undefined) {
        let judged: readonly ProjectedLike[];
        try {
          judged = read();
        } catch (error) {
          // The context could not be read: the job ends before it began, and the slot is free again.
          this.#carry(this.#machine.send({ type: "ended", id: effect.id, drafts: false }));
          throw error;
        }
        this.#runs.set(effect.id, this.#run(effect.id, judged, run));
        started = true;
      }
    }
    return started;
  }

  /**
   * Runs `run` on `context` once the pending pass has ended, with that pass's drafts (undefined if it
   * landed nothing). Returns false when a successor is queued already or nothing is pending.
   */
  follow(
    context: readonly ProjectedLike[],
    run: Successor["run"],
    effects: readonly Effect[] = this.#machine.send({ type: "follow" }),
  ): boolean {
    for (const effect of effects) {
      if (effect.type === "queue") this.#queued.set(effect.id, { context, run });
    }
    this.#carry(effects);
    return effects.some((e) => e.type === "queue");
  }

  /** Carries out what the machine said after a job ended or a follower was queued. */
  #carry(effects: readonly Effect[]): void {
    for (const effect of effects) {
      if (effect.type === "start" && effect.after !== undefined) this.#startQueued(effect.id, effect.after);
      else if (effect.type === "drop") for (const id of effect.ids) this.#forget(id);
    }
  }

  /** A queued follower starts, told what the pass before it judged. */
  #startQueued(id: number, after: number): void {
    const next = this.#queued.get(id);
    if (!next) return;
    this.#queued.delete(id);
    const first = this.#runs.get(after)?.result;
    this.#runs.set(
      id,
      this.#run(id, next.context, (job) => next.run(job, first)),
    );
  }

  #forget(id: number): void {
    this.#runs.delete(id);
    this.#queued.delete(id);
  }

  /**
   * Takes the rest of a handed-over pass into the slot: it was judging `context` and is asking the
   * classifier; its drafts land like a checkpoint's.
   */
  adopt(context: readonly ProjectedLike[], rest: Promise<Judged | undefined>): void {
    const effects = this.#machine.send({ type: "adopt", phase: "run-end", ...leafField(context) });
    this.#carry(effects);
    for (const effect of effects) {
      if (effect.type === "adopted")
        this.#runs.set(
          effect.id,
          this.#run(effect.id, context, () => rest),
        );
    }
  }

  /** The machine's id of the pending pass. */
  get pendingId(): number | undefined {
    return this.#pending?.id;
  }

  #run(id: number, context: readonly ProjectedLike[], run: (job: RunningJob) => Promise<Judged | undefined>): JobRun {
    let planned = () => {};
    const job: JobRun = {
      context,
      result: undefined,
      planned: new Promise((resolve) => {
        planned = resolve;
      }),
      done: Promise.resolve(),
    };
    const running: RunningJob = {
      id,
      begin: () => {
        this.#machine.send({ type: "begun", id, ...leafField(job.context) });
        return job.context;
      },
      asking: () => {
        this.#machine.send({ type: "job-asking", id });
        planned();
      },
    };
    job.done = background("checkpoint", async () => {
      try {
        job.result = await run(running);
      } finally {
        planned();
        const drafts = job.result !== undefined;
        const held = jobOf(this.#machine.state.slot, id) !== undefined;
        this.#carry(this.#machine.send({ type: "ended", id, drafts, ...leafField(job.context) }));
        // Nothing to land: it has left the slot, so no boundary is needed to clear it.
        if (!drafts) this.#runs.delete(id);
        if (held || !drafts) this.#ended(drafts);
      }
    });
    return job;
  }

  /**
   * The pending checkpoint's drafts, re-validated against `now`, if it has finished (or, with `wait`,
   * once it has). Undefined when nothing lands at this boundary.
   */
  async land(
    now: readonly ProjectedLike[],
    options: {
      wait: boolean;
      positionOf?: (id: string) => number | undefined;
      /** Whether an entry is on the current branch (the judged context's last entry is asked). */
      onBranch?: (id: string) => boolean;
    },
  ): Promise<Landed | undefined> {
    const job = this.#pending;
    if (!job || (!job.ended && !options.wait)) return undefined;
    await this.#runs.get(job.id)?.done;
    const onBranch = options.onBranch ?? (() => true);
    for (const effect of this.#machine.send({ type: "land", onBranch, parts: 1 })) {
      const run = this.#runs.get(effect.type === "land" || effect.type === "set-aside" ? effect.id : -1);
      if (!run?.result) continue;
      this.#forget(effect.type === "land" ? effect.id : (effect as { id: number }).id);
      // Judged for a run on a branch the session has left (/tree, /fork): its question is not this branch's.
      if (effect.type === "set-aside") {
        const record = keptWhole(run.result.record, effect.why);
        return { edits: [], record, recordDraft: recordDraft(record), dropped: [], offBranch: true };
      }
      return revalidate(run.result, run.context, now, options.positionOf);
    }
    return undefined;
  }

  /** Forgets a pending checkpoint and what follows it (shutdown): their drafts never land. */
  drop(): void {
    this.#carry(this.#machine.send({ type: "close" }));
  }
}

const leafField = (context: readonly ProjectedLike[]): { leaf?: string } => {
  const leaf = leafOf(context);
  return leaf === undefined ? {} : { leaf };
};
