// Everything the pass worker keeps on its thread, in one object: the sessions' settings and copies, and
// the passes between their messages. A worker thread has one (thisThread); in the inline backend that thread is
// Pi's own, which is why the extension releases its session's store at shutdown.
import type { FinishOutput } from "../../core/distill/finish.ts";
import type { RunPlan } from "../../core/distill/plan.ts";
import type { ClassifierOutcome, SnapEntry } from "../../core/shared/types.ts";
import type { PassSettings } from "./protocol.ts";
import { MAX_STORES, SessionStores } from "./session-store.ts";

/** A planned pass, between its plan and its finish. */
export interface HeldPass {
  plan: RunPlan;
  entries: SnapEntry[];
  texts: string[];
  /** Classifier outcomes sent ahead of `finish`. */
  outcomes: ClassifierOutcome[];
  /** The settings it was planned with (its finish uses them too). */
  settings: PassSettings;
}

// A pass is planned and finished within one hook (a handed-over one, by its waiting part); keep a few
// in case passes (of several sessions) overlap.
const MAX_HELD = 8;

function keepFew<T>(map: Map<string, T>, most = MAX_HELD): void {
  while (map.size > most) map.delete(map.keys().next().value as string);
}

export class PassThread {
  /** The sessions' copies, one per client. */
  readonly stores = new SessionStores();
  /** Each client's settings and their version, as last sent. */
  readonly #settings = new Map<string, { version: number; settings: PassSettings }>();
  /** Passes between their plan and their finish, by pass id. */
  readonly #passes = new Map<string, HeldPass>();
  /** The parts of a large finish output not yet handed out, by pass id. */
  readonly #parts = new Map<string, FinishOutput[]>();

  setSettings(client: string, version: number, settings: PassSettings): void {
    this.#settings.delete(client);
    this.#settings.set(client, { version, settings });
    keepFew(this.#settings, MAX_STORES);
  }

  /** The client's settings if they are the version named. */
  settingsOf(client: string, version: number): PassSettings | undefined {
    const held = this.#settings.get(client);
    return held?.version === version ? held.settings : undefined;
  }

  /** The client's session ended: its settings and store go. Whether it had a store. */
  release(client: string): boolean {
    this.#settings.delete(client);
    return this.stores.drop(client);
  }

  /** Clients with settings or a store here (tests). */
  get clients(): number {
    return new Set([...this.#settings.keys(), ...this.stores.clients()]).size;
  }

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
