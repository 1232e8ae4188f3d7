// The tokens the model still sees after a pass (the needed-later proxy's `visible`): the union of every
// projected message's tokens. Each pass of a long session tokenized the whole context again; a message
// Pi projects unchanged is the same object from pass to pass, so its tokens are kept per object.
import { visibleTokens } from "../../core/replay/proxy.ts";
import { messageText } from "./proxy-input.ts";

export class VisibleMemo {
  #byMessage = new WeakMap<object, readonly string[]>();

  /** What visibleTokens([cwd, ...messages as text]) gives. */
  of(cwd: string, messages: readonly unknown[]): Set<string> {
    const out = visibleTokens([cwd]);
    for (const message of messages) {
      if (!message || typeof message !== "object") {
        for (const t of visibleTokens([messageText(message)])) out.add(t);
        continue;
      }
      let tokens = this.#byMessage.get(message);
      if (!tokens) {
        tokens = [...visibleTokens([messageText(message)])];
        this.#byMessage.set(message, tokens);
      }
      for (const t of tokens) out.add(t);
    }
    return out;
  }
}
