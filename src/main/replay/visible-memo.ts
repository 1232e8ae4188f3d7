// The tokens the model still sees (the needed-later proxy's `visible`), following the replay's
// projection: a message's tokens are counted in when it enters the context and out when an edit replaces
// or omits it, so a pass that removed something asks only about the removed piece's own tokens. Tokens are
// kept per message object (the projection keeps an unchanged message's object).
import type { ProjectedSessionEntry } from "@earendil-works/pi-coding-agent";
import { visibleTokens } from "../../core/replay/proxy.ts";
import { VisibleIndex } from "../../core/replay/visible-index.ts";
import type { BranchProjection } from "./branch-projection.ts";
import { messageText } from "./proxy-input.ts";

export class VisibleTracker {
  readonly #index = new VisibleIndex();
  #byMessage = new WeakMap<object, readonly string[]>();
  readonly #cwd: readonly string[];

  /** Starts from the projection as it is and follows its changes. */
  constructor(cwd: string, projection: BranchProjection) {
    // The working folder is in the system prompt: naming it proves nothing.
    this.#cwd = [...visibleTokens([cwd])];
    this.#fill(projection.entries);
    projection.listen(
      (before, after) => {
        for (const m of before ?? []) this.#index.remove(this.#tokens(m));
        for (const m of after.messages) this.#index.add(this.#tokens(m));
      },
      () => this.#fill(projection.entries),
    );
  }

  #fill(entries: readonly ProjectedSessionEntry[]): void {
    this.#index.clear();
    this.#index.add(this.#cwd);
    for (const p of entries) for (const m of p.messages) this.#index.add(this.#tokens(m));
  }

  #tokens(message: unknown): readonly string[] {
    if (!message || typeof message !== "object") return [...visibleTokens([messageText(message)])];
    let tokens = this.#byMessage.get(message);
    if (!tokens) {
      tokens = [...visibleTokens([messageText(message)])];
      this.#byMessage.set(message, tokens);
    }
    return tokens;
  }

  /** The removed text's tokens the model still sees. */
  visibleOf(text: string): Set<string> {
    return this.#index.visibleOf(text);
  }
}
