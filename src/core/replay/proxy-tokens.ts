// The needed-later proxy's evidence tokens. They are the shared distinctive tokens with two changes: a
// removed piece's paths are kept as written, since a bare file name would match any file of that name
// in another folder; and dotted names (`output.reconcile`) count in plain text, not only in backticks.

import {
  basename,
  distinctiveTokens,
  hasFileExtension,
  isCommonFileName,
  MAX_TOKENS,
  type TokenKind,
} from "../shared/tokens.ts";

// Two or more parts of two characters or more, not glued to a path or a longer word.
const DOTTED_RE = /(?<![\w$./-])[A-Za-z_$][\w$]+(?:\.[A-Za-z_$][\w$]+)+(?![\w$/-])/g;

function addDotted(text: string, out: Map<string, TokenKind>, max: number): void {
  for (const m of text.matchAll(DOTTED_RE)) {
    if (out.size >= max) return;
    const name = m[0];
    // A file name is a path (or, when common, nothing): not a dotted name.
    if (name.length >= 6 && !hasFileExtension(name) && !out.has(name)) out.set(name, "identifier");
  }
}

/** Tokens of a removed piece or a later message: paths as written (no bare file names taken from them). */
export function proxyTokens(text: string, max = MAX_TOKENS): Map<string, TokenKind> {
  const out = distinctiveTokens(text, max, false);
  // A quoted "package.json" names no file in particular either.
  for (const token of out.keys()) if (isCommonFileName(token)) out.delete(token);
  addDotted(text, out, max);
  return out;
}

/** A relative import (`./theme.js`, `../src/utils.js`) follows a convention: weak evidence, like a number. */
export function isWeak(token: string, kind: TokenKind): boolean {
  return kind === "number" || token.startsWith("./") || token.startsWith("../");
}

/** Tokens of what stays in view: the file name of each path too, so a bare name in a piece is seen. */
export function shownTokens(text: string, max = MAX_TOKENS): Map<string, TokenKind> {
  const out = distinctiveTokens(text, max);
  addDotted(text, out, max);
  return out;
}

// An import names `x.js` for the source file `x.ts`: both spell the same file.
const SCRIPT_EXT = /\.([mc]?)[jt]s(x?)$/;

/** A path as compared: leading `./` and `../` dropped, a script extension spelled `.ts`. */
function normal(path: string): string {
  return path.replace(/^(?:\.\.?\/)+/, "").replace(SCRIPT_EXT, ".$1ts$2");
}

/** The file name of a path token, as compared (`theme.js` and `theme.ts` are one). */
export function fileName(path: string): string {
  return normal(basename(path));
}

/** Two path tokens name the same file when one is the other or ends with it after a slash. */
export function samePath(a: string, b: string): boolean {
  const x = normal(a);
  const y = normal(b);
  return x === y || x.endsWith(`/${y}`) || y.endsWith(`/${x}`);
}
