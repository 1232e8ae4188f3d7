// The key facts of a text the guard takes out of view: the URLs, ids, hashes, paths and entity or config
// names it held, verbatim, so the stub that replaces it still carries what the agent is most likely to
// reuse (an id to delete a job by, the path of a file to open next) without a recall. Pure and linear:
// one regex scan per kind over at most SCAN_CHARS of the texts together.
//
// Never a secret: the credential shapes credentials.ts finds (the value of a `password`, `MASTER_KEY` or
// `"pass"`, a URL's userinfo, a PEM body, `AKIA…`, a long random key) are blanked out of the text before
// any fact is read from it, so no fact is a piece of one; a fact that holds one alone (redact.ts would cut
// it), a URL with a user and password, and anything shortly after a word such as `token` on its line are
// left out, and a URL's query goes when it names a credential.

import {
  blankCredentials,
  CREDENTIAL_WORD,
  credentialSpans,
  mergeSpans,
  PATH_VALUE,
  type Span,
} from "./credentials.ts";
import { REDACTED, redact, type Secrets } from "./redact.ts";
import { hasFileExtension, isCommonFileName } from "./tokens.ts";

/** Characters of the texts scanned for facts, together: facts past them are not listed. */
export const SCAN_CHARS = 200_000;
/** The longest single fact listed: a longer URL or path is left out rather than cut. */
const MAX_FACT = 120;

/** Kinds in the order they are listed: what the agent reuses verbatim first. */
const URL = 0;
const ID = 1;
const PATH = 2;
const DOTTED = 3;
const NAME = 4;

const URL_RE = /\bhttps?:\/\/[^\s"'<>`()[\]{}\\|^]+/g;
// Any scheme's URL (`postgres://…`): listed only over http(s), but left out whole when it holds a credential.
const ANY_URL_RE = /\b[A-Za-z][A-Za-z0-9+.-]{1,30}:\/\/[^\s"'<>`()[\]{}\\|^]+/g;
const UUID_RE = /\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b/g;
// Colon-joined keys of three parts or more (`agent:main:tui-58c5…`); `std::io` has an empty part.
const KEY_RE = /(?<![\w:.-])[A-Za-z][\w-]*(?::[\w.-]+){2,}(?![\w:])/g;
// Hex hashes and other ids: a word of letters and digits (two digits at least), dashes or underscores.
const ID_RE = /(?<![\w./\\-])[A-Za-z0-9][\w-]{6,}[A-Za-z0-9](?![\w/\\-])/g;
const PATH_RE = /(?<![\w@.+~/-])[\w@.+~/-]{4,}/g;
const WINDOWS_PATH_RE = /\b[A-Za-z]:\\[^\s"'<>|*?:]+/g;
const DOTTED_RE = /(?<![\w$./-])[A-Za-z_$][\w$]+(?:\.[A-Za-z_$][\w$]*)+(?![\w$/-])/g;
const NAME_RE = /(?<![\w$-])[A-Za-z_$][\w$]{9,}(?![\w$-])|\b\d{6,}\b/g;

/** Receivers of code everywhere (`this.state`, `console.log`): not a name of this session's world. */
const COMMON_RECEIVER =
  /^(?:this|self|super|console|Math|JSON|Object|Array|Promise|process|window|document|module|exports|require|import|React|String|Number|Date|Error|e|i|os|sys|np|pd)\./;

/** The text just before `at` on the same line names a credential (`"token": "…`, `Authorization: …`). */
function afterSecretWord(text: string, at: number): boolean {
  const from = Math.max(0, at - 40);
  const before = text.slice(from, at);
  const line = before.slice(before.lastIndexOf("\n") + 1);
  return CREDENTIAL_WORD.test(line);
}

/** A URL as listed: none with a user and password, its query dropped when it names a credential. */
function cleanUrl(raw: string): string | undefined {
  const url = raw.replace(/[.,;:!?'")\]]+$/, "");
  const authority = url.slice(url.indexOf("//") + 2).split("/")[0] ?? "";
  if (authority.includes("@")) return undefined;
  const q = url.search(/[?#]/);
  if (q !== -1 && (CREDENTIAL_WORD.test(url.slice(q)) || /[?&](?:key|sig|code|auth)=/i.test(url.slice(q)))) {
    return url.slice(0, q);
  }
  return url;
}

const MIME_RE = /^(?:application|text|image|audio|video|multipart|font)\/[\w.+-]+$/;

/**
 * A path, not words joined by slashes (`read/write`, `provider/model`): it has a file extension, starts
 * like a path, ends with a slash, or has a folder name with a dash, underscore, dot or digit.
 */
function isPath(token: string): boolean {
  if (!token.includes("/")) return hasFileExtension(token) && !isCommonFileName(token);
  if (token.startsWith("//") || MIME_RE.test(token)) return false;
  const parts = token.split("/").filter((p) => p !== "" && p !== "." && p !== "..");
  // Fractions, dates and ratios (1/2, 2024/05/01) are not paths.
  if (parts.length === 0 || !/[A-Za-z]/.test(token)) return false;
  if (hasFileExtension(token)) return true;
  if (parts.length < 2) return false;
  return /^[/~.@]/.test(token) || token.endsWith("/") || parts.some((p) => /[-_.\d]/.test(p));
}

/** Code names with a number (`hexTo256`, `256color`) and dates are not ids. */
const NOT_ID = /^(?:[a-z]+(?:[A-Z][a-z]*)*\d+|\d+[a-z]+|\d{4}-\d\d-\d\d(?:T\d*)?)$/;

function isId(token: string): boolean {
  const digits = token.replace(/\D/g, "").length;
  return digits >= 2 && /[A-Za-z]/.test(token) && !NOT_ID.test(token);
}

/** A code name worth listing: snake_case of three parts or more, camelCase of four, or a long number. */
function isName(token: string): boolean {
  if (/^\d+$/.test(token)) return true;
  if ((token.match(/_/g)?.length ?? 0) >= 2) return /[a-z]/i.test(token);
  return (token.match(/[a-z][A-Z]/g)?.length ?? 0) >= 3;
}

/** An entity id or config key (`light.living_room`, `channels.whatsapp.allowFrom`), not `fs.readFileSync`. */
function isDotted(token: string): boolean {
  if (token.length < 6 || hasFileExtension(token) || COMMON_RECEIVER.test(token)) return false;
  return token.includes("_") || token.split(".").length >= 3;
}

/** Where the first of `spans` (sorted) that overlaps [from, to) starts, or -1. */
function overlapStart(spans: readonly Span[], from: number, to: number): number {
  for (const [start, end] of spans) {
    if (start >= to) break;
    if (end > from) return start;
  }
  return -1;
}

interface Candidate {
  kind: number;
  count: number;
  first: number;
}

/** Every fact candidate of the texts, by token. */
function candidates(texts: Iterable<string>): Map<string, Candidate> {
  const out = new Map<string, Candidate>();
  let offset = 0;
  const add = (token: string, kind: number, text: string, at: number) => {
    if (token.length < 4 || token.length > MAX_FACT) return;
    // A path is never the secret, even right after `credentials=`.
    if (!(kind === PATH && PATH_VALUE.test(token)) && afterSecretWord(text, at)) return;
    const seen = out.get(token);
    if (seen) {
      seen.count++;
      seen.kind = Math.min(seen.kind, kind);
    } else out.set(token, { kind, count: 1, first: offset + at });
  };
  for (const full of texts) {
    const room = SCAN_CHARS - offset;
    if (room <= 0) break;
    const original = full.length > room ? full.slice(0, room) : full;
    const spans = credentialSpans(original);
    let text = blankCredentials(original, spans);
    const masked: Span[] = [];
    // URLs are read as they were: one that holds a credential is left out whole, or listed without its
    // query when that is where the credential is.
    for (const m of original.matchAll(ANY_URL_RE)) {
      const end = m.index + m[0].length;
      if (overlapStart(spans, m.index, end) !== -1) masked.push([m.index, end]);
    }
    for (const m of original.matchAll(URL_RE)) {
      const end = m.index + m[0].length;
      const hit = overlapStart(spans, m.index, end);
      const q = m[0].search(/[?#]/);
      if (hit !== -1 && (q === -1 || hit < m.index + q)) {
        masked.push([m.index, end]);
        continue;
      }
      const url = cleanUrl(hit === -1 ? m[0] : m[0].slice(0, q));
      if (url === undefined) masked.push([m.index, end]);
      else {
        if (url.length > 10) add(url, URL, text, m.index);
        if (url.length < m[0].length) masked.push([m.index + url.length, end]);
      }
    }
    // A URL with a user and password, and a query dropped for its credential, are blanked out too, so no
    // other kind lists a piece of them.
    text = blankCredentials(text, mergeSpans(masked));
    for (const m of text.matchAll(UUID_RE)) add(m[0], ID, text, m.index);
    for (const m of text.matchAll(KEY_RE))
      if (/[A-Za-z]/.test(m[0]) && !m[0].includes("//")) add(m[0], ID, text, m.index);
    for (const m of text.matchAll(ID_RE)) if (isId(m[0])) add(m[0], ID, text, m.index);
    for (const m of text.matchAll(WINDOWS_PATH_RE)) add(m[0].replace(/[.,;]+$/, ""), PATH, text, m.index);
    for (const m of text.matchAll(PATH_RE)) {
      const token = m[0].replace(/[.,:;-]+$/, "");
      if (isPath(token)) add(token, PATH, text, m.index);
    }
    for (const m of text.matchAll(DOTTED_RE)) {
      const token = m[0].replace(/\.+$/, "");
      if (isDotted(token)) add(token, DOTTED, text, m.index);
    }
    for (const m of text.matchAll(NAME_RE)) if (isName(m[0])) add(m[0], NAME, text, m.index);
    offset += text.length + 1;
  }
  return out;
}

/** Every token `keyFacts` could list from the texts: what a stub need not repeat when they stay in view. */
export function factTokens(texts: Iterable<string>): Set<string> {
  return new Set(candidates(texts).keys());
}

export interface KeyFactOptions {
  /** Most characters of the facts joined with ", ". */
  maxChars: number;
  /** Facts the stub shows anyway or the model still sees: not listed again. */
  skip?: (fact: string) => boolean;
  /** Known credentials: a fact holding any part of one is left out (see redact.ts). */
  secrets?: Secrets;
}

/**
 * The key facts of `texts`, verbatim, most telling first: URLs, then ids and hashes, then paths, then
 * dotted names (entity ids, config keys), then long code names and numbers; within a kind the most
 * mentioned first, then the earliest. A fact inside one already listed is not listed again.
 */
export function keyFacts(texts: Iterable<string>, options: KeyFactOptions): string[] {
  if (options.maxChars <= 0) return [];
  const ranked = [...candidates(texts)].sort(
    ([, a], [, b]) => a.kind - b.kind || b.count - a.count || a.first - b.first,
  );
  const out: string[] = [];
  let used = 0;
  for (const [fact] of ranked) {
    const cost = fact.length + (out.length > 0 ? 2 : 0);
    if (used + cost > options.maxChars) continue;
    if (out.some((f) => f.includes(fact))) continue;
    if (options.skip?.(fact)) continue;
    // Known secrets, and a fact that is a credential on its own (a PEM line cut from its block).
    const clean = redact(fact, options.secrets);
    if (clean !== fact || clean.includes(REDACTED)) continue;
    out.push(fact);
    used += cost;
    if (options.maxChars - used < 6) break;
  }
  return out;
}

/** ` It held: a, b, c.` for a stub, or "" when there is nothing to list. */
export function keyFactsNote(texts: Iterable<string>, options: KeyFactOptions): string {
  const facts = keyFacts(texts, options);
  return facts.length > 0 ? ` It held: ${facts.join(", ")}.` : "";
}
