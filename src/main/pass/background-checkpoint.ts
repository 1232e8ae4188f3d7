// A mid-run checkpoint that runs while the agent goes on: started at one turn_end, its drafts are handed
// back at the first later boundary after it has finished. By then the context has moved on, so each
// draft is checked again against that boundary's context; a target shown with other content than the
// checkpoint judged (edited meanwhile, by another extension or another pass), or one the user pinned
// meanwhile, is dropped from it, and the record says so. At most one runs at a time. The rest of a
// handed-over run-end pass takes the same slot and lands the same way.
import { type PinEntryLike, readPins } from "../../core/records/pins.ts";
import { recordDraft, savedChars } from "../../core/records/record.ts";
import type { ContextEditDraft, CustomDraft, GuardRecord } from "../../core/shared/types.ts";
import { background } from "../platform/callbacks.ts";
import type { ProjectedLike } from "./snapshot.ts";
import { validateEditsPaced } from "./validate.ts";

/** What a finished pass hands back: its edits and its record (the drafts not yet returned to Pi). */
export interface Judged {
  edits: ContextEditDraft[];
  record: GuardRecord;
}

/** A checkpoint's drafts as they land at a later boundary. */
export interface Landed {
  edits: ContextEditDraft[];
  record: GuardRecord;
  recordDraft: CustomDraft;
  /** Targets dropped at landing, with why. */
  dropped: Array<{ targetId: string; why: string }>;
  /** It was judged on a branch the session has left: nothing of it lands (the record says why). */
  offBranch?: true;
}

/** The record of a pass dropped whole: every result kept, and why. */
function keptWhole(record: GuardRecord, why: string): GuardRecord {
  const results = record.results.map((r) => ({
    ...r,
    outcome: "kept" as const,
    reason: `rejected: ${why}`,
    afterChars: r.beforeChars,
  }));
  return { ...record, results, savedChars: savedChars(results) };
}

/** What a boundary shows of an entry: the first message's content object and the number of messages. */
interface Shown {
  content: unknown;
  count: number;
}

function shownOf(entry: ProjectedLike): Shown {
  const first = entry.messages[0] as { content?: unknown } | undefined;
  return { content: first?.content, count: entry.messages.length };
}

/**
 * What the judged context showed of each target. Pi's entries and an edit's content are immutable
 * objects, so the same object means the same content, and another object means another edit applies.
 */
function shownTargets(context: readonly ProjectedLike[], edits: readonly ContextEditDraft[]): Map<string, Shown> {
  const targets = new Set(edits.map((e) => e.targetId));
  const out = new Map<string, Shown>();
  for (const entry of context) {
    if (targets.has(entry.sourceEntry.id)) out.set(entry.sourceEntry.id, shownOf(entry));
  }
  return out;
}

/**
 * Entries the user pinned or restored since (read from `now`), and the prompt of each exchange the pass
 * would omit with one of them inside: its stub is dropped, and the validation drops its omissions with it.
 */
function pinnedTargets(judged: Judged, now: readonly ProjectedLike[]): Set<string> {
  const { pinned } = readPins(now.map((p) => p.sourceEntry as PinEntryLike));
  if (pinned.size === 0) return pinned;
  const out = new Set(pinned);
  for (const r of judged.record.results) {
    if (r.kind === "exchange" && r.omitted?.some((id) => pinned.has(id))) out.add(r.entryId);
  }
  return out;
}

/**
 * Checks a pass's drafts against a later context: a target that shows other content than when it was
 * judged, or that the user pinned since, is dropped, then every rule of the usual validation applies.
 * Dropped results become "kept".
 */
export async function revalidate(
  judged: Judged,
  then: readonly ProjectedLike[],
  now: readonly ProjectedLike[],
  positionOf?: (id: string) => number | undefined,
): Promise<Landed> {
  const before = shownTargets(then, judged.edits);
  const pinned = pinnedTargets(judged, now);
  const { valid, dropped } = await validateEditsPaced(judged.edits, now, positionOf, (draft, target) => {
    if (pinned.has(draft.targetId)) return "pinned since it was judged";
    const was = before.get(draft.targetId);
    const is = shownOf(target);
    return was && was.content === is.content && was.count === is.count ? undefined : "changed since it was judged";
  });
  let record = judged.record;
  if (dropped.length > 0) {
    const why = new Map(dropped.map((d) => [d.draft.targetId, d.why]));
    const results = record.results.map((r) =>
      why.has(r.entryId)
        ? { ...r, outcome: "kept" as const, reason: `rejected: ${why.get(r.entryId)}`, afterChars: r.beforeChars }
        : r,
    );
    record = { ...record, results, savedChars: savedChars(results) };
  }
  return {
    edits: valid,
    record,
    recordDraft: recordDraft(record),
    dropped: dropped.map((d) => ({ targetId: d.draft.targetId, why: d.why })),
  };
}

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

export class BackgroundCheckpoint {
  #job: Job | undefined;

  /** A checkpoint was started and its drafts have not landed yet (finished or not). */
  get pending(): boolean {
    return this.#job !== undefined;
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
    const leaf = job.context.at(-1)?.sourceEntry.id;
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
    this.#job = undefined;
    if (!job.result) return undefined;
    // Judged for a run on a branch the session has left (/tree, /fork): its question is not this branch's.
    const leaf = job.context.at(-1)?.sourceEntry.id;
    if (leaf !== undefined && options.onBranch && !options.onBranch(leaf)) {
      const record = keptWhole(job.result.record, "judged on another branch");
      return { edits: [], record, recordDraft: recordDraft(record), dropped: [], offBranch: true };
    }
    return revalidate(job.result, job.context, now, options.positionOf);
  }

  /** Forgets a pending checkpoint (shutdown): its drafts never land. */
  drop(): void {
    this.#job = undefined;
  }
}
