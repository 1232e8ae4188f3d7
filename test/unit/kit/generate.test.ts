import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { crc32 } from "node:zlib";
import { SessionManager } from "@earendil-works/pi-coding-agent";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getCorpus, grepOutput } from "../../kit/corpus.ts";
import {
  generateOutput,
  generateSession,
  makeJpeg,
  makePng,
  mulberry32,
  type SessionEntryLike,
  sessionHeader,
  toProjection,
  writeSessionFile,
} from "../../kit/generate.ts";

// Loose shapes for reading generated messages.
interface Block {
  type: string;
  text?: string;
  thinking?: string;
  thinkingSignature?: string;
  id?: string;
  name?: string;
  arguments?: Record<string, unknown>;
  data?: string;
  mimeType?: string;
}
interface Msg {
  role: string;
  content: string | Block[];
  toolCallId?: string;
  toolName?: string;
  isError?: boolean;
  stopReason?: string;
  details?: Record<string, unknown>;
}

const msgOf = (e: SessionEntryLike): Msg | undefined => (e.type === "message" ? (e.message as Msg) : undefined);
const blocks = (m: Msg): Block[] => (typeof m.content === "string" ? [] : m.content);

/** Minimal image header parser: PNG (signature + IHDR) and JPEG (markers up to SOFn). */
function imageSize(buf: Buffer): { mimeType: string; width: number; height: number } {
  const sig = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  if (buf.subarray(0, 8).equals(sig)) {
    if (buf.readUInt32BE(8) !== 13 || buf.toString("latin1", 12, 16) !== "IHDR") throw new Error("PNG without IHDR");
    if (crc32(buf.subarray(12, 29)) !== buf.readUInt32BE(29)) throw new Error("bad IHDR CRC");
    return { mimeType: "image/png", width: buf.readUInt32BE(16), height: buf.readUInt32BE(20) };
  }
  if (buf[0] === 0xff && buf[1] === 0xd8) {
    let o = 2;
    let sawExif = false;
    while (o + 4 <= buf.length) {
      if (buf[o] !== 0xff) throw new Error(`JPEG: expected marker at ${o}`);
      const marker = buf[o + 1]!;
      const len = buf.readUInt16BE(o + 2);
      if (marker === 0xe1 && buf.toString("latin1", o + 4, o + 10) === "Exif\0\0") sawExif = true;
      if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
        if (!sawExif) throw new Error("JPEG without APP1 Exif before SOF");
        return { mimeType: "image/jpeg", height: buf.readUInt16BE(o + 5), width: buf.readUInt16BE(o + 7) };
      }
      o += 2 + len;
    }
    throw new Error("JPEG without SOF");
  }
  throw new Error("not a PNG or JPEG");
}

const GREP_LINE = /^(?:--|[\w@./-]+:\d+:.*|[\w@./-]+-\d+-.*)$/;

function checkGrepText(text: string): void {
  const lines = text.split("\n");
  expect(lines.length).toBeGreaterThan(0);
  let sawMatch = false;
  for (const line of lines) {
    if (!GREP_LINE.test(line)) throw new Error(`not an rg line: ${JSON.stringify(line.slice(0, 200))}`);
    if (/^[\w@./-]+:\d+:/.test(line)) sawMatch = true;
  }
  expect(sawMatch).toBe(true);
}

let s200: SessionEntryLike[];
let s2000: SessionEntryLike[];
let tmp: string;

beforeAll(() => {
  s200 = generateSession({ entries: 200, seed: 11 });
  s2000 = generateSession({ entries: 2000, seed: 7, bigOutputs: true });
  tmp = mkdtempSync(join(tmpdir(), "ctxguard-gen-"));
});

afterAll(() => {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

describe("corpus", () => {
  it("loads real text from the Pi packages, bounded and sorted", () => {
    const c = getCorpus();
    expect(c.root).not.toBe("(builtin)");
    expect(c.bytes).toBeLessThanOrEqual(8 * 1024 * 1024);
    expect(c.files.length).toBeGreaterThan(100);
    const paths = c.files.map((f) => f.path);
    expect([...paths].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))).toEqual(paths);
    expect(paths.some((p) => p.startsWith("pi-coding-agent/docs/"))).toBe(true);
    expect(c.terms.length).toBeGreaterThan(10);
  });

  it("formats grep output like rg -n -C1", () => {
    const res = grepOutput(mulberry32(3), 20_000, { terms: ["sessionManager"], context: 1 });
    expect(res.matches).toBeGreaterThan(0);
    checkGrepText(res.text);
    expect(res.text).toContain("--");
    // Every match line really contains the term, and its line number points at that line in the file.
    const c = getCorpus();
    for (const line of res.text.split("\n")) {
      const m = /^([\w@./-]+):(\d+):(.*)$/.exec(line);
      if (!m) continue;
      const file = c.files[c.indexOf.get(m[1]!)!]!;
      expect(file.lines[Number(m[2]) - 1]).toBe(m[3]);
      expect(m[3]).toContain("sessionManager");
    }
  });
});

describe("generateSession", () => {
  it("is deterministic for a seed and differs between seeds", () => {
    const again = generateSession({ entries: 200, seed: 11 });
    expect(JSON.stringify(again)).toBe(JSON.stringify(s200));
    const other = generateSession({ entries: 200, seed: 12 });
    expect(JSON.stringify(other)).not.toBe(JSON.stringify(s200));
  });

  it("returns exactly the requested number of entries", () => {
    expect(s200).toHaveLength(200);
    expect(s2000).toHaveLength(2000);
    for (const n of [2, 3, 4, 5, 9, 31]) {
      const s = generateSession({ entries: n, seed: n });
      expect(s).toHaveLength(n);
      const last = msgOf(s[s.length - 1]!);
      expect(last?.role).toBe("assistant");
    }
    expect(() => generateSession({ entries: 1 })).toThrow(RangeError);
  });

  it.each([
    ["200", () => s200],
    ["2000", () => s2000],
  ])("has unique ids, a valid parent chain and ordered timestamps (%s)", (_, get) => {
    const s = get();
    const ids = new Set<string>();
    let prevTime = 0;
    s.forEach((e, i) => {
      expect(e.id).toMatch(/^[0-9a-f]{8}$/);
      expect(ids.has(e.id)).toBe(false);
      ids.add(e.id);
      expect(e.parentId).toBe(i === 0 ? null : s[i - 1]!.id);
      expect(new Date(e.timestamp).toISOString()).toBe(e.timestamp);
      const t = Date.parse(e.timestamp);
      expect(t).toBeGreaterThanOrEqual(prevTime);
      prevTime = t;
    });
    expect(s[0]!.type).toBe("model_change");
    expect(s[1]!.type).toBe("thinking_level_change");
  });

  it.each([
    ["200", () => s200],
    ["2000", () => s2000],
  ])("pairs every tool call with exactly one result right after its assistant message (%s)", (_, get) => {
    const s = get();
    const callIds = new Set<string>();
    let i = 0;
    let toolCalls = 0;
    while (i < s.length) {
      const m = msgOf(s[i]!);
      expect(m?.role).not.toBe("toolResult"); // results are only consumed right after their assistant message
      i++;
      if (m?.role !== "assistant") continue;
      const calls = blocks(m).filter((b) => b.type === "toolCall");
      expect(m.stopReason).toBe(calls.length > 0 ? "toolUse" : "stop");
      for (const call of calls) {
        expect(callIds.has(call.id!)).toBe(false);
        callIds.add(call.id!);
        const r = msgOf(s[i]!);
        expect(r?.role).toBe("toolResult");
        expect(r?.toolCallId).toBe(call.id);
        expect(r?.toolName).toBe(call.name);
        expect(typeof r?.isError).toBe("boolean");
        i++;
        toolCalls++;
      }
    }
    const last = msgOf(s[s.length - 1]!)!;
    expect(last.role).toBe("assistant");
    expect(last.stopReason).toBe("stop");
    expect(blocks(last).some((b) => b.type === "text" && (b.text?.length ?? 0) > 0)).toBe(true);
    expect(toolCalls).toBeGreaterThan(s.length / 4);
  });

  it("has a long final run, thinking blocks, steering messages, notices and realistic outputs", () => {
    const s = s2000;
    // The final exchange starts at the last user message that is followed by many tool turns.
    let finalStart = -1;
    let calls = 0;
    for (let i = s.length - 1; i >= 0; i--) {
      const m = msgOf(s[i]!);
      if (m?.role === "toolResult") calls++;
      if (m?.role === "user" && i > 0 && calls > 0) {
        const prev = msgOf(s[i - 1]!);
        // a steering message follows a tool result; the run's prompt follows the previous exchange's answer
        if (prev?.role === "assistant" || s[i - 1]!.type !== "message") {
          finalStart = i;
          break;
        }
      }
    }
    expect(finalStart).toBeGreaterThan(0);
    expect(s.length - finalStart).toBeGreaterThan(800);
    expect(calls).toBeGreaterThan(300);

    const all = s.map(msgOf).filter((m): m is Msg => m !== undefined);
    const thinking = all.flatMap((m) => blocks(m).filter((b) => b.type === "thinking"));
    expect(thinking.length).toBeGreaterThan(100);
    for (const t of thinking) expect(t.thinkingSignature).toMatch(/^[A-Za-z0-9+/]+=*$/);
    const steering = s.filter((e, i) => msgOf(e)?.role === "user" && i > 0 && msgOf(s[i - 1]!)?.role === "toolResult");
    expect(steering.length).toBeGreaterThan(3);
    expect(s.some((e) => e.type === "custom_message")).toBe(true);

    const results = all.filter((m) => m.role === "toolResult");
    const textLen = (m: Msg) => blocks(m).reduce((n, b) => n + (b.text?.length ?? 0), 0);
    expect(results.some((m) => m.isError && textLen(m) > 5000)).toBe(true); // failing test logs
    expect(results.some((m) => m.toolName === "read" && textLen(m) > 10_000)).toBe(true);
    expect(results.filter((m) => textLen(m) >= 400 && textLen(m) <= 4000).length).toBeGreaterThan(100);
    // bigOutputs: a few 50 KB outputs with Pi's truncation notice
    const truncated = results.filter((m) => blocks(m).some((b) => b.text?.includes("(50.0KB limit). Full output:")));
    expect(truncated.length).toBeGreaterThanOrEqual(3);
  });

  it("produces rg-style grep outputs", () => {
    let checked = 0;
    const s = s2000;
    for (let i = 0; i < s.length; i++) {
      const m = msgOf(s[i]!);
      if (m?.role !== "assistant") continue;
      for (const call of blocks(m)) {
        if (call.type !== "toolCall" || call.name !== "bash") continue;
        const command = String(call.arguments?.command);
        if (!command.startsWith("rg -n")) continue;
        const result = s
          .slice(i + 1, i + 4)
          .map(msgOf)
          .find((r) => r?.toolCallId === call.id)!;
        if (result.isError) continue; // no matches
        let text = blocks(result)[0]!.text!;
        text = text.replace(/\n\n\[Showing lines [^\]]*\]$/, "").replace(/\n$/, "");
        checkGrepText(text);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(50);
  });

  it("embeds screenshots with parseable PNG/JPEG headers matching the declared size", () => {
    const seen = new Set<string>();
    for (const e of s2000) {
      const m = msgOf(e);
      if (m?.role !== "toolResult") continue;
      for (const b of blocks(m)) {
        if (b.type !== "image") continue;
        const size = imageSize(Buffer.from(b.data!, "base64"));
        expect(size.mimeType).toBe(b.mimeType);
        seen.add(size.mimeType);
        if (m.toolName === "browser_screenshot") {
          expect(size.width).toBe(m.details?.width);
          expect(size.height).toBe(m.details?.height);
        } else {
          expect(size.width).toBeGreaterThan(0);
          expect(size.height).toBeGreaterThan(0);
        }
      }
    }
    expect(seen.size).toBe(2);
    const png = imageSize(Buffer.from(makePng(mulberry32(1), 1280, 800, 4096)));
    expect(png).toEqual({ mimeType: "image/png", width: 1280, height: 800 });
    const jpeg = imageSize(Buffer.from(makeJpeg(mulberry32(1), 1920, 1080, 4096)));
    expect(jpeg).toEqual({ mimeType: "image/jpeg", width: 1920, height: 1080 });
  });
});

describe("generateOutput", () => {
  it.each([
    ["grep", 50 * 1024],
    ["grep", 5 * 1024 * 1024],
    ["log", 50 * 1024],
    ["log", 5 * 1024 * 1024],
  ] as const)("%s output of %d bytes is within 2%%", (kind, bytes) => {
    const out = generateOutput(kind, bytes, 5);
    const size = Buffer.byteLength(out);
    expect(size).toBeGreaterThanOrEqual(bytes * 0.98);
    expect(size).toBeLessThanOrEqual(bytes * 1.02);
    if (kind === "grep" && bytes < 1e6) checkGrepText(out);
    if (kind === "log") {
      expect(out).toMatch(/ FAIL | ● /);
      expect(out).toMatch(/Tests:? /);
    }
  });

  it("is deterministic", () => {
    expect(generateOutput("log", 100_000, 9)).toBe(generateOutput("log", 100_000, 9));
    expect(generateOutput("grep", 100_000, 9)).toBe(generateOutput("grep", 100_000, 9));
    expect(generateOutput("grep", 100_000, 9)).not.toBe(generateOutput("grep", 100_000, 10));
  });
});

describe("projection and files", () => {
  it("toProjection mirrors Pi's projection shapes", () => {
    const p = toProjection(s200);
    expect(p).toHaveLength(s200.length);
    p.forEach((pe, i) => {
      const e = s200[i]!;
      expect(pe.sourceEntry).toBe(e);
      if (e.type === "message") {
        expect(pe.messages).toHaveLength(1);
        expect(pe.messages[0]).toBe(e.message);
      } else if (e.type === "custom_message") {
        expect(pe.messages).toEqual([
          {
            role: "custom",
            customType: e.customType,
            content: e.content,
            display: e.display,
            details: e.details,
            timestamp: Date.parse(e.timestamp),
          },
        ]);
      } else {
        expect(pe.messages).toEqual([]);
      }
    });
  });

  it("round-trips through Pi's SessionManager", () => {
    const path = join(tmp, "session.jsonl");
    writeSessionFile(path, s2000, "/home/dev/project");
    const firstLine = JSON.parse(readFileSync(path, "utf8").split("\n", 1)[0]!);
    expect(firstLine).toMatchObject({ type: "session", version: 3, cwd: "/home/dev/project" });
    expect(firstLine.id).toBe(sessionHeader("/home/dev/project", { timestamp: s2000[0]!.timestamp }).id);

    const manager = SessionManager.open(path);
    expect(manager.getEntryCount()).toBe(s2000.length);
    expect(manager.getLeafId()).toBe(s2000[s2000.length - 1]!.id);
    const real = manager.buildSessionProjection();
    const ours = toProjection(s2000);
    expect(real.entries).toHaveLength(ours.length);
    expect(real.entries.map((e) => e.messages.length)).toEqual(ours.map((e) => e.messages.length));
    expect(real.entries.map((e) => e.sourceEntry.id)).toEqual(ours.map((e) => e.sourceEntry.id));
    expect(real.messages).toHaveLength(ours.reduce((n, e) => n + e.messages.length, 0));
    expect(real.messages).toEqual(ours.flatMap((e) => e.messages));
    expect(real.model).toEqual({ provider: "anthropic", modelId: "claude-sonnet-4-5" });
  });
});
