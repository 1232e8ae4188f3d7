// The guard's `turn_end` handler, registered only while the guard has something to do at a turn's end.
// Pi skips the whole turn_end boundary when no extension listens (`hasHandlers`), and otherwise rebuilds
// the boundary's context from the whole branch before the handlers and after each one: a handler that
// returns nothing still costs every turn two copies of the session.
import { traceSwallowed } from "../platform/swallowed.ts";

export type Register = () => () => void;

export class TurnEndHook {
  readonly #register: Register;
  #off: (() => void) | undefined;

  constructor(register: Register) {
    this.#register = register;
  }

  get registered(): boolean {
    return this.#off !== undefined;
  }

  /** Registers or removes the handler; Pi reads its handler list at each emission. */
  set(on: boolean): void {
    if (on === this.registered) return;
    try {
      if (on) this.#off = this.#register();
      else {
        const off = this.#off;
        this.#off = undefined;
        off?.();
      }
    } catch (error) {
      // The extension's API is stale (its session was replaced): nothing listens any more.
      traceSwallowed("turn-end-hook", error);
      this.#off = undefined;
    }
  }
}
