// The slot of the pass behind the agent (background-pass.ts): at most one pending pass, from its start
// until its drafts land, and at most one that follows it. Its drafts are re-validated when they land
// (pass/revalidate.ts).
import { recordDraft } from "../../core/records/record.ts";
import { type Judged, keptWhole, type Landed, revalidate } from "../pass/revalidate.ts";
import type { ProjectedLike } from "../pass/snapshot.ts";
import { background } from "../platform/callbacks.ts";

interface Job {
  /** The boundary's context the checkpoint judges (the latest one until it begins). */
  context: readonly ProjectedLike[];
  begun: boolean;
  /** Its plan is made and it asks the classifier (until then it is quick to wait for). */
  asking: boolean;
  /** Resolves once it asks the classifier or ends. */
  planned: Promise<void>;
  done: Promise<void>;
  settled: boolean;
  result: Judged | undefined;
}

/** What a running checkpoint tells its holder. */
export interface RunningJob {
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
 * (a run end that found the slot taken): that one starts once the first has ended, so two passes never
 * plan at once, and each lands at the first boundary after it has ended.
 */
export class BackgroundSlot {
  #job: Job | undefined;
  #successor: Successor | undefined;
  /** The successor once started, until the first has landed. */
  #second: Job | undefined;
  /** Told when a pass ends; one that ended with nothing to land has left the slot already. */
  readonly #ended: (drafts: boolean) => void;

  constructor(ended: (drafts: boolean) => void = () => undefined) {
    this.#ended = ended;
  }

  /** A checkpoint was started and its drafts have not landed yet (finished or not). */
  get pending(): boolean {
    return this.#job !== undefined;
  }

  /** A pending pass has taken the context it judges. */
  get begun(): boolean {
    return this.#job?.begun === true;
  }

  /** A checkpoint is planning (in the worker): it will skip or start asking within moments. */
  get planning(): boolean {
    const job = this.#job;
    return job?.begun === true && !job.asking && !job.settled;
  }

  /** Resolves once the pending checkpoint asks the classifier or ends: its plan is made. */
  async planned(): Promise<void> {
    await this.#job?.planned;
  }

  /**
   * The pending pass's drafts once it has ended, before they land (re-validated then), with the last
   * entry of the context it judged (its drafts belong to the branch that holds it).
   */
  get ready(): (Judged & { leaf?: string }) | undefined {
    const job = this.#job;
    if (!job?.settled || !job.result) return undefined;
    const leaf = leafOf(job.context);
    return leaf === undefined ? job.result : { ...job.result, leaf };
  }

  /** Resolves once the pending checkpoint has ended (its drafts can land). */
  async finished(): Promise<void> {
    await this.#job?.done;
  }

  /**
   * Starts `run` unless a checkpoint is pending. `run` calls `begin` once it is ready to plan (the pass
   * worker is up) and judges the context it returns, and calls `asking` once its plan asks the
   * classifier. A failed run lands nothing (`run` reports its own failures). Returns whether it started.
   */
  start(context: readonly ProjectedLike[], run: (job: RunningJob) => Promise<Judged | undefined>): boolean {
    if (this.#job) {
      // Not planning yet (the worker is still starting): it judges the newer boundary instead, so a
      // checkpoint that waited is not one about outputs too young to judge.
      if (!this.#job.begun) this.#job.context = context;
      return false;
    }
    this.#job = this.#run(context, false, run);
    return true;
  }

  /**
   * Runs `run` on `context` once the pending pass has ended, with that pass's drafts (undefined if it
   * landed nothing). Returns false when a successor is queued already or nothing is pending.
   */
  follow(context: readonly ProjectedLike[], run: Successor["run"]): boolean {
    const job = this.#job;
    if (!job || this.#successor || this.#second) return false;
    this.#successor = { context, run };
    if (job.settled) this.#startSuccessor(job);
    return true;
  }

  /** The first pass has ended: its successor starts (in its place if it left nothing to land). */
  #startSuccessor(first: Job): void {
    const next = this.#successor;
    if (!next) return;
    this.#successor = undefined;
    const second = this.#run(next.context, false, (job) => next.run(job, first.result));
    if (first.result && this.#job === first) this.#second = second;
    else this.#job = second;
  }

  /**
   * Takes the rest of a handed-over pass into the slot: it was judging `context` and is asking the
   * classifier; its drafts land like a checkpoint's. A checkpoint pending here cannot be, since a pass
   * at a boundary lands it first; it would be dropped.
   */
  adopt(context: readonly ProjectedLike[], rest: Promise<Judged | undefined>): void {
    this.#job = this.#run(context, true, () => rest);
  }

  #run(context: readonly ProjectedLike[], asking: boolean, run: (job: RunningJob) => Promise<Judged | undefined>): Job {
    let planned = () => {};
    const job: Job = {
      context,
      begun: asking,
      asking,
      settled: false,
      result: undefined,
      planned: new Promise((resolve) => {
        planned = resolve;
      }),
      done: Promise.resolve(),
    };
    const running: RunningJob = {
      begin: () => {
        job.begun = true;
        return job.context;
      },
      asking: () => {
        job.asking = true;
        planned();
      },
    };
    job.done = background("checkpoint", async () => {
      try {
        job.result = await run(running);
      } finally {
        job.settled = true;
        planned();
        // Nothing to land: the slot is free at once, so no boundary is needed to clear it.
        if (!job.result && this.#job === job) this.#job = undefined;
        const second = this.#second === job;
        if (!job.result && second) this.#second = undefined;
        if (this.#job === undefined || this.#job === job) this.#startSuccessor(job);
        if (this.#job === job || second || !job.result) this.#ended(job.result !== undefined);
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
    const job = this.#job;
    if (!job || (!job.settled && !options.wait)) return undefined;
    await job.done;
    if (this.#job === job) {
      this.#job = this.#second;
      this.#second = undefined;
    }
    if (!job.result) return undefined;
    // Judged for a run on a branch the session has left (/tree, /fork): its question is not this branch's.
    const leaf = leafOf(job.context);
    if (leaf !== undefined && options.onBranch && !options.onBranch(leaf)) {
      const record = keptWhole(job.result.record, "judged on another branch");
      return { edits: [], record, recordDraft: recordDraft(record), dropped: [], offBranch: true };
    }
    return revalidate(job.result, job.context, now, options.positionOf);
  }

  /** Forgets a pending checkpoint and what follows it (shutdown): their drafts never land. */
  drop(): void {
    this.#job = undefined;
    this.#second = undefined;
    this.#successor = undefined;
  }
}
