// The footer: the guard's state drawn in the theme's colours. Redraws are frequent (every turn), so only
// a changed text reaches the UI.
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import { type GuardState, statusText } from "./status.ts";

const STATUS_KEY = "context-guard";

type Theme = ExtensionContext["ui"]["theme"];

/** States that are the guard at work, not a problem. */
const CALM: ReadonlySet<GuardState["kind"]> = new Set(["ready", "busy", "checkpoint", "handing-over"]);

/** The footer text for a state, coloured: savings stand out, a problem is a warning. */
export function styledStatus(state: GuardState, theme: Pick<Theme, "fg">): string {
  const text = statusText(state);
  if (state.kind === "ready" && (state.savings.items > 0 || (state.dollars?.net ?? 0) > 0)) {
    return text.replace(
      /^(🛡 (?:\$\S+ saved|−\S+))(.*)$/u,
      (_m, head: string, rest: string) => theme.fg("success", head) + theme.fg("dim", rest),
    );
  }
  return CALM.has(state.kind) ? theme.fg("dim", text) : theme.fg("warning", text);
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
