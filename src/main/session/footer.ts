// The footer: the guard's state drawn in the theme's colours. Redraws are frequent (every turn), so only
// a changed text reaches the UI.
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import { type GuardState, readyParts, statusText } from "./status.ts";

const STATUS_KEY = "context-guard";

type Theme = ExtensionContext["ui"]["theme"];

/** States that are the guard at work, not a problem. */
const CALM: ReadonlySet<GuardState["kind"]> = new Set(["ready", "busy", "checkpoint", "handing-over"]);

/** The footer text for a state, coloured: savings stand out, a problem is a warning. */
export function styledStatus(state: GuardState, theme: Pick<Theme, "fg">): string {
  if (state.kind === "ready") {
    const { saved, rest } = readyParts(state);
    return saved ? theme.fg("success", saved) + theme.fg("dim", rest) : theme.fg("dim", rest);
  }
  return CALM.has(state.kind) ? theme.fg("dim", statusText(state)) : theme.fg("warning", statusText(state));
}

export class Footer {
  /** The text last sent to the UI. */
  #shown: string | undefined;

  show(ctx: Pick<ExtensionContext, "ui">, state: GuardState): void {
    const styled = styledStatus(state, ctx.ui.theme);
    if (styled === this.#shown) return;
    this.#shown = styled;
    ctx.ui.setStatus(STATUS_KEY, styled);
  }
}
