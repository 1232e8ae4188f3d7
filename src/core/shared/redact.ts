// Cuts credentials out of text before the extension writes it anywhere (records, telemetry, notices,
// the replay report). A server can echo any part of what it was sent: the whole key, its first 20
// characters, a piece from the middle after a gateway's own truncation, a custom header. So a secret is
// not matched as a whole but by its fragments:
//
// - every run of at least MIN_FRAGMENT (8) characters that occurs somewhere in a secret is cut, wherever
//   it stands: a prefix, a suffix, a piece from the middle, several secrets glued together;
// - a secret shorter than that (but at least MIN_SECRET, 4, characters) is cut only as a whole value
//   standing on its own (not inside a longer word), since a 5-letter header value is also an ordinary word;
// - shorter values (e.g. a header `X-Debug: 1`) are deliberately skipped: they carry no secret a reader
//   could use, and cutting them would cut every "1";
// - each secret also counts in its JSON-escaped and URL-encoded spellings, the two forms an error body
//   usually echoes it in;
// - last, credential shapes are cut even without the secret at hand: credentials.ts finds them (a value
//   assigned to a name such as `password` or `MASTER_KEY`, a URL's userinfo, `Bearer …`, a PEM body,
//   `AKIA…`, `ghp_…`, a long random key), the same detection that keeps them out of a stub's key facts.
//
// Cost: the secrets' 8-character windows go into a set once (O(total secret length)); a text is then
// scanned once, one set lookup per position inside a run of characters that occur in some secret, so
// O(text length × 8) whatever the number of secrets.

import { credentialSpans } from "./credentials.ts";
import { oneLine } from "./text.ts";

/** Shortest piece of a secret that is cut wherever it appears. */
export const MIN_FRAGMENT = 8;
/** Values shorter than MIN_FRAGMENT but at least this long are cut as whole tokens; shorter ones are skipped. */
const MIN_SECRET = 4;
export const REDACTED = "[redacted]";

/** A compiled list of secrets (build it once with {@link secretSet}, use it for many texts). */
export interface SecretSet {
  /** Every MIN_FRAGMENT-character window of every long secret (and its other spellings). */
  readonly windows: ReadonlySet<string>;
  /** The UTF-16 code units that occur in some long secret: a text outside them cannot match. */
  readonly units: ReadonlySet<number>;
  /** Secrets of MIN_SECRET..MIN_FRAGMENT-1 characters, cut as whole tokens. */
  readonly short: readonly string[];
}

/** A compiled set, a list of values, or one value. */
export type Secrets = SecretSet | Iterable<string | null | undefined> | string;

const EMPTY: SecretSet = { windows: new Set(), units: new Set(), short: [] };

function isSecretSet(value: Secrets): value is SecretSet {
  return typeof value === "object" && value !== null && "windows" in value && "units" in value;
}

/** The compiled form of any {@link Secrets} (a lone string is one secret, not a list of characters). */
function compiled(secrets: Secrets | undefined): SecretSet {
  if (secrets === undefined) return EMPTY;
  if (typeof secrets === "string") return secretSet([secrets]);
  return isSecretSet(secrets) ? secrets : secretSet(secrets);
}

/** The spellings a secret is echoed in: as is, trimmed, JSON-escaped, URL-encoded. */
function spellings(value: string): string[] {
  const out = new Set<string>([value, value.trim()]);
  for (const v of [...out]) {
    out.add(JSON.stringify(v).slice(1, -1));
    try {
      out.add(encodeURIComponent(v));
    } catch {
      // swallow-ok: A lone surrogate cannot be URL-encoded; the other spellings still count.
    }
  }
  return [...out];
}

/** Compiles secrets for {@link redact}. Empty, `null` and `undefined` values are ignored. */
export function secretSet(values: Iterable<string | null | undefined>): SecretSet {
  if (typeof values === "string") return secretSet([values]);
  const windows = new Set<string>();
  const units = new Set<number>();
  const short = new Set<string>();
  for (const value of values) {
    if (typeof value !== "string" || value === "") continue;
    for (const s of spellings(value)) {
      if (s.length >= MIN_FRAGMENT) {
        for (let i = 0; i + MIN_FRAGMENT <= s.length; i++) windows.add(s.slice(i, i + MIN_FRAGMENT));
        for (let i = 0; i < s.length; i++) units.add(s.charCodeAt(i));
      } else if (s.length >= MIN_SECRET) {
        short.add(s);
      }
    }
  }
  if (windows.size === 0 && short.size === 0) return EMPTY;
  // Longest first, so that of two short secrets where one contains the other the longer is cut whole.
  return { windows, units, short: [...short].sort((a, b) => b.length - a.length) };
}

const WORD = /[A-Za-z0-9]/;
const isHigh = (code: number) => code >= 0xd800 && code <= 0xdbff;
const isLow = (code: number) => code >= 0xdc00 && code <= 0xdfff;

/** [start, end) ranges of `text` that belong to a secret or a credential shape, sorted and merged. */
function secretRanges(text: string, set: SecretSet): Array<[number, number]> {
  const ranges: Array<[number, number]> = [];
  if (set.windows.size > 0 && text.length >= MIN_FRAGMENT) {
    let run = 0;
    for (let i = 0; i < text.length; i++) {
      run = set.units.has(text.charCodeAt(i)) ? run + 1 : 0;
      if (run < MIN_FRAGMENT) continue;
      const start = i + 1 - MIN_FRAGMENT;
      if (!set.windows.has(text.slice(start, i + 1))) continue;
      const last = ranges[ranges.length - 1];
      if (last && last[1] >= start) last[1] = i + 1;
      else ranges.push([start, i + 1]);
    }
  }
  for (const s of set.short) {
    for (let at = text.indexOf(s); at !== -1; at = text.indexOf(s, at + 1)) {
      const before = at > 0 ? (text[at - 1] as string) : "";
      const after = at + s.length < text.length ? (text[at + s.length] as string) : "";
      if (WORD.test(before) || WORD.test(after)) continue;
      ranges.push([at, at + s.length]);
    }
  }
  for (const span of credentialSpans(text)) ranges.push(span);
  if (ranges.length === 0) return ranges;
  ranges.sort((a, b) => a[0] - b[0] || b[1] - a[1]);
  const merged: Array<[number, number]> = [];
  for (const [rawStart, rawEnd] of ranges) {
    // Never split a surrogate pair: the cut widens to the whole character.
    const start = rawStart > 0 && isLow(text.charCodeAt(rawStart)) ? rawStart - 1 : rawStart;
    const end = rawEnd < text.length && isHigh(text.charCodeAt(rawEnd - 1)) ? rawEnd + 1 : rawEnd;
    const last = merged[merged.length - 1];
    if (last && last[1] >= start) last[1] = Math.max(last[1], end);
    else merged.push([start, end]);
  }
  return merged;
}

/**
 * `text` with every secret, every fragment of MIN_FRAGMENT or more characters of one, and every
 * credential shape replaced by `[redacted]` (adjacent cuts become one).
 */
export function redact(text: string, secrets?: Secrets): string {
  const set = compiled(secrets);
  const ranges = secretRanges(text, set);
  if (ranges.length === 0) return text;
  const parts: string[] = [];
  let from = 0;
  for (const [start, end] of ranges) {
    parts.push(text.slice(from, start), REDACTED);
    from = end;
  }
  parts.push(text.slice(from));
  return parts.join("");
}

/**
 * `oneLine(text, max)` with credential shapes cut first: the labels and quoted prompts that stubs and
 * records show. Cut before the text is shortened, so a secret the cut would halve is still recognised
 * (only the start is ever shown, so only the start is scanned).
 */
export function redactedLine(text: string, max: number): string {
  return oneLine(redact(text.length > max * 16 ? text.slice(0, max * 16) : text), max);
}

const isPlain = (v: object) => {
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
};

/**
 * A copy of a JSON-like value with {@link redact} applied to every string in it, object keys included
 * (records, telemetry events, the replay report). Numbers, booleans, null and
 * objects that are not plain (a Map, a Date) are kept as they are.
 */
export function redactDeep<T>(value: T, secrets?: Secrets): T {
  const set = compiled(secrets);
  const walk = (v: unknown): unknown => {
    if (typeof v === "string") return redact(v, set);
    if (Array.isArray(v)) return v.map(walk);
    if (v !== null && typeof v === "object" && isPlain(v)) {
      const out: Record<string, unknown> = {};
      for (const [k, item] of Object.entries(v)) out[redact(k, set)] = walk(item);
      return out;
    }
    return v;
  };
  return walk(value) as T;
}
