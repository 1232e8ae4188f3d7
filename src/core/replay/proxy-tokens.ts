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

// JSON or a log printed as text keeps its escapes: `\nFor` must read as a line break and `For`, not as
// the identifier `nFor`.
const ESCAPE_RE = /\\[nrt]/g;

function unescaped(text: string): string {
  return text.includes("\\") ? text.replace(ESCAPE_RE, " ") : text;
}

/** Tokens of a removed piece or a later message: paths as written (no bare file names taken from them). */
export function proxyTokens(raw: string, max = MAX_TOKENS): Map<string, TokenKind> {
  const text = unescaped(raw);
  const out = distinctiveTokens(text, max, false);
  // A quoted "package.json" names no file in particular either.
  for (const token of out.keys()) if (isCommonFileName(token)) out.delete(token);
  addDotted(text, out, max);
  return out;
}

// Names that read like a product or a library's everyday API more than like this project's code: two
// capitalised words (`OpenClaw`, `ForEach`, `TypeScript`), or a word with a number (`base64`, `utf16`).
const COMMON_NAME_RE = /^(?:[A-Z][a-z]+[A-Z][a-z]+|[a-z]+\d+)$/;
// A MIME type (`application/json`) is not a path.
const MIME_RE = /^(?:application|text|image|audio|video|multipart|font)\/[\w.+-]+$/;

/**
 * Weak evidence, needed two at a time: numbers, relative imports (`./theme.js` follows a convention),
 * common names and MIME types.
 */
export function isWeak(token: string, kind: TokenKind): boolean {
  if (kind === "number" || token.startsWith("./") || token.startsWith("../")) return true;
  return COMMON_NAME_RE.test(token) || MIME_RE.test(token);
}

/** Tokens of what stays in view: the file name of each path too, so a bare name in a piece is seen. */
export function shownTokens(raw: string, max = MAX_TOKENS): Map<string, TokenKind> {
  const text = unescaped(raw);
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
