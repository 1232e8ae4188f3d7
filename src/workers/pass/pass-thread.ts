// Everything the pass worker keeps on its thread, in one object: the sessions' copies and the passes
// between their messages. A worker thread has one (thisThread); in the inline backend that thread is
// Pi's own, which is why the extension releases its session's store at shutdown.
import type { FinishOutput } from "../../core/distill/finish.ts";
import type { RunPlan } from "../../core/distill/plan.ts";
import type { ClassifierOutcome, SnapEntry } from "../../core/shared/types.ts";
import { SessionStores } from "./session-store.ts";

/** A planned pass, between its plan and its finish. */
export interface HeldPass {
  plan: RunPlan;
  entries: SnapEntry[];
  texts: string[];
  /** Classifier outcomes sent ahead of `finish`. */
  outcomes: ClassifierOutcome[];
}

// A pass is planned and finished within one hook (a handed-over one, by its waiting part); keep a few
// in case passes (of several sessions) overlap.
const MAX_HELD = 8;

function keepFew<T>(map: Map<string, T>): void {
  while (map.size > MAX_HELD) map.delete(map.keys().next().value as string);
}

export class PassThread {
  /** The sessions' copies, one per client. */
  readonly stores = new SessionStores();
  /** Passes between their plan and their finish, by pass id. */
  readonly #passes = new Map<string, HeldPass>();
  /** The parts of a large finish output not yet handed out, by pass id. */
  readonly #parts = new Map<string, FinishOutput[]>();

  holdPass(passId: string, pass: HeldPass): void {
    this.#passes.set(passId, pass);
    keepFew(this.#passes);
  }

  pass(passId: string): HeldPass | undefined {
    return this.#passes.get(passId);
  }

  dropPass(passId: string): void {
    this.#passes.delete(passId);
  }

  holdParts(passId: string, parts: FinishOutput[]): void {
    this.#parts.set(passId, parts);
    keepFew(this.#parts);
  }

  /** The next part of a pass's output; the last one lets the pass go. */
  nextPart(passId: string): FinishOutput | undefined {
    const rest = this.#parts.get(passId);
    const part = rest?.shift();
    if (rest?.length === 0) this.#parts.delete(passId);
    return part;
  }

  /** Passes held between messages (tests). */
  get heldPasses(): number {
    return this.#passes.size + this.#parts.size;
  }
}

/** The state of the thread this module runs on. */
export const thisThread = new PassThread();
