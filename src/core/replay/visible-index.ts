// What the model still sees, kept as the context changes: each token with the number of projected
// messages that hold it, and the file names and folder names of the visible paths. The needed-later proxy
// asks it, at each pass that removed something, which of a removed piece's tokens are still visible; the
// answer equals asking the union of every message's tokens (proxy.ts, isVisible), without building that
// union at every pass.
import type { TokenKind } from "../shared/tokens.ts";
import { fileName, proxyTokens, samePath } from "./proxy-tokens.ts";

export class VisibleIndex {
  #count = new Map<string, number>();
  /** Visible paths by file name. */
  #paths = new Map<string, Set<string>>();
  /** Folder or file names (3 characters or more) inside visible paths, with the number of such paths. */
  #segments = new Map<string, number>();

  add(tokens: Iterable<string>): void {
    for (const t of tokens) {
      const n = this.#count.get(t) ?? 0;
      this.#count.set(t, n + 1);
      if (n === 0 && t.includes("/")) this.#path(t, 1);
    }
  }

  remove(tokens: Iterable<string>): void {
    for (const t of tokens) {
      const n = this.#count.get(t) ?? 0;
      if (n > 1) {
        this.#count.set(t, n - 1);
        continue;
      }
      if (n === 0) continue;
      this.#count.delete(t);
      if (t.includes("/")) this.#path(t, -1);
    }
  }

  clear(): void {
    this.#count.clear();
    this.#paths.clear();
    this.#segments.clear();
  }

  #path(t: string, step: 1 | -1): void {
    const name = fileName(t);
    const paths = this.#paths.get(name) ?? new Set<string>();
    if (step > 0) paths.add(t);
    else paths.delete(t);
    if (paths.size > 0) this.#paths.set(name, paths);
    else this.#paths.delete(name);
    for (const part of new Set(t.split("/"))) {
      if (part.length < 3) continue;
      const n = (this.#segments.get(part) ?? 0) + step;
      if (n > 0) this.#segments.set(part, n);
      else this.#segments.delete(part);
    }
  }

  /** Whether the model sees the token: as written, as another spelling of a path, or inside a path. */
  sees(token: string, kind: TokenKind): boolean {
    if (this.#count.has(token)) return true;
    if (kind !== "path") return this.#segments.has(token);
    for (const t of this.#paths.get(fileName(token)) ?? []) if (samePath(t, token)) return true;
    return false;
  }

  /**
   * The tokens of a removed piece that are still visible: as the piece's `visible`, it answers every
   * question findSuspects asks about the piece as the whole visible set would.
   */
  visibleOf(text: string): Set<string> {
    const out = new Set<string>();
    for (const [token, kind] of proxyTokens(text)) if (this.sees(token, kind)) out.add(token);
    return out;
  }
}
