// The guard's on/off state as the branch records it (core/records/off-spans.ts): a switch entry is left
// when the setting differs from the branch's last switch, so what a run makes while the guard is off is
// never judged later, and `/guard judge` lets go of every span before it.
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import {
  madeWhileOff,
  SWITCH_TYPE,
  type SwitchEntryLike,
  switchData,
  switchedOff,
} from "../../core/records/off-spans.ts";

type Append = (customType: string, data: unknown) => void;

const branchOf = (ctx: ExtensionContext) => ctx.sessionManager.getBranch() as unknown as SwitchEntryLike[];

export class GuardSwitch {
  readonly #append: Append;
  /** The branch's last switch, read once per branch (the session start, /tree) and kept when written. */
  #off: boolean | undefined;

  constructor(append: Append) {
    this.#append = append;
  }

  /** Another branch (/tree): its last switch is read again when needed. */
  forget(): void {
    this.#off = undefined;
  }

  /** Leaves a switch entry when `enabled` is not what the branch's last switch says. */
  mark(ctx: ExtensionContext, enabled: boolean): void {
    this.#off ??= switchedOff(branchOf(ctx)).off;
    if (this.#off === !enabled) return;
    // The "on" switch names the "off" it ends, so a compaction that drops the "off" still bounds the span.
    const from = enabled ? switchedOff(branchOf(ctx)).at : undefined;
    this.#append(SWITCH_TYPE, switchData(enabled, from));
    this.#off = !enabled;
  }

  /** `/guard judge`: returns how many entries were held back (a switch that lets go is left if any). */
  judge(ctx: ExtensionContext): number {
    const held = madeWhileOff(branchOf(ctx)).size;
    if (held > 0) this.#append(SWITCH_TYPE, switchData(true, undefined, true));
    return held;
  }
}
