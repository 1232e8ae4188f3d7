// The session's boundary machine (core/boundary/machine.ts) held in one place: every object at the
// boundaries sends it their events and carries out the effects it returns; the turn_end handler's
// registration goes to whoever listens for it.
import {
  type BoundaryEvent,
  type Effect,
  initial,
  type Machine,
  type Settings,
  step,
} from "../../core/boundary/machine.ts";

/** The machine's settings before the session's are known (a slot on its own, in tests). */
export const DEFAULT_SETTINGS: Settings = { enabled: true, midRun: true, midRunWait: false, waitsWhole: false };

export class BoundaryMachine {
  #state: Machine;
  /** Told when the turn_end handler is to be registered or dropped. */
  onHook: ((on: boolean) => void) | undefined;

  constructor(settings: Settings = DEFAULT_SETTINGS) {
    this.#state = initial(settings);
  }

  get state(): Machine {
    return this.#state;
  }

  /** Steps the machine; returns the effects for the caller to carry out (the hook's are carried out here). */
  send(event: BoundaryEvent): Effect[] {
    const { state, effects } = step(this.#state, event);
    this.#state = state;
    for (const e of effects) if (e.type === "hook") this.onHook?.(e.on);
    return effects;
  }
}
