// Credential shapes in text, found without knowing the secret: the one detection behind redact.ts (records,
// telemetry, notices, the replay's output) and key-facts.ts (the facts a stub lists). Context decides first,
// since it is what tells a key from an id: the name a value is assigned to (.env, JSON, YAML, TOML, XML,
// flags), an Authorization or Cookie header, a URL's userinfo, a PEM block. Then well-known token formats
// (AKIA…, ghp_…, a JWT), then entropy: a long mix of both cases and digits with no words in it. Bare hex is
// never a credential by itself, since hashes, SHAs and ids look the same; it is one when a name says so.
//
// Pure (a memo of names judged is its only state). Every rule is one regex scan, and what one match looks
// at is bounded (a value's length, a name's lead on its line, a command line), so the whole stays linear.

import { isCredentialName, STRONG_PART } from "./credential-names.ts";

export { isCredentialName } from "./credential-names.ts";

/** [start, end) of a credential's value in a text. */
export type Span = [start: number, end: number];

/**
 * Words that put whatever follows them on the line under suspicion. Only key-facts.ts uses it, to leave out a
 * fact that stands shortly after one (`token ghp_…`, `using password hunter2`): a fact is cheap to drop.
 */
export const CREDENTIAL_WORD =
  /(?:api[_-]?key|access[_-]?key|secret|token|passw|pwd|bearer|authori[sz]ation|credential|cookie|signature|private[_-]?key|x-api-key)/i;

// ---------------------------------------------------------------------------------------------
// Tokens

/** Well-known credential formats, each with the prefix that names it. */
const KNOWN_FORMATS = [
  "(?:A3T[A-Z0-9]|AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|ASCA|ABIA|ACCA)[A-Z0-9]{16}",
  "AIza[0-9A-Za-z_-]{35}",
  "ya29\\.[0-9A-Za-z_-]{20,}",
  "GOCSPX-[0-9A-Za-z_-]{20,}",
  "gh[pousr]_[A-Za-z0-9]{30,}",
  "github_pat_[A-Za-z0-9_]{30,}",
  "glpat-[A-Za-z0-9_-]{20,}",
  "gl(?:dt|rt|ptt|cbt|imt|soat|ffct|agent|oas)-[A-Za-z0-9_-]{20,}",
  "xox[abposre]-[A-Za-z0-9-]{10,}",
  "xapp-\\d-[A-Za-z0-9-]{10,}",
  "(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{10,}",
  "whsec_[A-Za-z0-9+/=]{20,}",
  "sk-[A-Za-z0-9_-]{8,}",
  "npm_[A-Za-z0-9]{30,}",
  "hf_[A-Za-z0-9]{30,}",
  "SG\\.[A-Za-z0-9_-]{16,}\\.[A-Za-z0-9_-]{16,}",
  "shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}",
  "sq0(?:atp|csp)-[0-9A-Za-z_-]{22,}",
  "do[opr]_v1_[a-f0-9]{64}",
  "pypi-AgE[A-Za-z0-9_-]{50,}",
  "AGE-SECRET-KEY-1[0-9A-Z]{50,}",
  "(?:gsk|r8|lin_api|sntrys|glc|pscale_tkn|pscale_pw)_[A-Za-z0-9_]{30,}",
  "(?:xai|pplx|nvapi)-[A-Za-z0-9_-]{30,}",
  "key-[0-9a-f]{32}",
  // A JWT: header and payload are base64 JSON objects (`{"` is `eyJ`).
  "eyJ[A-Za-z0-9_-]{8,}\\.[A-Za-z0-9_-]{8,}\\.[A-Za-z0-9_-]*",
  // A Telegram bot token: the bot's number, then its secret.
  "\\d{6,12}:AA[A-Za-z0-9_-]{30,}",
];
const KNOWN_SOURCE = `(?<![A-Za-z0-9_-])(?:${KNOWN_FORMATS.join("|")})(?![A-Za-z0-9_-])`;
const KNOWN_RE = new RegExp(KNOWN_SOURCE, "g");
const KNOWN_ONE = new RegExp(KNOWN_SOURCE);

/** Ids of tool calls, messages and requests (`toolu_01…`, `call_…`): random, and meant to be quoted. */
const RANDOM_ID = /^(?:toolu|tooluse|tool|call|fc|msg|chatcmpl|req|resp|run|thread|asst|file|batch|evt|ch|cus)[_-]/;

const WORDS = /[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+/g;

/**
 * A long random mix: both cases, a digit, at least `floor` characters, split into short words (`q8`, `Zr3`)
 * rather than long ones. Code names (`resolveAwsSdkSigV4Config`, `BetaWebFetchTool20250910`) are mostly words of
 * four letters or more; hex has one case. On random base62 this holds for 92% of 24-character strings and 96%
 * or more from 28 on.
 */
function mixed(plain: string, floor: number): boolean {
  if (plain.length < floor || !/\d/.test(plain)) return false;
  const upper = plain.replace(/[^A-Z]/g, "").length;
  const lower = plain.replace(/[^a-z]/g, "").length;
  if (upper < 3 || lower < 3) return false;
  const words = plain.match(WORDS) ?? [];
  let inLong = 0;
  for (const w of words) if (w.length >= 4 && !/^\d/.test(w)) inLong += w.length;
  return plain.length / words.length < 3.5 && inLong / plain.length < 0.5;
}

/** A segment of a path or URL that is a word (`src`, `article`, `coding-agent`), so the token is a path. */
const WORD_SEGMENT = /^(?:[a-z]{3,}|[a-z]+(?:[-_.][a-z0-9]+)+|v\d+)$/;

/** Entropy floor: a shorter random mix is as likely an id (a nanoid, a short link) as a key. */
const RANDOM_FLOOR = 24;

/**
 * A token of base64 characters (`+`, `/`, `=`, `-`, `_` included) that is random: a key, not an id or a
 * path. An AWS secret key is exactly 40 characters; a path's segments are words, and only a segment of its
 * own that is random counts then.
 */
function randomToken(token: string): boolean {
  // A long blob (an image's base64) is judged by its start, so the cost stays per character of the text.
  const body = (token.length > 512 ? token.slice(0, 512) : token).replace(/=+$/, "");
  if (RANDOM_ID.test(body)) return false;
  const segments = body.split("/");
  if (segments.length > 1 && segments.some((s) => WORD_SEGMENT.test(s))) {
    return segments.some((s) => mixed(s.replace(/[+_-]/g, ""), 32));
  }
  const plain = body.replace(/[+/_-]/g, "");
  if (body.length === 40 && /^[A-Za-z0-9+/]+$/.test(body) && /[A-Z]/.test(body) && /[a-z]/.test(body)) {
    return /\d/.test(body);
  }
  return mixed(plain, RANDOM_FLOOR);
}

const BASE64_RUN = /(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{24,}={0,2}(?![A-Za-z0-9+/=_-])/g;

// ---------------------------------------------------------------------------------------------
// Values after a name

/** Values that say nothing: `password: null`, `auth: false`. */
const EMPTY_VALUE = /^(?:true|false|null|nil|none|undefined|yes|no|on|off|\*+|x+)$/i;
/** A path as a value (`GOOGLE_APPLICATION_CREDENTIALS=/etc/gcp/sa.json`, `PWD=/home/ann`): not the secret. */
export const PATH_VALUE = /^(?:~|\.{1,2})?\/[\w.@+-]+(?:\/[\w.@+-]+)*\/?$/;
/** What a plain `key` holds when it names a thing (`"key": "agent:main:tui-…"`, a UUID), not a secret. */
const IDENTIFIER_VALUE = /^(?:[A-Za-z][\w-]*(?::[\w.-]+){2,}|[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12})$/i;
/** Auth schemes a header value starts with: the credential is the token after it. */
const AUTH_SCHEME = /^(?:Bearer|Basic|Token|Bot|Digest|Negotiate|NTLM|OAuth|AWS4-HMAC-SHA256)[ \t]+/i;
/** What a line holds before a name whose value runs to the line's end (`export `, `- `, `ENV `). */
const LINE_LEAD = /^[ \t]*(?:(?:export|set|setenv|declare|local|readonly|ENV|ARG)[ \t]+|-[ \t]+)?$/;
/** Code, not a value: a member expression or a call (`const key = mt.member_openid`, `sig = np.log(x)`). */
const CODE_VALUE = /^[A-Za-z_$][\w$]*(?:(?:\.[A-Za-z_$][\w$]*)+$|[\w$.]*\()/;
/** The same on a line of its own, where a `.env` value could look like one: no digits, or a whole call. */
const CODE_LINE = /^(?:[A-Za-z_$]+(?:\.[A-Za-z_$]+)+|[A-Za-z_$][\w$.]*\(.*\))$/;
/** Ends an unquoted value inside a line. */
const INLINE_END = /[\s"'`,;&|)}\]<>\\]/;

/**
 * Most characters looked at around one match: a value is cut at this length, and a name further than
 * LEAD_CHARS from its line's start is not at the start. Bounds keep a long line with many matches (a
 * minified JSON) linear.
 */
const MAX_VALUE = 4096;
const LEAD_CHARS = 64;

/** What stands before `at` on its line, or undefined when that is more than LEAD_CHARS. */
function leadOf(text: string, at: number): string | undefined {
  const from = Math.max(0, at - LEAD_CHARS);
  const before = text.slice(from, at);
  const nl = before.lastIndexOf("\n");
  return nl === -1 && from > 0 ? undefined : before.slice(nl + 1);
}

/** The end of the line `at` is on, looking at most MAX_VALUE characters ahead. */
function lineEnd(text: string, at: number): number {
  const nl = text.indexOf("\n", at);
  return Math.min(nl === -1 ? text.length : nl, at + MAX_VALUE);
}

/** The end of an unquoted value inside a line. */
function inlineEnd(text: string, at: number): number {
  const limit = Math.min(text.length, at + MAX_VALUE);
  let end = at;
  while (end < limit && !INLINE_END.test(text[end] as string)) end++;
  return end;
}

/** The end of a quoted value that opens at `at` with `quote` (escaped or not), on the same line. */
function closingQuote(text: string, at: number, quote: string): number {
  const end = lineEnd(text, at);
  for (let i = at; i < end; i++) {
    if (text.startsWith(quote, i) && (quote.length > 1 || text[i - 1] !== "\\")) return i;
  }
  return end;
}

/** The value a name is assigned at `at`, as a span, or undefined when there is none worth cutting. */
function valueSpan(text: string, at: number, name: string, ownLine: boolean, arrow: boolean): Span | undefined {
  let start = at;
  let end: number;
  const escaped = text.startsWith('\\"', start) || text.startsWith("\\'", start);
  const quote = escaped ? text.slice(start, start + 2) : text[start];
  if (quote === '"' || quote === "'" || quote === "`" || escaped) {
    start += (quote as string).length;
    end = closingQuote(text, start, quote as string);
  } else {
    if (arrow) return undefined;
    const c = text[start];
    if (c === undefined || c === "{" || c === "[" || c === "\n" || c === "\r") return undefined;
    const scheme = AUTH_SCHEME.exec(text.slice(start, start + 40));
    const cookie = /cookie$/i.test(name);
    if (scheme) {
      start += scheme[0].length;
      end = inlineEnd(text, start);
    } else if (ownLine || cookie) {
      end = lineEnd(text, start);
      if (cookie) {
        const q = text.slice(start, end).search(/["'`]/);
        if (q !== -1) end = start + q;
      }
      const line = text.slice(start, end);
      // A YAML block scalar (`password: |`): the value is the indented lines under it.
      if (/^[|>][-+]?[ \t]*$/.test(line)) return blockScalar(text, at, end);
      const trimmed = line.replace(/[ \t]+#.*$/, "").replace(/[\s,;]+$/, "");
      if (CODE_LINE.test(trimmed)) return undefined;
      end = start + trimmed.length;
    } else {
      end = inlineEnd(text, start);
      if (CODE_VALUE.test(text.slice(start, end))) return undefined;
    }
  }
  const value = text.slice(start, end);
  if (value.trim() === "" || EMPTY_VALUE.test(value) || PATH_VALUE.test(value)) return undefined;
  if (
    IDENTIFIER_VALUE.test(value) &&
    /key$/i.test(name) &&
    !STRONG_PART.test(name.toLowerCase().replace(/[^a-z0-9]/g, ""))
  ) {
    return undefined;
  }
  return [start, end];
}

/** The lines of a YAML block scalar that starts after `from`, more indented than the line of `at`. */
function blockScalar(text: string, at: number, from: number): Span | undefined {
  const indent = /^[ \t]*/.exec(leadOf(text, at) ?? "")?.[0].length ?? 0;
  let end = from;
  for (let next = from + 1; next < text.length; ) {
    const stop = lineEnd(text, next);
    const line = text.slice(next, stop);
    if (next - from > MAX_VALUE || (line.trim() !== "" && (/^[ \t]*/.exec(line)?.[0].length ?? 0) <= indent)) break;
    end = stop;
    next = stop + 1;
  }
  return end > from ? [from + 1, end] : undefined;
}

// A name, quoted or not (JSON-escaped quotes too), then `=`, `:`, `:=` or `=>`. The name can only start
// after a character that cannot be part of one.
const ASSIGN_RE = /(?<![\w.$@-])(\\?["'`]?)([A-Za-z_$@][\w.$@-]{0,80})\1[ \t]*(=>|:=|=(?![=~])|:(?![:/]))[ \t]*/g;
const XML_RE = /<([A-Za-z_][\w.-]{0,60})>([^<\n]{1,500})<\/\1>/dg;
// A URL's userinfo, for every scheme: `postgres://app:pw@`, `redis://:pw@`, `https://key@`.
const USERINFO_RE = /\b[A-Za-z][A-Za-z0-9+.-]{1,30}:\/\/([^\s/?#"'<>`]{0,256})@(?=[\w[])/g;
const PEM_RE = /-----BEGIN ([A-Z0-9 ]{1,60})-----/g;
// Capitalised as in a header: "basic usage" and "the token limit" are prose.
const SCHEME_RE = /\b(?:[Bb]earer|Basic|Token)[ \t]+([A-Za-z0-9._~+/=-]{8,})/dg;
const LONG_FLAG_RE = /(?<=^|\s)--([A-Za-z][\w-]{1,40})(?:=|[ \t]+)(?!-)/gm;
const CURL_USER_RE = /(?<=^|\s)(?:-u|--user)(?:[ \t]+|=)(['"]?)[^\s:'"]*:([^\s'"]+)/dgm;
const SQL_PASSWORD_RE = /\b(?:PASSWORD|IDENTIFIED[ \t]+BY)[ \t]+(['"])([^'"\n]+)\1/dgi;
const NETRC_RE = /^[ \t]*(?:password|passwd)[ \t]+(\S+)[ \t]*$|\bmachine\b[^\n]{0,200}?\bpassword[ \t]+(\S+)/dgm;
// Flags that take a password only in some commands: mysql's `-pSECRET`, redis-cli's `-a`, sshpass's `-p`.
const MYSQL_P_RE = /\b(?:mysql\w*|mariadb\w*)\b[^\n]{0,200}?(?<=\s)-p(['"]?)([^\s'"]+)/dg;
const REDIS_A_RE = /\bredis-cli\b[^\n]{0,200}?(?<=\s)-a[ \t]+(['"]?)([^\s'"]+)/dg;
const SSHPASS_RE = /\bsshpass\b[^\n]{0,200}?(?<=\s)-p[ \t]*(['"]?)([^\s'"]+)/dg;
// Credentials a URL carries in its path.
const URL_PATH_RE =
  /hooks\.slack\.com\/services\/([A-Za-z0-9/_-]+)|discord(?:app)?\.com\/api\/webhooks\/\d+\/([A-Za-z0-9_-]+)|\/bot\d+:([A-Za-z0-9_-]+)/dg;

/** The span of group `g` of a match made with the `d` flag. */
function groupSpan(m: RegExpMatchArray, g: number): Span | undefined {
  return m.indices?.[g];
}

/**
 * The spans of `text` that hold a credential, sorted and merged. Names decide first (their value goes,
 * whatever it looks like, unless it is empty, a boolean or a path); then formats and entropy.
 */
export function credentialSpans(text: string): Span[] {
  const spans: Span[] = [];
  const push = (span: Span | undefined) => {
    if (span && span[1] > span[0]) spans.push(span);
  };
  // Rules anchored on a word run only when the text has it: most texts have none of them.
  const has = (...words: string[]) => words.some((w) => text.includes(w));

  if (has("-----BEGIN ")) {
    for (const m of text.matchAll(PEM_RE)) {
      const from = (m.index as number) + m[0].length;
      const end = text.indexOf("-----END ", from);
      push([from, end === -1 ? text.length : end]);
      // A body cut off before its END line runs to the text's end, and so would every later one.
      if (end === -1) break;
    }
  }
  for (const m of text.matchAll(ASSIGN_RE)) {
    const name = m[2] as string;
    if (!isCredentialName(name)) continue;
    const at = m.index as number;
    const lead = leadOf(text, at);
    push(valueSpan(text, at + m[0].length, name, lead !== undefined && LINE_LEAD.test(lead), m[3] === "=>"));
  }
  if (has("</")) for (const m of text.matchAll(XML_RE)) if (isCredentialName(m[1] as string)) push(groupSpan(m, 2));
  if (has("://")) {
    for (const m of text.matchAll(USERINFO_RE)) {
      const info = m[1] as string;
      const start = (m.index as number) + m[0].length - 1 - info.length;
      const colon = info.indexOf(":");
      if (colon !== -1) push([start + colon + 1, start + info.length]);
      else if (info.length >= 16 || KNOWN_ONE.test(info) || randomToken(info)) push([start, start + info.length]);
    }
  }
  if (has("earer", "Basic", "Token")) {
    for (const m of text.matchAll(SCHEME_RE)) {
      const token = m[1] as string;
      if (/[\d._~+/=-]/.test(token) || token.length >= 24) push(groupSpan(m, 1));
    }
  }
  if (has("--")) {
    for (const m of text.matchAll(LONG_FLAG_RE)) {
      if (!isCredentialName(m[1] as string)) continue;
      push(valueSpan(text, (m.index as number) + m[0].length, m[1] as string, false, false));
    }
  }
  if (has("-u", "--user")) for (const m of text.matchAll(CURL_USER_RE)) push(groupSpan(m, 2));
  if (/PASSWORD|IDENTIFIED/i.test(text)) for (const m of text.matchAll(SQL_PASSWORD_RE)) push(groupSpan(m, 2));
  if (has("password", "passwd"))
    for (const m of text.matchAll(NETRC_RE)) push(groupSpan(m, m[1] !== undefined ? 1 : 2));
  if (has("mysql", "mariadb")) for (const m of text.matchAll(MYSQL_P_RE)) push(groupSpan(m, 2));
  if (has("redis-cli")) for (const m of text.matchAll(REDIS_A_RE)) push(groupSpan(m, 2));
  if (has("sshpass")) for (const m of text.matchAll(SSHPASS_RE)) push(groupSpan(m, 2));
  if (has("hooks.slack.com", "/api/webhooks/", "/bot")) {
    for (const m of text.matchAll(URL_PATH_RE)) push(groupSpan(m, m[1] ? 1 : m[2] ? 2 : 3));
  }
  for (const m of text.matchAll(KNOWN_RE)) push([m.index as number, (m.index as number) + m[0].length]);
  for (const m of text.matchAll(BASE64_RUN)) {
    if (randomToken(m[0])) push([m.index as number, (m.index as number) + m[0].length]);
  }
  return mergeSpans(spans);
}

/** `spans` sorted by start, overlapping and touching ones joined. */
export function mergeSpans(spans: Span[]): Span[] {
  if (spans.length < 2) return spans;
  spans.sort((a, b) => a[0] - b[0] || b[1] - a[1]);
  const out: Span[] = [];
  for (const [start, end] of spans) {
    const last = out[out.length - 1];
    if (last && last[1] >= start) last[1] = Math.max(last[1], end);
    else out.push([start, end]);
  }
  return out;
}

/** `text` with `spans` (default: its credential spans) replaced by spaces: same length and offsets. */
export function blankCredentials(text: string, spans: Span[] = credentialSpans(text)): string {
  if (spans.length === 0) return text;
  const parts: string[] = [];
  let from = 0;
  for (const [start, end] of spans) {
    parts.push(text.slice(from, start), " ".repeat(end - start));
    from = end;
  }
  parts.push(text.slice(from));
  return parts.join("");
}
