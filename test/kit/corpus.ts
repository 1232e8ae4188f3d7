/**
 * Real text for the heavy-session generator, read offline from the Pi packages in node_modules.
 *
 * The corpus is the sorted list of `.js`, `.d.ts` and `.md` files under `node_modules/@earendil-works/<pkg>/{dist,docs}`
 * (bundles, vendored and minified files, and files over 200 KB are skipped), read once and cached in module scope.
 * Reading stops at {@link CORPUS_BUDGET_BYTES}. The package versions are pinned by package-lock.json, so the corpus
 * (and therefore every generated session) is identical on every machine after `npm ci`.
 *
 * If the packages cannot be found, a small built-in corpus is used so that the generator still works (the output is
 * then less varied, but still deterministic).
 */

import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Rng } from "./prng.ts";

/** Upper bound on the bytes read from disk. */
export const CORPUS_BUDGET_BYTES = 8 * 1024 * 1024;
/** Files larger than this are skipped (generated bundles, huge data files). */
const MAX_FILE_BYTES = 200 * 1024;
/** Lines longer than this never count as grep matches (minified code); they can still appear as context. */
const MAX_MATCH_LINE = 300;

export interface CorpusFile {
  /** Path relative to `node_modules/@earendil-works`, with `/` separators, e.g. `pi-ai/dist/types.d.ts`. */
  path: string;
  /** The file's text (CRLF normalized to LF). */
  text: string;
  /** The file's lines (without the trailing empty line of a final newline). */
  lines: string[];
  /** Byte length of `text` in UTF-8. */
  bytes: number;
  /** Function/class names declared in this file (JavaScript files only). */
  decls: string[];
}

export interface Corpus {
  /** Absolute directory the paths are relative to, or "(builtin)". */
  root: string;
  files: CorpusFile[];
  /** Total UTF-8 bytes of all files. */
  bytes: number;
  /** Total number of lines. */
  lineCount: number;
  /** Search terms that occur often enough to give realistic `rg` results, most frequent first. */
  terms: string[];
  /** Estimated number of occurrences of each term in the whole corpus. */
  termCounts: Map<string, number>;
  /** Function/class names declared in the corpus (for test names, stack traces). */
  identifiers: string[];
  /** Indexes of files that are source code (.js/.d.ts). */
  codeFiles: number[];
  /** Indexes of .js files that declare at least one function or class. */
  declFiles: number[];
  /** Path → file index. */
  indexOf: Map<string, number>;
  /** Indexes of Markdown files. */
  docFiles: number[];
}

let cached: Corpus | undefined;

/** Returns the corpus, loading it on first use. */
export function getCorpus(): Corpus {
  cached ??= loadCorpus();
  return cached;
}

function findPackagesRoot(): string | undefined {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = join(dir, "node_modules", "@earendil-works");
    if (existsSync(candidate)) return candidate;
    const parent = dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}

function isWanted(name: string): boolean {
  if (name.endsWith(".min.js")) return false;
  return name.endsWith(".js") || name.endsWith(".d.ts") || name.endsWith(".md");
}

function walk(absDir: string, relDir: string, out: { rel: string; abs: string; size: number }[]): void {
  let names: string[];
  try {
    names = readdirSync(absDir);
  } catch {
    return;
  }
  for (const name of names) {
    if (name === "bundle" || name === "vendor" || name === "node_modules") continue;
    const abs = join(absDir, name);
    const rel = `${relDir}/${name}`;
    let st: ReturnType<typeof statSync>;
    try {
      st = statSync(abs);
    } catch {
      continue;
    }
    if (st.isDirectory()) walk(abs, rel, out);
    else if (st.isFile() && isWanted(name) && st.size > 0 && st.size <= MAX_FILE_BYTES)
      out.push({ rel, abs, size: st.size });
  }
}

function byCodeUnit(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function loadCorpus(): Corpus {
  const root = findPackagesRoot();
  const found: { rel: string; abs: string; size: number }[] = [];
  if (root) {
    for (const pkg of readdirSync(root).sort(byCodeUnit)) {
      for (const sub of ["dist", "docs"]) {
        const abs = join(root, pkg, sub);
        if (existsSync(abs)) walk(abs, `${pkg}/${sub}`, found);
      }
    }
  }
  found.sort((a, b) => byCodeUnit(a.rel, b.rel));
  const files: CorpusFile[] = [];
  let total = 0;
  for (const f of found) {
    if (total + f.size > CORPUS_BUDGET_BYTES) continue;
    total += f.size;
    const text = readFileSync(f.abs, "utf8").replace(/\r\n?/g, "\n");
    files.push(makeFile(f.rel, text));
  }
  if (files.length === 0) return finish("(builtin)", builtinFiles());
  return finish(root ?? "(builtin)", files);
}

function makeFile(path: string, text: string): CorpusFile {
  const lines = text.split("\n");
  if (lines.length > 1 && lines[lines.length - 1] === "") lines.pop();
  return { path, text, lines, bytes: Buffer.byteLength(text), decls: [] };
}

/** Terms a developer would plausibly grep for in these packages; kept when they occur often enough. */
const CANDIDATE_TERMS = [
  "toolCall",
  "toolResult",
  "sessionManager",
  "SessionEntry",
  "parentId",
  "timestamp",
  "thinkingLevel",
  "stopReason",
  "usage",
  "provider",
  "model",
  "content",
  "message",
  "signal",
  "abort",
  "timeout",
  "export function",
  "export interface",
  "import {",
  "await ",
  "async ",
  "throw new Error",
  "return ",
  "const ",
  "TODO",
  "options",
  "config",
  "render",
  "theme",
  "width",
  "cache",
  "apiKey",
  "stream",
  "text",
  "error",
  "extension",
  "customType",
  "details",
  "truncate",
  "maxBytes",
  "compaction",
  "context",
  "buildSession",
  "appendMessage",
  "Promise<",
  "readonly ",
  "string | undefined",
  "JSON.stringify",
  "JSON.parse",
  "process.env",
  "path",
  "cwd",
  "Type.Object",
  "assistant",
  "session",
];

function finish(root: string, files: CorpusFile[]): Corpus {
  let bytes = 0;
  let lineCount = 0;
  const codeFiles: number[] = [];
  const docFiles: number[] = [];
  const identifiers = new Set<string>();
  const declFiles: number[] = [];
  const indexOf = new Map<string, number>();
  const declRe = /\b(?:function|class)\s+([A-Za-z_$][\w$]{3,40})/;
  for (let i = 0; i < files.length; i++) {
    const f = files[i]!;
    bytes += f.bytes;
    lineCount += f.lines.length;
    if (f.path.endsWith(".md")) docFiles.push(i);
    else codeFiles.push(i);
    indexOf.set(f.path, i);
    if (!f.path.endsWith(".js")) continue;
    for (const line of f.lines) {
      if (line.length > 200 || (!line.includes("function") && !line.includes("class"))) continue;
      const m = declRe.exec(line);
      if (m?.[1] && !m[1].startsWith("_") && !f.decls.includes(m[1])) {
        identifiers.add(m[1]);
        f.decls.push(m[1]);
      }
    }
    if (f.decls.length > 0) declFiles.push(i);
  }
  // Estimate each candidate term's frequency on a fixed sample of files (every 7th) and keep the frequent ones,
  // most frequent first.
  const sample = files.filter((_, i) => i % 7 === 0).map((f) => f.text);
  const scale = files.length / Math.max(1, sample.length);
  const counted: { term: string; n: number }[] = [];
  for (const term of CANDIDATE_TERMS) {
    let n = 0;
    for (const text of sample) {
      for (let at = text.indexOf(term); at !== -1; at = text.indexOf(term, at + term.length)) n++;
    }
    if (n >= 10) counted.push({ term, n: Math.round(n * scale) });
  }
  counted.sort((a, b) => b.n - a.n || byCodeUnit(a.term, b.term));
  const terms = counted.map((c) => c.term);
  const termCounts = new Map(counted.map((c) => [c.term, c.n]));
  if (terms.length === 0) {
    terms.push("e");
    termCounts.set("e", lineCount);
  }
  const ids = [...identifiers].sort(byCodeUnit);
  if (ids.length === 0) ids.push("handleRequest", "parseEntries", "buildContext", "renderLine");
  return {
    root,
    files,
    bytes,
    lineCount,
    terms,
    termCounts,
    identifiers: ids,
    codeFiles,
    docFiles,
    declFiles,
    indexOf,
  };
}

function builtinFiles(): CorpusFile[] {
  const src = [
    "export function buildContext(entries, leafId) {",
    "  const path = [];",
    "  let current = leafId ? byId.get(leafId) : entries[entries.length - 1];",
    "  while (current) {",
    "    path.unshift(current);",
    "    current = current.parentId ? byId.get(current.parentId) : undefined;",
    "  }",
    "  return path.filter((entry) => entry.type === 'message').map((entry) => entry.message);",
    "}",
    "export async function runTool(toolCall, signal) {",
    "  if (signal?.aborted) throw new Error('Operation aborted');",
    "  const result = await tools[toolCall.name].execute(toolCall.id, toolCall.arguments, signal);",
    "  return { role: 'toolResult', toolCallId: toolCall.id, content: result.content, isError: false };",
    "}",
  ].join("\n");
  const doc = [
    "# Sessions",
    "",
    "Sessions are stored as JSONL files. Each line is a JSON object with a type field.",
    "Entries form a tree through id and parentId; the leaf is the current position.",
    "Compaction replaces older entries with a summary; context edits replace one entry's content.",
  ].join("\n");
  return [makeFile("builtin/dist/context.js", src), makeFile("builtin/docs/sessions.md", doc)];
}

// ---------------------------------------------------------------------------------------------------------------
// grep-style output

export type { Rng };

export interface GrepOptions {
  /**
   * Plain substrings to search for; a line matches if it contains any of them (printed as the alternation
   * `a|b|c`). Default: one corpus term that is frequent enough for `targetBytes`.
   */
  terms?: string[];
  /** Context lines before/after each match (`rg -C`). Default: 0, 1 or 2. */
  context?: number;
  /** Start scanning at this file index (default: random). */
  startFile?: number;
  /** Scan at most this many files (like running rg on a subtree). Default: all. Ignored with `repeat`. */
  maxFiles?: number;
  /**
   * Keep scanning past the end of the corpus with paths under `mirror-<n>/` (as if the tree held several copies),
   * so that outputs larger than the corpus can be produced. Default: false (stop after one pass).
   */
  repeat?: boolean;
}

export interface GrepResult {
  text: string;
  /** The pattern as it would be passed to rg (`a|b` for several terms). */
  pattern: string;
  context: number;
  /** Paths that had matches (first 50). */
  files: string[];
  matches: number;
  /** Number of printed lines (matches, context lines and `--` separators). */
  lines: number;
  /** UTF-8 bytes of `text`. */
  bytes: number;
}

/** A ripgrep match line: `path:line:text`. */
export function formatMatchLine(path: string, lineNo: number, text: string): string {
  return `${path}:${lineNo}:${text}`;
}

/** A ripgrep context line: `path-line-text`. */
export function formatContextLine(path: string, lineNo: number, text: string): string {
  return `${path}-${lineNo}-${text}`;
}

/** UTF-8 byte length, with a fast path for ASCII. */
export function utf8Length(s: string): number {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0x7f) return Buffer.byteLength(s);
  return s.length;
}

/**
 * Picks a corpus term whose estimated `rg` output over `fraction` of the corpus is comfortably larger than
 * `targetBytes` (if any; otherwise one of the three most frequent terms).
 */
export function pickTerm(rng: Rng, targetBytes: number, context: number, fraction = 1): string {
  const corpus = getCorpus();
  const perMatch = 90 * (1 + 2 * context) * fraction;
  const fitting = corpus.terms.filter((t) => (corpus.termCounts.get(t) ?? 0) * perMatch >= targetBytes * 1.5);
  const pool = fitting.length > 0 ? fitting : corpus.terms.slice(0, 3);
  return pool[Math.floor(rng() * pool.length)]!;
}

/**
 * Produces `rg -n [-C n] pattern` output over the corpus as ripgrep prints it when piped: match lines
 * `path:line:text`, context lines `path-line-text`, and `--` between non-adjacent groups (only with context).
 * Deviation from rg: lines longer than 300 characters (minified code) are never matched and end a context range.
 * Output stops at a line boundary once `targetBytes` would be exceeded, so `bytes <= targetBytes` (unless the very
 * first line is longer). Without `repeat` the output may be shorter when the pattern is rare. No trailing newline.
 */
export function grepOutput(rng: Rng, targetBytes: number, opts: GrepOptions = {}): GrepResult {
  const corpus = getCorpus();
  const context = opts.context ?? Math.floor(rng() * 3);
  const terms = opts.terms ?? [pickTerm(rng, targetBytes, context)];
  const matchesLine =
    terms.length === 1
      ? (l: string) => l.length <= MAX_MATCH_LINE && l.includes(terms[0]!)
      : (l: string) => l.length <= MAX_MATCH_LINE && terms.some((t) => l.includes(t));
  const nFiles = corpus.files.length;
  let fileIndex = opts.startFile ?? Math.floor(rng() * nFiles);
  const out: string[] = [];
  const files: string[] = [];
  let bytes = 0;
  let matches = 0;
  let visited = 0;
  let pass = 0;
  let full = false;
  let printedAny = false;

  const push = (line: string): boolean => {
    const add = utf8Length(line) + (out.length > 0 ? 1 : 0);
    if (bytes + add > targetBytes && out.length > 0) {
      full = true;
      return false;
    }
    out.push(line);
    bytes += add;
    return true;
  };

  const limit = opts.repeat ? nFiles : Math.min(nFiles, opts.maxFiles ?? nFiles);
  while (!full) {
    if (visited === limit) {
      if (!opts.repeat || matches === 0) break;
      visited = 0;
      pass++;
    }
    const file = corpus.files[fileIndex]!;
    fileIndex = (fileIndex + 1) % nFiles;
    visited++;
    // Cheap whole-file test first: most files do not contain a given term.
    if (terms.length === 1 ? !file.text.includes(terms[0]!) : !terms.some((t) => file.text.includes(t))) continue;
    const lines = file.lines;
    const path = pass === 0 ? file.path : `mirror-${pass}/${file.path}`;
    let printedTo = -1; // index of the last line printed from this file
    let fileHadMatch = false;
    for (let i = 0; i < lines.length && !full; i++) {
      const line = lines[i]!;
      if (!matchesLine(line)) continue;
      if (!fileHadMatch) {
        fileHadMatch = true;
        if (files.length < 50) files.push(path);
      }
      let from = Math.max(0, i - context, printedTo + 1);
      for (let j = from; j < i; j++) if (lines[j]!.length > MAX_MATCH_LINE) from = j + 1;
      // Separator between groups that are not adjacent (new file, or a gap inside this file).
      if (context > 0 && printedAny && (printedTo < 0 || from > printedTo + 1) && !push("--")) break;
      for (let j = from; j < i && !full; j++) push(formatContextLine(path, j + 1, lines[j]!));
      if (full || !push(formatMatchLine(path, i + 1, line))) break;
      printedAny = true;
      matches++;
      printedTo = i;
      // Trailing context; a match inside it is printed as a match by the next iteration.
      const to = Math.min(lines.length - 1, i + context);
      for (let j = i + 1; j <= to && !full; j++) {
        const l = lines[j]!;
        if (l.length > MAX_MATCH_LINE || matchesLine(l)) break;
        if (!push(formatContextLine(path, j + 1, l))) break;
        printedTo = j;
      }
      i = printedTo;
    }
  }
  return { text: out.join("\n"), pattern: terms.join("|"), context, files, matches, lines: out.length, bytes };
}
