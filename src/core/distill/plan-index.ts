// What a plan reads about the whole session, kept up to date entry by entry. The pass worker holds one
// PlanIndex per session (workers/pass/session-store.ts) and updates it with what each boundary appended
// or edited, so a plan asks the index instead of walking every entry again. `sessionReads` without an
// index computes the same answers from the snapshot alone: tests hold the two equal.

import { sessionRequests } from "../cache/break-even.ts";
import { addToMemo, addTurn, checkpointMemo, noTurns, type RunTurns, runTurns } from "../cache/checkpoint.ts";
import { ExchangeSplit } from "../items/exchange-split.ts";
import { collectImages, type ImageItem, imageItem, isToolResultWithImages } from "../items/images.ts";
import { type GuardJudgments, JudgmentsFold, readJudgments } from "../items/judged.ts";
import { SupersededFold, supersededIn } from "../items/superseded.ts";
import { madeWhileOff, OffSpans } from "../records/off-spans.ts";
import { addPins, noPins, type Pins, readPins } from "../records/pins.ts";
import type { RunSpan, SnapEntry, SnapToolCall } from "../shared/types.ts";

/** What the run so far holds, for a checkpoint: turns, outputs judged at its checkpoints, results' calls. */
export interface RunReads {
  turns: RunTurns;
  /** checkpointMemo's answer. */
  memo: Set<string>;
  /** The call id behind each tool result of the run. */
  calls: Map<string, string>;
  /** supersededIn's answer. */
  superseded: Map<string, string>;
}

/** The session-wide answers a plan needs. Read them before the snapshot changes; none may be mutated. */
export interface SessionReads {
  judged(): GuardJudgments;
  pins(): Pins;
  /** madeWhileOff's answer. */
  off(): Set<string>;
  /** sessionRequests' answer. */
  requests(): number;
  /** Position of an entry in the snapshot, -1 when absent. */
  positionOf(id: string): number;
  images(keepTurns: number, promptIndex: number): ImageItem[];
  run(span: RunSpan): RunReads;
  /** The exchanges before `runStart`, kept by the index; undefined: collectExchanges makes them. */
  exchanges(runStart: number): ExchangeSplit | undefined;
}

/** The answers read from the snapshot itself, each computed once when first asked. */
export function sessionReads(entries: SnapEntry[], index?: PlanIndex): SessionReads {
  if (index?.holds(entries)) return index;
  const once = <T>(make: () => T) => {
    let value: T | undefined;
    let made = false;
    return () => {
      if (!made) {
        value = make();
        made = true;
      }
      return value as T;
    };
  };
  const positions = once(() => new Map(entries.map((e, i) => [e.id, i])));
  return {
    judged: once(() => readJudgments(entries)),
    pins: once(() => readPins(entries)),
    off: once(() => madeWhileOff(entries)),
    requests: once(() => sessionRequests(entries)),
    positionOf: (id) => positions().get(id) ?? -1,
    images: (keepTurns, promptIndex) => collectImages(entries, keepTurns, promptIndex),
    run: (span) => ({
      turns: runTurns(entries, span),
      memo: checkpointMemo(entries, span.startIndex),
      calls: resultCalls(entries, span.startIndex + 1),
      superseded: supersededIn(entries, span),
    }),
    exchanges: () => undefined,
  };
}

/** The call id behind each tool result from `from` on. */
function resultCalls(entries: readonly SnapEntry[], from: number): Map<string, string> {
  const out = new Map<string, string>();
  for (let i = from; i < entries.length; i++) addResultCall(out, entries[i] as SnapEntry);
  return out;
}

function addResultCall(out: Map<string, string>, e: SnapEntry): void {
  if (e.role === "toolResult" && e.toolCallId) out.set(e.id, e.toolCallId);
}

const carriesImages = isToolResultWithImages;

/** Counts per position with prefix sums, growing as positions are added (a Fenwick tree). */
class PrefixCounts {
  #tree = new Int32Array(1024);
  #values = new Int8Array(1024);
  #size = 0;

  push(value: 0 | 1): void {
    if (this.#size === this.#values.length) {
      const values = new Int8Array(this.#values.length * 2);
      values.set(this.#values);
      this.#values = values;
      this.#tree = new Int32Array(values.length);
      const size = this.#size;
      this.#size = 0;
      for (let i = 0; i < size; i++) this.#add(i, values[i] as number);
      this.#size = size;
    }
    this.#size++;
    this.set(this.#size - 1, value);
  }

  set(at: number, value: 0 | 1): void {
    const delta = value - (this.#values[at] as number);
    this.#values[at] = value;
    if (delta !== 0) this.#add(at, delta);
  }

  #add(at: number, delta: number): void {
    for (let i = at + 1; i <= this.#tree.length; i += i & -i) this.#tree[i - 1] = (this.#tree[i - 1] as number) + delta;
  }

  /** The sum over positions before `end`. */
  before(end: number): number {
    let sum = 0;
    for (let i = end; i > 0; i -= i & -i) sum += this.#tree[i - 1] as number;
    return sum;
  }
}

const isRequest = (e: SnapEntry) => e.visible && e.role === "assistant";

interface RunFolds extends RunReads {
  supersededFold: SupersededFold;
  promptId: string;
  start: number;
  /** Entries folded so far: the run's are those from start + 1 up to here. */
  done: number;
}

/**
 * The session's indexes. `update` takes each new snapshot with what changed since the one before: the
 * number of leading positions that hold the same ids, and the ids sent since (new or edited entries).
 * Anything else than appended entries and edited messages rebuilds the index.
 */
export class PlanIndex implements SessionReads {
  #entries: readonly SnapEntry[] = [];
  #positions = new Map<string, number>();
  #requests = 0;
  /** Visible assistant messages by position: the turns after an image are counted from them. */
  #assistants = new PrefixCounts();
  #withImages = new Set<string>();
  /** collectImages' call of each id (the latest with it), or undefined until an edit changes a call. */
  #calls: Map<string, SnapToolCall> | undefined = new Map();
  #judgments = new JudgmentsFold();
  #pins = noPins();
  #off = new OffSpans();
  #run: RunFolds | undefined;
  #split: ExchangeSplit | undefined;
  /** Full rebuilds so far (tests and benchmarks read it). */
  rebuilds = 0;

  /** Whether the index stands for exactly this snapshot. */
  holds(entries: readonly SnapEntry[]): boolean {
    return entries === this.#entries;
  }

  update(entries: readonly SnapEntry[], keep: number, fresh: Iterable<string>): void {
    const before = this.#entries;
    if (keep < before.length) {
      this.#rebuild(entries);
      return;
    }
    // An id sent twice since the last order is one edit: the old entry against the new.
    for (const id of new Set(fresh)) {
      const at = this.#positions.get(id);
      if (at === undefined || at >= before.length) continue;
      const was = before[at] as SnapEntry;
      const now = entries[at] as SnapEntry;
      if (was !== now && !this.#replace(entries, at, was, now)) {
        this.#rebuild(entries);
        return;
      }
    }
    for (let i = before.length; i < entries.length; i++) this.#append(entries[i] as SnapEntry, i);
    this.#entries = entries;
  }

  #rebuild(entries: readonly SnapEntry[]): void {
    this.rebuilds++;
    this.#entries = [];
    this.#positions = new Map();
    this.#requests = 0;
    this.#assistants = new PrefixCounts();
    this.#withImages = new Set();
    this.#calls = new Map();
    this.#judgments = new JudgmentsFold();
    this.#pins = noPins();
    this.#off = new OffSpans();
    this.#run = undefined;
    this.#split = undefined;
    for (let i = 0; i < entries.length; i++) this.#append(entries[i] as SnapEntry, i);
    this.#entries = entries;
  }

  #append(e: SnapEntry, at: number): void {
    this.#positions.set(e.id, at);
    if (isRequest(e)) this.#requests++;
    this.#assistants.push(isRequest(e) ? 1 : 0);
    if (carriesImages(e)) this.#withImages.add(e.id);
    if (e.role === "assistant") for (const call of e.toolCalls ?? []) this.#calls?.set(call.id, call);
    this.#judgments.add(e);
    addPins(this.#pins, e);
    this.#off.add(e);
  }

  /** An edited message in place: false when the folds cannot take the change (the index is rebuilt). */
  #replace(entries: readonly SnapEntry[], at: number, was: SnapEntry, now: SnapEntry): boolean {
    // Records, pins and switches are custom entries, which are never edited: only messages are taken.
    if (was.id !== now.id || was.type !== "message" || now.type !== "message") return false;
    this.#requests += (isRequest(now) ? 1 : 0) - (isRequest(was) ? 1 : 0);
    this.#assistants.set(at, isRequest(now) ? 1 : 0);
    if (carriesImages(now)) this.#withImages.add(now.id);
    else this.#withImages.delete(now.id);
    if (was.role === "assistant" || now.role === "assistant") this.#calls = undefined;
    if (this.#split && !this.#split.replace(entries, at, was, now)) this.#split = undefined;
    const run = this.#run;
    if (run && at > run.start && at < run.done) {
      // The run's turns count assistant messages and their calls; a result keeps its call.
      if (was.role === "assistant" || now.role === "assistant") this.#run = undefined;
      else if (was.toolCallId !== now.toolCallId) this.#run = undefined;
    }
    return true;
  }

  judged(): GuardJudgments {
    return this.#judgments.judgments;
  }

  pins(): Pins {
    return this.#pins;
  }

  off(): Set<string> {
    return this.#off.off;
  }

  requests(): number {
    return this.#requests;
  }

  positionOf(id: string): number {
    return this.#positions.get(id) ?? -1;
  }

  images(keepTurns: number, promptIndex: number): ImageItem[] {
    if (this.#withImages.size === 0) return [];
    const entries = this.#entries;
    if (!this.#calls) {
      this.#calls = new Map();
      for (const e of entries) if (e.role === "assistant") for (const c of e.toolCalls ?? []) this.#calls.set(c.id, c);
    }
    const at = [...this.#withImages].map((id) => this.positionOf(id)).sort((a, b) => a - b);
    const found: ImageItem[] = [];
    for (const i of at) {
      const turns = this.#requests - this.#assistants.before(i + 1);
      if (turns >= keepTurns) found.push(imageItem(entries[i] as SnapEntry, this.#calls, turns, i < promptIndex));
    }
    return found;
  }

  exchanges(runStart: number): ExchangeSplit {
    const end = Math.max(0, Math.min(runStart, this.#entries.length));
    if (!this.#split?.extend(this.#entries, end)) {
      this.#split = new ExchangeSplit();
      this.#split.extend(this.#entries, end);
    }
    return this.#split;
  }

  run(span: RunSpan): RunReads {
    const entries = this.#entries;
    let run = this.#run;
    if (run === undefined || run.start !== span.startIndex || run.promptId !== span.promptId) {
      const start = span.startIndex;
      const supersededFold = new SupersededFold();
      run = {
        promptId: span.promptId,
        start,
        done: start + 1,
        turns: noTurns(),
        memo: new Set(),
        calls: new Map(),
        supersededFold,
        superseded: supersededFold.notes,
      };
      this.#run = run;
    }
    for (; run.done < entries.length; run.done++) {
      const e = entries[run.done] as SnapEntry;
      addTurn(run.turns, e);
      addToMemo(run.memo, e);
      addResultCall(run.calls, e);
      run.supersededFold.add(e);
    }
    return run;
  }
}
