// Evidence tokens shared by the local classifier (lexical.ts) and the needed-later proxy (proxy.ts):
// the distinctive tokens of a text (identifiers, paths, numbers, quoted strings) and its plain words.
// Everything here is a linear regex scan; no allocation per character.

export type TokenKind = "path" | "quoted" | "identifier" | "number";

/** Most distinctive tokens taken from one text (the first ones win). */
export const MAX_TOKENS = 4000;

const FILE_EXTENSIONS = new Set(
  (
    "ts tsx js jsx mjs cjs mts cts json jsonl md mdx txt yml yaml toml ini cfg conf lock py pyi rs go java kt kts " +
    "swift c h cc cpp hpp cs rb php sh bash zsh fish ps1 sql html htm css scss less vue svelte astro xml svg png jpg " +
    "jpeg gif webp pdf log csv tsv proto graphql gql tf lua dart ex exs erl hs ml scala clj r jl nix zig wasm"
  ).split(" "),
);

// Runs of path characters; isPath keeps those with a slash (`src/core/a.ts`, `./x/y`, `/usr/lib/z`) or a
// known file extension. One character class, so the scan stays linear on long lines.
const PATH_RE = /[\w@.+~/-]{4,}/g;
const QUOTED_RE = /"([^"\n\\]{3,120})"|'([^'\n\\]{3,120})'|`([^`\n]{2,120})`/g;
const IDENT_RE = /[A-Za-z_$][\w$]{3,}/g;
const NUMBER_RE = /\b\d+(?:\.\d+){1,3}\b|\b0x[0-9a-fA-F]{4,}\b|\b\d{4,}\b/g;
const WORD_RE = /[A-Za-z][a-z0-9]{2,}|[A-Z]{3,}/g;

/** Code-like identifiers: snake_case, camelCase, PascalCase compounds, letters mixed with digits. */
function isCodeIdentifier(word: string): boolean {
  if (word.length < 4) return false;
  const inner = word.replace(/^[_$]+|[_$]+$/g, "");
  if (inner.length < 3) return false;
  if (/_/.test(inner)) return /[A-Za-z]/.test(inner);
  if (/[a-z][A-Z]/.test(inner)) return true;
  return /[A-Za-z]/.test(inner) && /\d/.test(inner) && inner.length >= 5;
}

function isPath(token: string): boolean {
  if (token.length < 4) return false;
  if (token.includes("/")) {
    const parts = token.split("/").filter((p) => p !== "" && p !== "." && p !== "..");
    if (parts.length < 2 && !/\.[A-Za-z]/.test(token)) return false;
    // Fractions, dates and ratios (1/2, 2024/05/01) are not paths.
    return /[A-Za-z]/.test(token);
  }
  const dot = token.lastIndexOf(".");
  return dot > 0 && FILE_EXTENSIONS.has(token.slice(dot + 1).toLowerCase());
}

/** File names too common to point at one file: only their full paths count. */
const COMMON_FILE_NAMES = new Set(
  (
    "index.js index.ts index.tsx index.jsx index.mjs index.cjs index.d.ts main.js main.ts main.py main.go main.rs " +
    "mod.rs lib.rs types.ts types.d.ts utils.ts utils.js util.ts package.json tsconfig.json README.md readme.md " +
    "__init__.py setup.py Cargo.toml go.mod Makefile"
  ).split(" "),
);

/** A name with a known file extension (`theme.ts`, `dark.json`). */
export function hasFileExtension(name: string): boolean {
  const dot = name.lastIndexOf(".");
  return dot > 0 && FILE_EXTENSIONS.has(name.slice(dot + 1).toLowerCase());
}

/** A file name too common to point at one file (index.ts, package.json). */
export function isCommonFileName(name: string): boolean {
  return COMMON_FILE_NAMES.has(name);
}

function trimPath(token: string): string {
  return token.replace(/[.,:;/-]+$/, "").replace(/^\/(?=\/)/, "");
}

/** The last segment of a path. */
export function basename(path: string): string {
  const slash = path.lastIndexOf("/");
  return slash === -1 ? path : path.slice(slash + 1);
}

/**
 * Distinctive tokens of a text, each with its kind: paths (and the file name of each path, unless
 * `fileNames` is false), quoted strings that look like more than a plain word, code-like identifiers
 * and long numbers (versions, hex, four digits or more). The first kind found wins for a token that
 * matches two patterns.
 */
export function distinctiveTokens(text: string, max = MAX_TOKENS, fileNames = true): Map<string, TokenKind> {
  const out = new Map<string, TokenKind>();
  const add = (token: string, kind: TokenKind) => {
    if (out.size < max && !out.has(token)) out.set(token, kind);
  };
  for (const m of text.matchAll(PATH_RE)) {
    const token = trimPath(m[0]);
    if (!isPath(token) || COMMON_FILE_NAMES.has(token)) continue;
    add(token, "path");
    const base = basename(token);
    if (fileNames && base !== token && isPath(base) && base.length >= 5 && !COMMON_FILE_NAMES.has(base))
      add(base, "path");
  }
  for (const m of text.matchAll(QUOTED_RE)) {
    const inner = (m[1] ?? m[2] ?? m[3] ?? "").trim();
    // A single plain lower-case word in quotes is not distinctive ("version", 'utf8').
    if (inner.length < 4 || /^[a-z]+$/.test(inner) || /^[\d\s.,:-]*$/.test(inner)) continue;
    add(inner, "quoted");
  }
  for (const m of text.matchAll(IDENT_RE)) if (isCodeIdentifier(m[0])) add(m[0], "identifier");
  for (const m of text.matchAll(NUMBER_RE)) add(m[0], "number");
  return out;
}

const STOP_WORDS = new Set(
  (
    "the and for that this with from have has had are was were not but you your all any can will would should " +
    "could into onto then than them they their there here what when where which while who why how its it's " +
    "our out use used using also just only some such very more most much many each other same about after " +
    "before over under again once both does did done doing been being get got make made like need needs " +
    "line lines file files output chunk chunks tool agent user question answer final true false null none " +
    "undefined return const let var function import export default new"
  ).split(" "),
);

/** Lower-cased words of three or more letters, without stop words, as a term → count map. */
export function wordCounts(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const m of text.matchAll(WORD_RE)) {
    const w = m[0].toLowerCase();
    if (STOP_WORDS.has(w)) continue;
    out.set(w, (out.get(w) ?? 0) + 1);
  }
  return out;
}

const ERROR_LINE_RE =
  /^.*(?:\berror\b|\bfailed\b|\bfailure\b|\bexception\b|\bpanic\b|traceback|\bFAIL\b|✗|×|AssertionError|TypeError|ReferenceError|SyntaxError|ENOENT|EACCES|exit code [1-9]).*$/gim;

/** Lines that report an error or a failure. */
export function errorLines(text: string, max = 50): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(ERROR_LINE_RE)) {
    out.push(m[0]);
    if (out.length >= max) break;
  }
  return out;
}
