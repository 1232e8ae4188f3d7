/**
 * Deterministic heavy-session generator for benchmarks and tests.
 *
 * `generateSession({ entries, seed })` returns Pi session entries (as Pi writes them to a session file, without the
 * header) for a long coding-agent session: a model/thinking-level setup, several earlier exchanges on varied topics,
 * and a final long run that holds about 55% of the entries (hundreds of tool calls at 2,000 entries). Tool outputs
 * use real text from the Pi packages in node_modules (see corpus.ts): `rg -n` output, file reads, vitest logs with
 * failures and stack traces, small shell outputs, edit/write results and screenshots with real PNG/JPEG headers.
 *
 * Everything is derived from the seed with mulberry32; no Math.random, no clock, no network.
 *
 * Measured (2 vCPU container, Node 22, seed 7; the first call also loads the corpus: ≈ 140 ms, 6.6 MB of text):
 *
 * | entries | tool calls (final run) | JSON size | retained heap | generate |
 * |--------:|-----------------------:|----------:|--------------:|---------:|
 * |     200 |              110 (≈ 65) |   0.9 MB |          2 MB |   30 ms |
 * |   2,000 |           1,160 (≈ 690) |   8.7 MB |         13 MB |  260 ms |
 * |  10,000 |         5,810 (≈ 3,400) |    49 MB |         72 MB |  1.3 s  |
 *
 * `generateOutput` of 20 MB takes ≈ 0.4–0.5 s for either kind.
 */
import { closeSync, mkdirSync, openSync, writeSync } from "node:fs";
import { dirname } from "node:path";
import { type Corpus, type CorpusFile, getCorpus, grepOutput, pickTerm, type Rng, utf8Length } from "./corpus.ts";
import { mulberry32 } from "./prng.ts";

// ---------------------------------------------------------------------------------------------------------------
// Public types

/** A Pi session entry (`SessionEntry` from @earendil-works/pi-coding-agent), typed loosely. */
export interface SessionEntryLike {
  type: string;
  id: string;
  parentId: string | null;
  timestamp: string;
  [key: string]: unknown;
}

export interface SessionHeaderLike {
  type: "session";
  version: number;
  id: string;
  timestamp: string;
  cwd: string;
}

export interface GenerateOptions {
  /** Exact number of entries to return (>= 2). */
  entries: number;
  /** PRNG seed (default 1). */
  seed?: number;
  /** Include a few tool outputs that hit Pi's 50 KB bash limit (with Pi's truncation notice). */
  bigOutputs?: boolean;
}

export interface ProjectedEntryLike {
  sourceEntry: SessionEntryLike;
  // biome-ignore lint/suspicious/noExplicitAny: AgentMessage shapes are not imported into the kit.
  messages: any[];
}

export const DEFAULT_CWD = "/home/dev/earendil-works";
export const SESSION_VERSION = 3;
/** Pi's bash/read output limit (DEFAULT_MAX_BYTES). */
export const PI_MAX_BYTES = 50 * 1024;

// ---------------------------------------------------------------------------------------------------------------
// PRNG and small helpers

export { mulberry32 } from "./prng.ts";

function int(rng: Rng, lo: number, hi: number): number {
  return lo + Math.floor(rng() * (hi - lo + 1));
}

function pick<T>(rng: Rng, items: readonly T[]): T {
  return items[Math.floor(rng() * items.length)]!;
}

function chance(rng: Rng, p: number): boolean {
  return rng() < p;
}

/** Log-uniform integer in [lo, hi]: many small values, a few large ones. */
function logUniform(rng: Rng, lo: number, hi: number): number {
  return Math.round(Math.exp(Math.log(lo) + rng() * (Math.log(hi) - Math.log(lo))));
}

function randomBytes(rng: Rng, n: number, noFF = false): Uint8Array {
  const out = new Uint8Array(n);
  let i = 0;
  for (; i + 4 <= n; i += 4) {
    const v = (rng() * 4294967296) >>> 0;
    out[i] = v & 0xff;
    out[i + 1] = (v >>> 8) & 0xff;
    out[i + 2] = (v >>> 16) & 0xff;
    out[i + 3] = v >>> 24;
  }
  for (; i < n; i++) out[i] = Math.floor(rng() * 256);
  if (noFF) for (let j = 0; j < n; j++) if (out[j] === 0xff) out[j] = 0xfe;
  return out;
}

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

function base62(rng: Rng, n: number): string {
  let s = "";
  for (let i = 0; i < n; i++) s += BASE62[Math.floor(rng() * 62)];
  return s;
}

function hex(rng: Rng, n: number): string {
  let s = "";
  while (s.length < n) s += ((rng() * 4294967296) >>> 0).toString(16).padStart(8, "0");
  return s.slice(0, n);
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** Trims `lines` from the end so that `lines.join("\n")` is at most `maxBytes` UTF-8 bytes. */
function joinWithin(lines: string[], maxBytes: number): string {
  let bytes = 0;
  let n = 0;
  for (; n < lines.length; n++) {
    const add = utf8Length(lines[n]!) + (n > 0 ? 1 : 0);
    if (bytes + add > maxBytes && n > 0) break;
    bytes += add;
  }
  return lines.slice(0, n).join("\n");
}

// ---------------------------------------------------------------------------------------------------------------
// Images: real PNG / JPEG headers, filler payload

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

function crc32(buf: Uint8Array, start: number, end: number): number {
  let c = 0xffffffff;
  for (let i = start; i < end; i++) c = CRC_TABLE[(c ^ buf[i]!) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/**
 * A PNG with a valid signature, IHDR (width, height, 8-bit RGBA), one IDAT chunk of filler and IEND; all chunk CRCs
 * are correct. The IDAT payload is not a valid zlib stream, so the pixels do not decode.
 */
export function makePng(rng: Rng, width: number, height: number, totalBytes: number): Uint8Array {
  const idatLen = Math.max(16, totalBytes - 8 - 25 - 12 - 12);
  const buf = new Uint8Array(8 + 25 + 12 + idatLen + 12);
  const view = new DataView(buf.buffer);
  buf.set([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], 0);
  let o = 8;
  const chunk = (type: string, data: Uint8Array) => {
    view.setUint32(o, data.length);
    for (let i = 0; i < 4; i++) buf[o + 4 + i] = type.charCodeAt(i);
    buf.set(data, o + 8);
    view.setUint32(o + 8 + data.length, crc32(buf, o + 4, o + 8 + data.length));
    o += 12 + data.length;
  };
  const ihdr = new Uint8Array(13);
  const iv = new DataView(ihdr.buffer);
  iv.setUint32(0, width);
  iv.setUint32(4, height);
  ihdr.set([8, 6, 0, 0, 0], 8); // bit depth 8, color type 6 (RGBA), deflate, adaptive filter, no interlace
  chunk("IHDR", ihdr);
  const idat = randomBytes(rng, idatLen);
  idat[0] = 0x78; // zlib header bytes, so the stream at least starts plausibly
  idat[1] = 0x9c;
  chunk("IDAT", idat);
  chunk("IEND", new Uint8Array(0));
  return buf;
}

/**
 * A baseline JPEG: SOI, APP1 with a minimal big-endian EXIF/TIFF header, SOF0 with the dimensions (3 components),
 * SOS, filler entropy data without 0xFF bytes, EOI.
 */
export function makeJpeg(rng: Rng, width: number, height: number, totalBytes: number): Uint8Array {
  const app1 = [
    0xff, 0xe1, 0x00, 0x16, 0x45, 0x78, 0x69, 0x66, 0x00, 0x00, 0x4d, 0x4d, 0x00, 0x2a, 0x00, 0x00, 0x00, 0x08, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00,
  ];
  const sof0 = [
    0xff,
    0xc0,
    0x00,
    0x11,
    0x08,
    (height >>> 8) & 0xff,
    height & 0xff,
    (width >>> 8) & 0xff,
    width & 0xff,
    0x03,
    0x01,
    0x22,
    0x00,
    0x02,
    0x11,
    0x01,
    0x03,
    0x11,
    0x01,
  ];
  const sos = [0xff, 0xda, 0x00, 0x0c, 0x03, 0x01, 0x00, 0x02, 0x11, 0x03, 0x11, 0x00, 0x3f, 0x00];
  const head = [0xff, 0xd8, ...app1, ...sof0, ...sos];
  const fillLen = Math.max(16, totalBytes - head.length - 2);
  const buf = new Uint8Array(head.length + fillLen + 2);
  buf.set(head, 0);
  buf.set(randomBytes(rng, fillLen, true), head.length);
  buf[buf.length - 2] = 0xff;
  buf[buf.length - 1] = 0xd9;
  return buf;
}

const SCREEN_SIZES: readonly [number, number][] = [
  [1280, 800],
  [1440, 900],
  [1920, 1080],
  [2560, 1600],
  [390, 844],
];

function screenshot(rng: Rng): { data: string; mimeType: string; width: number; height: number } {
  const [width, height] = pick(rng, SCREEN_SIZES);
  const bytes = logUniform(rng, 24 * 1024, 96 * 1024);
  if (chance(rng, 0.7)) {
    return {
      data: Buffer.from(makePng(rng, width, height, bytes)).toString("base64"),
      mimeType: "image/png",
      width,
      height,
    };
  }
  return {
    data: Buffer.from(makeJpeg(rng, width, height, bytes)).toString("base64"),
    mimeType: "image/jpeg",
    width,
    height,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Vocabulary

const NOUNS = [
  "tool results",
  "context edits",
  "thinking blocks",
  "abort signals",
  "usage totals",
  "custom messages",
  "compaction summaries",
  "model changes",
  "image attachments",
  "truncated outputs",
  "session headers",
  "labels",
  "provider retries",
  "cache breakpoints",
  "steering messages",
  "extension hooks",
];

const PROBLEMS = [
  "drop the last entry after a reload",
  "return stale data after switching branches",
  "throw on an empty session",
  "ignore the abort signal",
  "double-count cache tokens",
  "hang when the stream ends early",
  "lose the thinking signature on retry",
  "render the wrong width on narrow terminals",
  "emit the tool result twice",
  "leak a file handle on Windows",
];

const UI_PARTS = [
  "footer",
  "editor",
  "model selector",
  "tool output panel",
  "status line",
  "session tree",
  "diff view",
];

const CONCERNS = ["race-condition", "error-handling", "performance", "security", "backwards-compatibility"];

const STEERING = [
  "Wait — don't change the public API. Keep the old export as a deprecated alias.",
  "Also handle the Windows path case while you're in there.",
  "Skip the docs for now, focus on getting the tests green.",
  "Use the existing helper in utils instead of writing a new one.",
  "Don't run the whole suite every time, just the affected package.",
  "Stop touching the snapshots; they're regenerated in CI.",
  "The failure in the extensions tests is known and unrelated, ignore it.",
  "Please keep the commits small — one package per change.",
  "Actually, rename it to something shorter, the name is too long.",
  "Make sure this still works with sessions written by version 1.",
  "Take another screenshot after the change so I can compare.",
  "Prefer early returns over nested ifs here.",
  "Add a comment explaining why the timeout is needed.",
  "Check the abort path too, that's where it broke last time.",
];

const THOUGHTS = [
  "Let me look at how `{id}` is used before changing anything.",
  "The failing assertion compares the projected messages, so the bug is probably in how `{id}` builds the list.",
  "I should check {path} first; the call chain starts there.",
  "There are several call sites. I'll go package by package so each test run stays small.",
  "The output is long, but only a few of these matches are actual call sites; the rest are type declarations.",
  "This edit changes the signature, so every caller of `{id}` needs updating too.",
  "The test log shows the same failure twice, which suggests shared state between tests.",
  "I need to confirm whether {noun} are persisted or only kept in memory.",
  "Reading the docs for {noun} should tell me what the expected order is.",
  "The stack trace points at {path}:{line}, which is in the middle of `{id}`.",
  "Before editing, let me check whether there's an existing test covering {noun}.",
  "The screenshot confirms the layout issue: the {ui} overlaps the {ui2}.",
  "Running the narrower test file first is faster than the whole suite.",
  "That grep was too broad. I'll narrow it down to the declarations.",
  "The user asked to keep the public API stable, so I'll add an alias instead of renaming the export.",
  "I'm fairly sure the remaining failures are caused by the same stale cache.",
];

const SAYINGS = [
  "Let me look at how `{id}` is used.",
  "Checking the callers in {path}.",
  "Running the tests again after the edit.",
  "Updating the next call site.",
  "The failure comes from {path}; reading it now.",
  "Searching for the remaining references.",
  "Taking a screenshot to check the layout.",
  "That fixed the first failure; re-running the suite.",
  "Now the docs.",
  "I'll check the type declarations as well.",
];

// ---------------------------------------------------------------------------------------------------------------
// Text helpers over the corpus

interface Topic {
  file: CorpusFile;
  id: string;
  id2: string;
  noun: string;
  pkg: string;
}

function pkgOf(path: string): string {
  return path.slice(0, path.indexOf("/"));
}

function baseName(path: string): string {
  const name = path.slice(path.lastIndexOf("/") + 1);
  return name.replace(/\.d\.ts$|\.js$|\.md$/, "");
}

function testFileFor(path: string): string {
  return `test/${baseName(path)}.test.ts`;
}

function pickFile(rng: Rng, corpus: Corpus, kind: "code" | "doc" | "any" = "any", pkg?: string): CorpusFile {
  const pool =
    kind === "code"
      ? corpus.codeFiles
      : kind === "doc"
        ? corpus.docFiles
        : chance(rng, 0.75)
          ? corpus.codeFiles
          : corpus.docFiles;
  const list = pool.length > 0 ? pool : corpus.codeFiles.length > 0 ? corpus.codeFiles : [0];
  if (pkg) {
    // Prefer a file from the topic's package: a few tries, then anything.
    for (let t = 0; t < 6; t++) {
      const f = corpus.files[pick(rng, list)]!;
      if (f.path.startsWith(`${pkg}/`)) return f;
    }
  }
  return corpus.files[pick(rng, list)]!;
}

function fill(rng: Rng, template: string, topic: Topic, corpus: Corpus): string {
  return template
    .replaceAll("{id}", topic.id)
    .replaceAll("{id2}", topic.id2)
    .replaceAll("{path}", topic.file.path)
    .replaceAll("{line}", String(int(rng, 1, Math.max(1, topic.file.lines.length))))
    .replaceAll("{noun}", topic.noun)
    .replaceAll("{ui}", pick(rng, UI_PARTS))
    .replaceAll("{ui2}", pick(rng, UI_PARTS))
    .replaceAll("{other}", pickFile(rng, corpus, "code").path);
}

function newTopic(rng: Rng, corpus: Corpus): Topic {
  const file = corpus.declFiles.length > 0 ? corpus.files[pick(rng, corpus.declFiles)]! : pickFile(rng, corpus, "code");
  return {
    file,
    id: file.decls.length > 0 ? pick(rng, file.decls) : pick(rng, corpus.identifiers),
    id2: pick(rng, corpus.identifiers),
    noun: pick(rng, NOUNS),
    pkg: pkgOf(file.path),
  };
}

function codeSnippet(rng: Rng, file: CorpusFile, maxLines: number): { start: number; lines: string[] } {
  const n = file.lines.length;
  const count = Math.min(n, int(rng, 1, maxLines));
  const start = int(rng, 0, Math.max(0, n - count));
  return { start, lines: file.lines.slice(start, start + count) };
}

// ---------------------------------------------------------------------------------------------------------------
// Test / build logs

const DURATIONS = [1, 2, 3, 4, 6, 9, 12, 18, 25, 41, 67, 120, 240, 512];

const TEST_TITLES = [
  "returns undefined when {id} is missing",
  "keeps {noun} stable across reloads",
  "handles empty {noun}",
  "rejects invalid {noun}",
  "streams {noun} in order",
  "applies the latest edit to {noun}",
  "preserves the parent chain after {id}",
  "does not call {id} twice",
  "aborts {id} when the signal fires",
  "counts {noun} once",
  "formats {noun} for narrow terminals",
  "round-trips {noun} through JSON",
  "migrates version 1 sessions before {id}",
  "truncates {noun} at the byte limit",
];

const ASSERTIONS = [
  (r: Rng) => `AssertionError: expected ${int(r, 0, 9)} to be ${int(r, 10, 99)} // Object.is equality`,
  (r: Rng) => `AssertionError: expected [ …(${int(r, 2, 9)}) ] to deeply equal [ …(${int(r, 2, 9)}) ]`,
  () => `AssertionError: expected undefined to be defined`,
  (r: Rng) =>
    `TypeError: Cannot read properties of undefined (reading '${pick(r, ["parentId", "content", "id", "usage", "message", "length"])}')`,
  (r: Rng) => `Error: Test timed out in ${pick(r, [5000, 10000, 60000])}ms.`,
  () => `AssertionError: expected "spy" to be called 1 times, but got 2 times`,
  (r: Rng) => `Error: ENOENT: no such file or directory, open '/tmp/pi-test-${hex(r, 6)}/session.jsonl'`,
];

interface LogGen {
  rng: Rng;
  corpus: Corpus;
  cwd: string;
}

function testTitle(g: LogGen): string {
  return pick(g.rng, TEST_TITLES)
    .replaceAll("{id}", pick(g.rng, g.corpus.identifiers))
    .replaceAll("{noun}", pick(g.rng, NOUNS));
}

function describeName(g: LogGen): string {
  return pick(g.rng, g.corpus.identifiers);
}

function stackFrames(g: LogGen, testFile: string, line: number): string[] {
  const frames: string[] = [];
  const depth = int(g.rng, 1, 4);
  for (let i = 0; i < depth; i++) {
    const f = pickFile(g.rng, g.corpus, "code");
    frames.push(
      ` ❯ ${pick(g.rng, g.corpus.identifiers)} ${f.path}:${int(g.rng, 1, f.lines.length)}:${int(g.rng, 5, 40)}`,
    );
  }
  frames.push(` ❯ ${testFile}:${line}:${int(g.rng, 5, 40)}`);
  return frames;
}

function codeFrame(g: LogGen, line: number): string[] {
  const f = pickFile(g.rng, g.corpus, "code");
  const snippet = codeSnippet(g.rng, f, 5);
  const out: string[] = [];
  const first = Math.max(1, line - 2);
  for (let i = 0; i < snippet.lines.length; i++) {
    const n = first + i;
    out.push(`    ${String(n).padStart(3)}| ${snippet.lines[i]!.slice(0, 160)}`);
    if (n === line) out.push(`       | ${" ".repeat(int(g.rng, 2, 30))}^`);
  }
  return out;
}

function failureDetail(g: LogGen, testFile: string, name: string, index: number, total: number): string[] {
  const rng = g.rng;
  const line = int(rng, 12, 480);
  const out = ["", ` FAIL  ${testFile} > ${name}`, pick(rng, ASSERTIONS)(rng)];
  if (chance(rng, 0.5)) {
    out.push("", "- Expected", "+ Received", "");
    const f = pickFile(rng, g.corpus, "code");
    const snippet = codeSnippet(rng, f, 8);
    for (const l of snippet.lines) {
      const t = l.trim().slice(0, 100);
      if (!t) continue;
      out.push(chance(rng, 0.3) ? `- ${t}` : chance(rng, 0.3) ? `+ ${t}` : `  ${t}`);
    }
  }
  out.push("", ...stackFrames(g, testFile, line), ...codeFrame(g, line), "");
  out.push(`⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯[${index}/${total}]⎯`);
  return out;
}

function byteLen(lines: string[]): number {
  let n = 0;
  for (const l of lines) n += utf8Length(l) + 1;
  return n;
}

/**
 * One `vitest run` with the verbose reporter, `failures` failing tests (with assertion diffs, stack traces and code
 * frames) and passing tests filling the output up to `targetBytes` (never above it, unless the fixed parts already
 * are). No trailing newline.
 */
function vitestRun(g: LogGen, targetBytes: number, failures: number, files?: string[]): string {
  const rng = g.rng;
  const head = ["", ` RUN  v4.1.12 ${g.cwd}`, ""];
  const testFiles = files ?? [];
  const failing: { file: string; name: string }[] = [];
  const details: string[] = [];
  if (failures > 0) details.push("", `⎯⎯⎯⎯⎯⎯⎯ Failed Tests ${failures} ⎯⎯⎯⎯⎯⎯⎯`);
  for (let i = 0; i < failures; i++) {
    const file =
      testFiles.length > 0 && chance(rng, 0.7)
        ? pick(rng, testFiles)
        : testFileFor(pickFile(rng, g.corpus, "code").path);
    const name = `${describeName(g)} > ${testTitle(g)}`;
    failing.push({ file, name });
    details.push(...failureDetail(g, file, name, i + 1, failures));
  }
  const summaryFor = (passedFiles: number, passedTests: number) => {
    const failedFiles = new Set(failing.map((f) => f.file)).size;
    const fileCount = passedFiles + failedFiles;
    const totalTests = passedTests + failures;
    return [
      "",
      failures > 0
        ? ` Test Files  ${failedFiles} failed | ${passedFiles} passed (${fileCount})`
        : ` Test Files  ${passedFiles} passed (${fileCount})`,
      failures > 0
        ? `      Tests  ${failures} failed | ${passedTests} passed (${totalTests})`
        : `      Tests  ${passedTests} passed (${totalTests})`,
      `   Start at  ${String(int(rng, 8, 19)).padStart(2, "0")}:${String(int(rng, 0, 59)).padStart(2, "0")}:${String(int(rng, 0, 59)).padStart(2, "0")}`,
      `   Duration  ${(rng() * 20 + 0.5).toFixed(2)}s (transform ${int(rng, 80, 900)}ms, setup 0ms, collect ${int(rng, 100, 2500)}ms, tests ${int(rng, 50, 9000)}ms, environment 1ms, prepare ${int(rng, 80, 600)}ms)`,
    ];
  };
  const fixed = byteLen(head) + byteLen(details) + byteLen(summaryFor(9999, 99999)) + 1;
  const body: string[] = [];
  let bodyBytes = 0;
  let passedTests = 0;
  let passedFiles = 0;
  const failingQueue = [...failing];
  const add = (line: string): boolean => {
    const b = utf8Length(line) + 1;
    if (fixed + bodyBytes + b > targetBytes) return false;
    body.push(line);
    bodyBytes += b;
    return true;
  };
  // Failed tests are listed first (vitest prints failing files' tests as they finish); then passing files.
  for (const f of failingQueue) {
    if (!add(` × ${f.file} > ${f.name} ${pick(rng, DURATIONS)}ms`)) break;
    add(`   → ${pick(rng, ASSERTIONS)(rng).replace(/^\w+: /, "")}`);
  }
  let full = false;
  while (!full) {
    const file =
      testFiles.length > 0 && chance(rng, 0.5)
        ? pick(rng, testFiles)
        : testFileFor(pickFile(rng, g.corpus, "code").path);
    const describe = describeName(g);
    const n = int(rng, 3, 30);
    let wrote = 0;
    for (let i = 0; i < n; i++) {
      if (chance(rng, 0.04)) {
        if (!add(` stdout | ${file} > ${describe}`)) {
          full = true;
          break;
        }
        const f = pickFile(rng, g.corpus, "any");
        for (const l of codeSnippet(rng, f, 3).lines) add(l.slice(0, 200));
        add("");
      }
      const skipped = chance(rng, 0.02);
      const line = skipped
        ? ` ↓ ${file} > ${describe} > ${testTitle(g)}`
        : ` ✓ ${file} > ${describe} > ${testTitle(g)} ${pick(rng, DURATIONS)}ms`;
      if (!add(line)) {
        full = true;
        break;
      }
      if (!skipped) passedTests++;
      wrote++;
    }
    if (wrote > 0) passedFiles++;
    if (fixed + bodyBytes >= targetBytes - 40) break;
  }
  return [...head, ...body, ...details, ...summaryFor(passedFiles, passedTests)].join("\n");
}

/** A jest-style run (PASS/FAIL blocks with ● failure details), filling up to `targetBytes`. */
function jestRun(g: LogGen, targetBytes: number, failures: number): string {
  const rng = g.rng;
  const out: string[] = [];
  let bytes = 0;
  const summaryBytes = 260;
  const add = (line: string): boolean => {
    const b = utf8Length(line) + 1;
    if (bytes + b + summaryBytes > targetBytes) return false;
    out.push(line);
    bytes += b;
    return true;
  };
  let failedLeft = failures;
  let passed = 0;
  let suites = 0;
  let failedSuites = 0;
  let full = false;
  while (!full) {
    const file = `src/${baseName(pickFile(rng, g.corpus, "code").path)}.test.ts`;
    const fail = failedLeft > 0 && chance(rng, 0.3);
    const block: string[] = [];
    block.push(`${fail ? "FAIL" : "PASS"} ${file}${chance(rng, 0.3) ? ` (${(rng() * 9 + 0.2).toFixed(1)} s)` : ""}`);
    const describe = describeName(g);
    block.push(`  ${describe}`);
    const n = int(rng, 2, 14);
    const failedNames: string[] = [];
    for (let i = 0; i < n; i++) {
      const title = testTitle(g);
      if (fail && i === n - 1) {
        block.push(`    ✕ ${title} (${pick(rng, DURATIONS)} ms)`);
        failedNames.push(title);
      } else {
        block.push(`    ✓ ${title} (${pick(rng, DURATIONS)} ms)`);
      }
    }
    for (const name of failedNames) {
      const line = int(rng, 10, 300);
      block.push("", `  ● ${describe} › ${name}`, "", "    expect(received).toBe(expected) // Object.is equality", "");
      block.push(`    Expected: ${int(rng, 0, 50)}`, `    Received: ${int(rng, 51, 99)}`, "");
      const f = pickFile(rng, g.corpus, "code");
      const snippet = codeSnippet(rng, f, 5);
      snippet.lines.forEach((l, k) => {
        const num = line - 2 + k;
        block.push(`    ${num === line ? ">" : " "} ${String(num).padStart(3)} | ${l.slice(0, 140)}`);
        if (num === line) block.push(`          | ${" ".repeat(int(rng, 2, 20))}^`);
      });
      block.push("", `      at Object.<anonymous> (${file}:${line}:${int(rng, 5, 30)})`);
      const depth = int(rng, 1, 3);
      for (let d = 0; d < depth; d++) {
        const cf = pickFile(rng, g.corpus, "code");
        block.push(
          `      at ${pick(rng, g.corpus.identifiers)} (node_modules/@earendil-works/${cf.path}:${int(rng, 1, cf.lines.length)}:${int(rng, 5, 40)})`,
        );
      }
      block.push("");
    }
    for (const l of block) {
      if (!add(l)) {
        full = true;
        break;
      }
    }
    if (full) break;
    suites++;
    if (fail) {
      failedSuites++;
      failedLeft--;
    }
    passed += n - failedNames.length;
    if (bytes + summaryBytes >= targetBytes - 40) break;
  }
  const failed = failures - failedLeft;
  out.push(
    "",
    `Test Suites: ${failedSuites > 0 ? `${failedSuites} failed, ` : ""}${suites - failedSuites} passed, ${suites} total`,
    `Tests:       ${failed > 0 ? `${failed} failed, ` : ""}${passed} passed, ${passed + failed} total`,
    "Snapshots:   0 total",
    `Time:        ${(rng() * 30 + 1).toFixed(3)} s`,
    "Ran all test suites.",
  );
  return out.join("\n");
}

// ---------------------------------------------------------------------------------------------------------------
// Single big outputs

/**
 * A single large tool output of about `bytes` UTF-8 bytes (within 2% below; never above):
 * - "grep": `rg -n -C1` output over the corpus (alternation of three frequent terms; beyond one pass over the corpus
 *   the paths continue under `mirror-<n>/`);
 * - "log": a plain CI log: npm script banners, vitest and jest runs with some failures, stack traces and code frames.
 * No trailing newline. Deterministic for (kind, bytes, seed).
 */
export function generateOutput(kind: "grep" | "log", bytes: number, seed = 1): string {
  const rng = mulberry32(seed ^ 0x9e3779b9);
  const corpus = getCorpus();
  if (kind === "grep") {
    const terms = corpus.terms.slice(0, 12);
    const chosen = [pick(rng, terms)];
    while (chosen.length < 3 && terms.length > chosen.length) {
      const t = pick(rng, terms);
      if (!chosen.includes(t)) chosen.push(t);
    }
    return grepOutput(rng, bytes, { terms: chosen, context: 1, repeat: true, startFile: 0 }).text;
  }
  const g: LogGen = { rng, corpus, cwd: DEFAULT_CWD };
  const parts: string[] = [];
  let total = 0;
  const packages = [...new Set(corpus.files.map((f) => pkgOf(f.path)))];
  while (total < bytes - 64) {
    const remaining = bytes - total - (parts.length > 0 ? 1 : 0);
    const pkg = pick(rng, packages);
    const banner: string[] = [
      `> @earendil-works/${pkg}@1.6.0 test`,
      chance(rng, 0.7) ? "> vitest run" : "> jest --ci",
      "",
    ];
    const jest = banner[1] === "> jest --ci";
    if (parts.length > 0) banner.unshift(""); // blank line after the previous run's summary
    const bannerText = banner.join("\n");
    const bannerBytes = utf8Length(bannerText) + 1;
    let target = Math.min(remaining, logUniform(rng, 20 * 1024, 400 * 1024));
    if (remaining - target < 4096) target = remaining;
    const runTarget = target - bannerBytes;
    if (runTarget < 600) {
      // Too small for a run: finish with plain lines.
      const lines: string[] = [];
      let b = 0;
      while (b < remaining - 80) {
        const f = pickFile(rng, corpus, "code");
        const l = `npm warn ${pick(rng, ["deprecated", "config", "exec"])} ${f.path}: ${pick(rng, f.lines).trim().slice(0, 60)}`;
        if (b + utf8Length(l) + 1 > remaining) break;
        lines.push(l);
        b += utf8Length(l) + 1;
      }
      if (lines.length === 0) break;
      const text = lines.join("\n");
      parts.push(text);
      total += utf8Length(text) + (parts.length > 1 ? 1 : 0);
      continue;
    }
    const failures = runTarget > 8000 ? int(rng, 0, Math.min(6, Math.floor(runTarget / 6000))) : 0;
    const run = jest ? jestRun(g, runTarget, failures) : vitestRun(g, runTarget, failures);
    const text = `${bannerText}\n${run}`;
    parts.push(text);
    total += utf8Length(text) + (parts.length > 1 ? 1 : 0);
  }
  return parts.join("\n");
}

// ---------------------------------------------------------------------------------------------------------------
// Session generation

interface ContentBlock {
  type: string;
  [key: string]: unknown;
}

interface Gen {
  rng: Rng;
  corpus: Corpus;
  log: LogGen;
  out: SessionEntryLike[];
  ids: Set<string>;
  callIds: Set<string>;
  lastId: string | null;
  clock: number;
  /** Approximate tokens in context (chars / 4). */
  ctxTokens: number;
  /** Tokens appended since the last assistant message (written to the cache by the next request). */
  newTokens: number;
  /** Tool results produced so far. */
  results: number;
  /** Every `bigEvery`-th tool result is a 50 KB output while `bigLeft` > 0. */
  bigEvery: number;
  bigLeft: number;
  topic: Topic;
  /** Test files recently touched in this exchange (for coherent test runs). */
  testFiles: string[];
}

const MODEL = { api: "anthropic-messages", provider: "anthropic", model: "claude-sonnet-4-5" } as const;

function newEntryId(g: Gen): string {
  for (;;) {
    const id = hex(g.rng, 8);
    if (!g.ids.has(id)) {
      g.ids.add(id);
      return id;
    }
  }
}

function newCallId(g: Gen): string {
  for (;;) {
    const id = `toolu_01${base62(g.rng, 22)}`;
    if (!g.callIds.has(id)) {
      g.callIds.add(id);
      return id;
    }
  }
}

function append(g: Gen, type: string, fields: Record<string, unknown>): SessionEntryLike {
  const entry: SessionEntryLike = { type, id: newEntryId(g), parentId: g.lastId, timestamp: iso(g.clock) };
  Object.assign(entry, fields);
  g.out.push(entry);
  g.lastId = entry.id;
  return entry;
}

function tokensOf(chars: number): number {
  return Math.ceil(chars / 4);
}

function contentChars(content: unknown): number {
  if (typeof content === "string") return content.length;
  if (!Array.isArray(content)) return 0;
  let n = 0;
  for (const b of content as ContentBlock[]) {
    if (b.type === "text") n += (b.text as string).length;
    else if (b.type === "thinking") n += (b.thinking as string).length;
    else if (b.type === "toolCall") n += JSON.stringify(b.arguments).length + 40;
    else if (b.type === "image") n += 6000; // ~1.5k tokens per image
  }
  return n;
}

function appendMessage(g: Gen, message: Record<string, unknown>): SessionEntryLike {
  const e = append(g, "message", { message });
  if (message.role !== "assistant") {
    const t = tokensOf(contentChars(message.content));
    g.newTokens += t;
  }
  return e;
}

function userText(g: Gen, text: string): SessionEntryLike {
  g.clock += int(g.rng, 2_000, 40_000);
  return appendMessage(g, { role: "user", content: [{ type: "text", text }], timestamp: g.clock });
}

function thinkingBlock(g: Gen): ContentBlock {
  const n = int(g.rng, 1, 6);
  const parts: string[] = [];
  const used = new Set<string>();
  for (let i = 0; i < n; i++) {
    const t = pick(g.rng, THOUGHTS);
    if (used.has(t)) continue;
    used.add(t);
    parts.push(fill(g.rng, t, g.topic, g.corpus));
  }
  if (chance(g.rng, 0.25)) {
    const f = chance(g.rng, 0.5) ? g.topic.file : pickFile(g.rng, g.corpus, "code", g.topic.pkg);
    const s = codeSnippet(g.rng, f, 4);
    parts.push(`In ${f.path} around line ${s.start + 1}:\n\`\`\`\n${s.lines.join("\n")}\n\`\`\``);
  }
  const sig = Buffer.from(randomBytes(g.rng, int(g.rng, 180, 560))).toString("base64");
  return { type: "thinking", thinking: parts.join(" "), thinkingSignature: sig };
}

function assistantMessage(g: Gen, content: ContentBlock[], stopReason: string): SessionEntryLike {
  const rng = g.rng;
  const start = g.clock + int(rng, 5, 80);
  const output = tokensOf(contentChars(content));
  const cacheRead = g.ctxTokens;
  const cacheWrite = g.newTokens;
  const input = int(rng, 1, 12);
  g.clock = start + int(rng, 1_500, 25_000) + output * 8;
  g.ctxTokens += g.newTokens + output;
  g.newTokens = 0;
  const cost = {
    input: (input * 3) / 1e6,
    output: (output * 15) / 1e6,
    cacheRead: (cacheRead * 0.3) / 1e6,
    cacheWrite: (cacheWrite * 3.75) / 1e6,
    total: 0,
  };
  cost.total = cost.input + cost.output + cost.cacheRead + cost.cacheWrite;
  return append(g, "message", {
    message: {
      role: "assistant",
      content,
      api: MODEL.api,
      provider: MODEL.provider,
      model: MODEL.model,
      usage: { input, output, cacheRead, cacheWrite, totalTokens: input + output + cacheRead + cacheWrite, cost },
      stopReason,
      timestamp: start,
      responseId: `msg_01${base62(rng, 22)}`,
    },
  });
}

interface PlannedCall {
  call: ContentBlock;
  result: () => { content: ContentBlock[]; isError: boolean; details?: Record<string, unknown>; ms: number };
}

type ToolKind = "grep" | "read" | "test" | "small" | "edit" | "write" | "screenshot";

const TOOL_WEIGHTS: readonly [ToolKind, number][] = [
  ["grep", 22],
  ["read", 23],
  ["test", 9],
  ["small", 20],
  ["edit", 17],
  ["write", 5],
  ["screenshot", 2.5],
];
const TOOL_WEIGHT_TOTAL = TOOL_WEIGHTS.reduce((s, [, w]) => s + w, 0);

function pickToolKind(rng: Rng): ToolKind {
  let r = rng() * TOOL_WEIGHT_TOTAL;
  for (const [k, w] of TOOL_WEIGHTS) {
    r -= w;
    if (r < 0) return k;
  }
  return "small";
}

function bashCall(g: Gen, command: string): ContentBlock {
  const args: Record<string, unknown> = { command };
  if (chance(g.rng, 0.1)) args.timeout = pick(g.rng, [60, 120, 300]);
  return { type: "toolCall", id: newCallId(g), name: "bash", arguments: args };
}

function withExit(text: string, code: number): string {
  return `${text ? `${text}\n\n` : ""}Command exited with code ${code}`;
}

function truncationNotice(g: Gen, shownLines: number): string {
  const total = shownLines + int(g.rng, 200, 6000);
  return `\n\n[Showing lines ${total - shownLines + 1}-${total} of ${total} (50.0KB limit). Full output: /tmp/pi-bash-${hex(g.rng, 16)}.log]`;
}

/** Files one `rg` in a session scans at most (about a quarter of the corpus): keeps generation fast. */
const GREP_MAX_FILES = 320;

function planGrep(g: Gen, big: boolean): PlannedCall {
  const rng = g.rng;
  const target = big ? PI_MAX_BYTES : logUniform(rng, 2 * 1024, 48 * 1024);
  const context = pick(rng, [0, 1, 1, 2]);
  // A quarter of the searches look for the topic's identifier, starting next to the file that declares it.
  const topical = chance(rng, 0.25);
  const term = topical ? g.topic.id : pickTerm(rng, target, context, GREP_MAX_FILES / g.corpus.files.length);
  const res = grepOutput(rng, target, {
    terms: [term],
    context,
    repeat: big,
    maxFiles: GREP_MAX_FILES,
    startFile: topical ? Math.max(0, (g.corpus.indexOf.get(g.topic.file.path) ?? 0) - int(rng, 0, 20)) : undefined,
  });
  const flag = context > 0 ? ` -C${context}` : "";
  const scope = chance(rng, 0.4) ? ` ${g.topic.pkg}` : "";
  const call = bashCall(g, `rg -n${flag} ${JSON.stringify(term)}${scope}`);
  return {
    call,
    result: () => {
      if (res.matches === 0)
        return { content: [{ type: "text", text: withExit("(no output)", 1) }], isError: true, ms: int(rng, 20, 400) };
      const text = big ? `${res.text}${truncationNotice(g, res.lines)}` : `${res.text}\n`;
      const details = big ? { fullOutputPath: `/tmp/pi-bash-${hex(rng, 16)}.log` } : undefined;
      return { content: [{ type: "text", text }], isError: false, details, ms: int(rng, 40, 1500) };
    },
  };
}

function planRead(g: Gen): PlannedCall {
  const rng = g.rng;
  const file = chance(rng, 0.35) ? g.topic.file : pickFile(rng, g.corpus, "any", g.topic.pkg);
  const target = logUniform(rng, 1024, 40 * 1024);
  const args: Record<string, unknown> = { path: file.path };
  let text: string;
  const total = file.lines.length;
  if (file.bytes <= target * 1.3 && total <= 2000) {
    text = file.text;
  } else {
    // A window of lines that fits the target.
    const startGuess = Math.floor(rng() * Math.max(1, total - 20));
    const start = chance(rng, 0.3) ? 0 : startGuess;
    let end = start;
    let b = 0;
    while (end < total && end - start < 2000) {
      const add = utf8Length(file.lines[end]!) + 1;
      if (b + add > target && end > start) break;
      b += add;
      end++;
    }
    text = file.lines.slice(start, end).join("\n");
    if (start > 0) args.offset = start + 1;
    args.limit = end - start;
    if (end < total) text += `\n\n[${total - end} more lines in file. Use offset=${end + 1} to continue.]`;
  }
  return {
    call: { type: "toolCall", id: newCallId(g), name: "read", arguments: args },
    result: () => ({ content: [{ type: "text", text }], isError: false, ms: int(rng, 2, 60) }),
  };
}

function planTest(g: Gen, big: boolean): PlannedCall {
  const rng = g.rng;
  const file = g.testFiles.length > 0 && chance(rng, 0.6) ? pick(rng, g.testFiles) : testFileFor(g.topic.file.path);
  if (!g.testFiles.includes(file)) g.testFiles.push(file);
  const whole = chance(rng, 0.3);
  const command = whole ? "npm test 2>&1 | tail -n 400" : `npx vitest run ${file}`;
  const failures = chance(rng, 0.7) ? int(rng, 1, 4) : 0;
  const target = big ? PI_MAX_BYTES - 64 : logUniform(rng, 5 * 1024, 30 * 1024);
  const log = vitestRun(g.log, target, failures, g.testFiles);
  return {
    call: bashCall(g, command),
    result: () => {
      const base = big ? `${log}${truncationNotice(g, log.split("\n").length)}` : log;
      const failed = failures > 0;
      return {
        content: [{ type: "text", text: failed ? withExit(base, 1) : `${base}\n` }],
        isError: failed,
        ms: int(rng, 1_500, 60_000),
      };
    },
  };
}

function smallOutput(g: Gen): { command: string; text: string; exit: number } {
  const rng = g.rng;
  const corpus = g.corpus;
  const target = logUniform(rng, 400, 4000);
  const lines: string[] = [];
  const fillTo = (make: () => string) => {
    let b = 0;
    for (let guard = 0; b < target && guard < 500; guard++) {
      const l = make();
      lines.push(l);
      b += utf8Length(l) + 1;
    }
  };
  switch (int(rng, 0, 6)) {
    case 0: {
      lines.push(`On branch ${pick(rng, ["main", "feat/", "fix/"])}${pick(rng, ["", g.topic.id.toLowerCase()])}`);
      lines.push("Changes not staged for commit:", '  (use "git add <file>..." to update what will be committed)', "");
      fillTo(() => `\tmodified:   ${pickFile(rng, corpus, "any", g.topic.pkg).path}`);
      lines.push("", 'no changes added to commit (use "git add" and/or "git commit -a")');
      return { command: "git status", text: lines.join("\n"), exit: 0 };
    }
    case 1: {
      const dir = g.topic.file.path.slice(0, g.topic.file.path.lastIndexOf("/"));
      const entries = corpus.files.filter((f) => f.path.startsWith(`${dir}/`)).slice(0, 80);
      lines.push(`total ${entries.length * 8}`);
      for (const f of entries) {
        const l = `-rw-r--r--  1 dev dev ${String(f.bytes).padStart(7)} Mar  2 09:14 ${f.path.slice(dir.length + 1)}`;
        lines.push(l);
        if (byteLen(lines) > target) break;
      }
      return { command: `ls -la ${dir}`, text: lines.join("\n"), exit: 0 };
    }
    case 2: {
      fillTo(() => `${hex(rng, 7)} ${fill(rng, pick(rng, COMMITS), newTopic(rng, corpus), corpus)}`);
      return { command: "git log --oneline -n 40", text: lines.join("\n"), exit: 0 };
    }
    case 3: {
      let sum = 0;
      fillTo(() => {
        const f = pickFile(rng, corpus, "code", g.topic.pkg);
        sum += f.lines.length;
        return `${String(f.lines.length).padStart(6)} ${f.path}`;
      });
      lines.push(`${String(sum).padStart(6)} total`);
      return { command: `wc -l $(git ls-files '${g.topic.pkg}/*.js' | head -n 60)`, text: lines.join("\n"), exit: 0 };
    }
    case 4: {
      fillTo(() => {
        const f = pickFile(rng, corpus, "code", g.topic.pkg);
        const l = int(rng, 1, f.lines.length);
        const code = pick(rng, ["TS2345", "TS2322", "TS2339", "TS7006", "TS18048"]);
        const msg =
          code === "TS2339"
            ? `Property '${pick(rng, corpus.identifiers)}' does not exist on type '${pick(rng, corpus.identifiers)}'.`
            : code === "TS18048"
              ? `'${pick(rng, corpus.identifiers)}' is possibly 'undefined'.`
              : code === "TS7006"
                ? `Parameter '${pick(rng, ["entry", "msg", "e", "options"])}' implicitly has an 'any' type.`
                : `Argument of type 'string | undefined' is not assignable to parameter of type 'string'.`;
        return `${f.path.replace(/\.js$/, ".ts")}(${l},${int(rng, 3, 40)}): error ${code}: ${msg}`;
      });
      lines.push("", `Found ${lines.length - 1} errors.`);
      return { command: "npx tsc --noEmit -p tsconfig.json", text: lines.join("\n"), exit: 2 };
    }
    case 5: {
      let files = 0;
      let ins = 0;
      let del = 0;
      fillTo(() => {
        const a = int(rng, 0, 120);
        const d = int(rng, 0, 60);
        files++;
        ins += a;
        del += d;
        return ` ${pickFile(rng, corpus, "any", g.topic.pkg).path} | ${a + d} ${"+".repeat(Math.min(40, a / 3))}${"-".repeat(Math.min(20, d / 3))}`;
      });
      lines.push(` ${files} files changed, ${ins} insertions(+), ${del} deletions(-)`);
      return { command: "git diff --stat", text: lines.join("\n"), exit: 0 };
    }
    default: {
      fillTo(() => pickFile(rng, corpus, "any", g.topic.pkg).path);
      return {
        command: `find ${g.topic.pkg} -name '*.${pick(rng, ["js", "md", "d.ts"])}' | head -n 80`,
        text: lines.join("\n"),
        exit: 0,
      };
    }
  }
}

const COMMITS = [
  "fix({id}): handle {noun} after reload",
  "feat: add {noun} support to {id}",
  "refactor: split {id} into smaller helpers",
  "test: cover {noun} edge cases",
  "docs: describe {noun}",
  "chore: bump dependencies",
  "perf({id}): avoid copying {noun}",
];

function planSmall(g: Gen): PlannedCall {
  const rng = g.rng;
  const s = smallOutput(g);
  return {
    call: bashCall(g, s.command),
    result: () => ({
      content: [{ type: "text", text: s.exit === 0 ? `${s.text}\n` : withExit(s.text, s.exit) }],
      isError: s.exit !== 0,
      ms: int(rng, 10, 9_000),
    }),
  };
}

function planEdit(g: Gen): PlannedCall {
  const rng = g.rng;
  const file = chance(rng, 0.5) ? g.topic.file : pickFile(rng, g.corpus, "code", g.topic.pkg);
  const snip = codeSnippet(rng, file, 4);
  const oldText = snip.lines.join("\n");
  const newLines = snip.lines.map((l) =>
    chance(rng, 0.5) ? l.replaceAll(/\b[a-z]\w{3,}\b/g, (w) => (chance(rng, 0.2) ? g.topic.id2 : w)) : l,
  );
  if (chance(rng, 0.5))
    newLines.push(
      `${(snip.lines[0] ?? "").match(/^\s*/)?.[0] ?? ""}// ${fill(rng, pick(rng, SAYINGS), g.topic, g.corpus)}`,
    );
  const newText = newLines.join("\n");
  const failed = chance(rng, 0.06);
  const diff: string[] = [];
  const first = snip.start + 1;
  snip.lines.forEach((l, i) => {
    diff.push(`-${String(first + i).padStart(4)} ${l}`);
  });
  newLines.forEach((l, i) => {
    diff.push(`+${String(first + i).padStart(4)} ${l}`);
  });
  return {
    call: {
      type: "toolCall",
      id: newCallId(g),
      name: "edit",
      arguments: { path: file.path, edits: [{ oldText, newText }] },
    },
    result: () =>
      failed
        ? {
            content: [
              {
                type: "text",
                text: `Could not find the exact text in ${file.path}. The old text must match exactly including all whitespace and newlines.`,
              },
            ],
            isError: true,
            ms: int(rng, 2, 30),
          }
        : {
            content: [{ type: "text", text: `Successfully replaced 1 block(s) in ${file.path}.` }],
            isError: false,
            details: { diff: diff.join("\n"), firstChangedLine: first },
            ms: int(rng, 2, 30),
          },
  };
}

function planWrite(g: Gen): PlannedCall {
  const rng = g.rng;
  const src = pickFile(rng, g.corpus, chance(rng, 0.5) ? "code" : "doc", g.topic.pkg);
  const snip = codeSnippet(rng, src, int(rng, 10, 80));
  const path = chance(rng, 0.6) ? testFileFor(g.topic.file.path) : `docs/${baseName(src.path)}-notes.md`;
  const content = joinWithin(snip.lines, 6000);
  return {
    call: { type: "toolCall", id: newCallId(g), name: "write", arguments: { path, content } },
    result: () => ({
      content: [{ type: "text", text: `Successfully wrote to ${path}` }],
      isError: false,
      ms: int(rng, 1, 20),
    }),
  };
}

function planScreenshot(g: Gen): PlannedCall {
  const rng = g.rng;
  const shot = screenshot(rng);
  if (chance(rng, 0.5)) {
    const path = `screenshots/${pick(rng, UI_PARTS).replaceAll(" ", "-")}-${int(rng, 1, 40)}.${shot.mimeType === "image/png" ? "png" : "jpg"}`;
    return {
      call: { type: "toolCall", id: newCallId(g), name: "read", arguments: { path } },
      result: () => ({
        content: [
          { type: "text", text: `Read image file [${shot.mimeType}]` },
          { type: "image", data: shot.data, mimeType: shot.mimeType },
        ],
        isError: false,
        ms: int(rng, 5, 80),
      }),
    };
  }
  const url = `http://localhost:${pick(rng, [5173, 3000, 8080])}/${pick(rng, ["", "settings", "sessions", "tree", "models"])}`;
  return {
    call: {
      type: "toolCall",
      id: newCallId(g),
      name: "browser_screenshot",
      arguments: { url, width: shot.width, height: shot.height },
    },
    result: () => ({
      content: [
        { type: "text", text: `Screenshot of ${url} (${shot.width}x${shot.height}, ${shot.mimeType})` },
        { type: "image", data: shot.data, mimeType: shot.mimeType },
      ],
      isError: false,
      details: { url, width: shot.width, height: shot.height },
      ms: int(rng, 300, 4_000),
    }),
  };
}

function planCall(g: Gen): PlannedCall {
  const n = g.results + 1;
  const big = g.bigLeft > 0 && n % g.bigEvery === 0;
  if (big) {
    g.bigLeft--;
    return g.bigLeft % 2 === 0 ? planGrep(g, true) : planTest(g, true);
  }
  switch (pickToolKind(g.rng)) {
    case "grep":
      return planGrep(g, false);
    case "read":
      return planRead(g);
    case "test":
      return planTest(g, false);
    case "small":
      return planSmall(g);
    case "edit":
      return planEdit(g);
    case "write":
      return planWrite(g);
    default:
      return planScreenshot(g);
  }
}

/** One assistant turn with `calls` tool calls, followed by their results: 1 + calls entries. */
function toolTurn(g: Gen, calls: number): void {
  const rng = g.rng;
  const content: ContentBlock[] = [];
  if (chance(rng, 0.7)) content.push(thinkingBlock(g));
  if (chance(rng, 0.45)) content.push({ type: "text", text: fill(rng, pick(rng, SAYINGS), g.topic, g.corpus) });
  const planned: PlannedCall[] = [];
  for (let i = 0; i < calls; i++) {
    g.results++;
    const p = planCall(g);
    planned.push(p);
    content.push(p.call);
  }
  assistantMessage(g, content, "toolUse");
  for (const p of planned) {
    const r = p.result();
    g.clock += r.ms;
    const message: Record<string, unknown> = {
      role: "toolResult",
      toolCallId: p.call.id,
      toolName: p.call.name,
      content: r.content,
    };
    if (r.details) message.details = r.details;
    message.isError = r.isError;
    message.timestamp = g.clock;
    appendMessage(g, message);
  }
}

function customMessage(g: Gen, kind: "notice" | "enriched"): void {
  const rng = g.rng;
  g.clock += int(rng, 50, 3_000);
  if (kind === "enriched") {
    const doc = pickFile(rng, g.corpus, "doc");
    const text = `## Project context\n\nRelevant documentation (${doc.path}):\n\n${joinWithin(codeSnippet(rng, doc, 40).lines, int(rng, 500, 2500))}`;
    append(g, "custom_message", { customType: "enriched-prompt", content: [{ type: "text", text }], display: false });
    g.newTokens += tokensOf(text.length);
    return;
  }
  if (chance(rng, 0.5)) {
    const code = chance(rng, 0.8) ? 0 : 1;
    const cmd = pick(rng, ["npm run build", "npm run typecheck", "npm run lint", "npm run test:unit"]);
    const content = `Background job "${cmd}" finished with exit code ${code} after ${int(rng, 2, 240)}s.`;
    append(g, "custom_message", {
      customType: "background-job",
      content,
      display: true,
      details: { jobId: hex(rng, 8), exitCode: code },
    });
    g.newTokens += tokensOf(content.length);
  } else {
    const paths: string[] = [];
    for (let i = int(rng, 1, 6); i > 0; i--) paths.push(pickFile(rng, g.corpus, "any", g.topic.pkg).path);
    const text = `Files changed outside the agent:\n${paths.map((p) => `- ${p}`).join("\n")}`;
    append(g, "custom_message", {
      customType: "file-watcher",
      content: [{ type: "text", text }],
      display: false,
      details: { paths },
    });
    g.newTokens += tokensOf(text.length);
  }
}

const PROMPTS = [
  "Why does `{id}` in {path} {problem}? Find the cause and fix it.",
  "Add tests for `{id}` ({path}). Cover the edge cases around {noun}.",
  "Refactor {path}: split `{id}` into smaller functions, no behaviour change.",
  "CI is red on main: the tests for `{id}` fail since the last merge. Can you look?",
  "Where are {noun} handled? I need to change how `{id}` treats them.",
  "Quick question: what does `{id}` return when there are no {noun}?",
  "Rename `{id}` to `{id2}` everywhere and update the docs.",
  "The {ui} overlaps the {ui2} at narrow widths. Take a screenshot, then fix the layout.",
  "Review {path} for {concern} issues and fix what you find.",
  "Update the docs to describe how {noun} work now that `{id}` changed.",
];

const FINAL_PROMPTS = [
  "We're migrating every caller of `{id}` to the new {noun} API. Go through all packages, update each call site, keep the tests green (run the suite after each package and fix what breaks), and take screenshots of the {ui} before and after so I can compare. Don't stop until everything passes.",
  "Big cleanup: `{id}` and `{id2}` do the same thing. Merge them into one, update all references across the repo, fix the failing tests as you go, and update the docs. Work through it package by package.",
  "The nightly run shows flaky failures all over the place related to {noun}. Find every test that touches them, make them deterministic, and fix the underlying bugs in `{id}`. Run the full suite at the end.",
];

function finalAnswer(g: Gen): string {
  const rng = g.rng;
  const lines = [
    "## Summary",
    "",
    fill(rng, pick(rng, PROMPTS), g.topic, g.corpus).replace(/\?.*$/, ".").replace(/^/, "Done: "),
    "",
  ];
  lines.push("### Changes", "");
  for (let i = int(rng, 2, 10); i > 0; i--) {
    const f = pickFile(rng, g.corpus, "code", g.topic.pkg);
    lines.push(
      `- \`${f.path}\`: ${fill(rng, pick(rng, COMMITS), newTopic(rng, g.corpus), g.corpus).replace(/^\w+(\([^)]*\))?: /, "")}`,
    );
  }
  lines.push("", "### Tests", "");
  for (const t of g.testFiles.slice(0, 6)) lines.push(`- \`${t}\` passes`);
  lines.push(`- full suite: ${int(rng, 200, 2400)} passed, ${int(rng, 0, 4)} skipped`);
  if (chance(rng, 0.5)) lines.push("", "### Notes", "", `- ${fill(rng, pick(rng, THOUGHTS), g.topic, g.corpus)}`);
  return lines.join("\n");
}

function finalAssistant(g: Gen): void {
  const content: ContentBlock[] = [];
  if (chance(g.rng, 0.6)) content.push(thinkingBlock(g));
  content.push({ type: "text", text: finalAnswer(g) });
  assistantMessage(g, content, "stop");
}

function callsPerTurn(rng: Rng): number {
  const r = rng();
  return r < 0.55 ? 1 : r < 0.85 ? 2 : 3;
}

/**
 * One exchange of exactly `budget` (>= 2) entries: user prompt, tool turns (with steering messages and notices
 * between them), final assistant text.
 */
function exchange(g: Gen, budget: number, final: boolean): void {
  const rng = g.rng;
  g.topic = newTopic(rng, g.corpus);
  g.testFiles = [];
  g.clock += final ? int(rng, 60_000, 900_000) : int(rng, 20_000, 600_000);
  const template = final ? pick(rng, FINAL_PROMPTS) : pick(rng, PROMPTS);
  const prompt = fill(rng, template, g.topic, g.corpus)
    .replaceAll("{problem}", pick(rng, PROBLEMS))
    .replaceAll("{concern}", pick(rng, CONCERNS));
  userText(g, prompt);
  let r = budget - 2;
  if (r >= 3 && chance(rng, 0.2)) {
    customMessage(g, "enriched");
    r--;
  }
  const pSteer = final ? 0.035 : 0.05;
  const pNotice = final ? 0.015 : 0.02;
  while (r > 0) {
    if (r === 1) {
      customMessage(g, "notice");
      r = 0;
      break;
    }
    const calls = Math.min(callsPerTurn(rng), r - 1);
    toolTurn(g, calls);
    r -= 1 + calls;
    if (r >= 3 && chance(rng, pSteer)) {
      userText(g, pick(rng, STEERING));
      r--;
    } else if (r >= 3 && chance(rng, pNotice)) {
      customMessage(g, "notice");
      r--;
    }
  }
  finalAssistant(g);
}

/**
 * Generates exactly `opts.entries` Pi session entries (no header; see {@link sessionHeader}). The chain is linear:
 * every entry's parentId is the previous entry's id. The last entry is an assistant text message (stopReason
 * "stop"). Roughly 55% (50–62%, by seed) of the entries belong to the final exchange.
 */
export function generateSession(opts: GenerateOptions): SessionEntryLike[] {
  const n = Math.floor(opts.entries);
  if (!(n >= 2)) throw new RangeError(`generateSession: entries must be >= 2 (got ${opts.entries})`);
  const seed = opts.seed ?? 1;
  const rng = mulberry32(seed);
  const corpus = getCorpus();
  const g: Gen = {
    rng,
    corpus,
    log: { rng, corpus, cwd: DEFAULT_CWD },
    out: [],
    ids: new Set(),
    callIds: new Set(),
    lastId: null,
    clock: Date.UTC(2026, 2, 2, 8, 0, 0) + Math.floor(rng() * 86_400_000),
    ctxTokens: int(rng, 9_000, 16_000), // system prompt + tools
    newTokens: 0,
    results: 0,
    bigEvery: 1,
    bigLeft: 0,
    topic: newTopic(rng, corpus),
    testFiles: [],
  };
  if (opts.bigOutputs) {
    g.bigLeft = 3 + Math.floor(n / 2000);
    const expectedResults = Math.max(1, Math.floor(n / 2.4));
    g.bigEvery = Math.max(1, Math.floor(expectedResults / (g.bigLeft + 1)));
  }
  const setup = Math.min(2, n - 2);
  if (setup >= 1) append(g, "model_change", { provider: MODEL.provider, modelId: MODEL.model });
  if (setup >= 2) append(g, "thinking_level_change", { thinkingLevel: "medium" });
  const share = 0.5 + rng() * 0.12;
  let finalBudget = Math.max(2, Math.round(n * share));
  let early = n - setup - finalBudget;
  if (early < 2) {
    finalBudget += early;
    early = 0;
  }
  while (early > 0) {
    if (early < 2) {
      finalBudget += early;
      break;
    }
    const size = Math.min(early, chance(rng, 0.7) ? int(rng, 2, 40) : int(rng, 40, 160));
    const rest = early - size;
    exchange(g, rest === 1 ? size + 1 : size, false);
    early = rest === 1 ? 0 : rest;
    // State-only entries between exchanges (not context): agent_end markers, thinking level changes.
    if (early >= 3 && chance(rng, 0.4)) {
      g.clock += int(rng, 5, 200);
      append(g, "custom", { customType: "agent_end", data: { timestamp: g.clock } });
      early--;
    }
    if (early >= 3 && chance(rng, 0.06)) {
      g.clock += int(rng, 1_000, 60_000);
      append(g, "thinking_level_change", { thinkingLevel: pick(rng, ["low", "medium", "high"]) });
      early--;
    }
  }
  exchange(g, finalBudget, true);
  if (g.out.length !== n) throw new Error(`generateSession: produced ${g.out.length} entries, expected ${n}`);
  return g.out;
}

/**
 * The session with `count` compactions where Pi makes them: between two turns, keeping the branch from the
 * turn just done (the assistant message that called the tools, then their results), or (`at: "runs"`)
 * only after an answer that ends a run, keeping that run from its prompt, so a run of the session can grow
 * on uncompacted. Spread evenly over those points; the chain is relinked through them.
 */
export function withCompactions(
  entries: readonly SessionEntryLike[],
  count: number,
  at: "turns" | "runs" = "turns",
): SessionEntryLike[] {
  const role = (e: SessionEntryLike | undefined) =>
    e?.type === "message" ? (e.message as { role?: string } | undefined)?.role : undefined;
  const calls = (e: SessionEntryLike | undefined) =>
    ((e?.message as { content?: Array<{ type: string }> } | undefined)?.content ?? []).some(
      (b) => b.type === "toolCall",
    );
  const points: Array<{ after: number; keep: number }> = [];
  let turn = -1;
  let prompt = -1;
  entries.forEach((e, i) => {
    if (role(e) === "assistant") turn = i;
    if (role(e) === "user") prompt = i;
    if (at === "turns" && role(e) === "toolResult" && role(entries[i + 1]) === "assistant" && turn >= 0) {
      points.push({ after: i, keep: turn });
    }
    if (at === "runs" && role(e) === "assistant" && !calls(e) && role(entries[i + 1]) === "user" && prompt >= 0) {
      points.push({ after: i, keep: prompt });
    }
  });
  const where = new Map<number, number>();
  const n = Math.min(count, points.length);
  for (let k = 1; k <= n; k++) {
    const p = points[Math.floor((k * points.length) / (n + 1))] as { after: number; keep: number };
    where.set(p.after, p.keep);
  }
  const out: SessionEntryLike[] = [];
  let previous: string | null = null;
  let made = 0;
  entries.forEach((e, i) => {
    const entry = { ...e, parentId: previous };
    out.push(entry);
    previous = entry.id;
    const keep = where.get(i);
    if (keep === undefined) return;
    made++;
    const compaction: SessionEntryLike = {
      type: "compaction",
      id: `c0${made.toString(16).padStart(6, "0")}`,
      parentId: previous,
      timestamp: e.timestamp,
      summary: `## Goal\nThe work so far (compaction ${made}).\n\n## Progress\n${"- a step that was done\n".repeat(40)}`,
      firstKeptEntryId: (entries[keep] as SessionEntryLike).id,
      tokensBefore: 150_000,
      details: { readFiles: [], modifiedFiles: [] },
      fromHook: false,
    };
    out.push(compaction);
    previous = compaction.id;
  });
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// Projection and files

/**
 * What Pi's `buildSessionProjection()` returns as `entries` for an unedited, uncompacted linear branch: message
 * entries → `[entry.message]` (same object), custom_message → a `custom` message, everything else → `[]`.
 */
export function toProjection(entries: SessionEntryLike[]): ProjectedEntryLike[] {
  return entries.map((entry) => {
    if (entry.type === "message") return { sourceEntry: entry, messages: [entry.message] };
    if (entry.type === "custom_message") {
      return {
        sourceEntry: entry,
        messages: [
          {
            role: "custom",
            customType: entry.customType,
            content: entry.content ?? [],
            display: entry.display,
            details: entry.details,
            timestamp: new Date(entry.timestamp).getTime(),
          },
        ],
      };
    }
    return { sourceEntry: entry, messages: [] };
  });
}

/** A version-3 session header. The id defaults to a UUID-shaped value derived from `timestamp`. */
export function sessionHeader(cwd = DEFAULT_CWD, opts: { id?: string; timestamp?: string } = {}): SessionHeaderLike {
  const timestamp = opts.timestamp ?? iso(Date.UTC(2026, 2, 2, 8, 0, 0));
  let id = opts.id;
  if (!id) {
    const ms = new Date(timestamp).getTime().toString(16).padStart(12, "0").slice(-12);
    const rng = mulberry32(Number.parseInt(ms.slice(-8), 16));
    const tail = hex(rng, 19);
    id = `${ms.slice(0, 8)}-${ms.slice(8, 12)}-7${tail.slice(0, 3)}-8${tail.slice(3, 6)}-${tail.slice(6, 18)}`;
  }
  return { type: "session", version: SESSION_VERSION, id, timestamp, cwd };
}

/**
 * Writes a JSONL session file (header line + one line per entry), creating the directory if needed. The
 * header's `generator` (ignored by Pi) says what made the file, so the replay never reports it as a
 * recorded session.
 */
export function writeSessionFile(
  path: string,
  entries: SessionEntryLike[],
  cwd = DEFAULT_CWD,
  generator = "test/kit/generate.ts",
): void {
  mkdirSync(dirname(path), { recursive: true });
  const first = entries[0];
  const header = { ...sessionHeader(cwd, first ? { timestamp: first.timestamp } : {}), generator };
  const fd = openSync(path, "w");
  try {
    let buf: string[] = [JSON.stringify(header)];
    let size = 0;
    for (const e of entries) {
      const line = JSON.stringify(e);
      buf.push(line);
      size += line.length;
      if (size > 4 * 1024 * 1024) {
        writeSync(fd, `${buf.join("\n")}\n`);
        buf = [];
        size = 0;
      }
    }
    if (buf.length > 0) writeSync(fd, `${buf.join("\n")}\n`);
  } finally {
    closeSync(fd);
  }
}
