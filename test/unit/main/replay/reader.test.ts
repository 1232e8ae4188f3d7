// The session reader on damaged files, checked against what Pi's own SessionManager does with the same
// bytes: a v1 header line holding two objects, a header and an entry on one line, a skipped line that
// breaks the parent chain, and a file with nothing to replay.
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SessionManager } from "@earendil-works/pi-coding-agent";
import { beforeAll, describe, expect, it } from "vitest";
import { parseSessionText, SessionReadError, splitObjects } from "../../../../src/main/replay/reader.ts";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "cg-reader-"));
});

/** Pi's SessionManager on the same text: its branch ids, or the error it throws. */
async function piOpens(name: string, text: string): Promise<string[] | Error> {
  const path = join(dir, name);
  await writeFile(path, text);
  try {
    return SessionManager.open(path, dir)
      .getBranch()
      .map((e) => e.id);
  } catch (error) {
    return error as Error;
  }
}

const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s)).toISOString();
const user = (text: string) => ({ role: "user", content: text, timestamp: 1 });
const answer = (text: string) => ({
  role: "assistant",
  content: [{ type: "text", text }],
  stopReason: "stop",
  timestamp: 2,
});

const V1_HEADER = { type: "session", id: "v1", timestamp: at(0), cwd: "/p" };
const v1 = (s: number, message: unknown) => JSON.stringify({ type: "message", timestamp: at(s), message });
const V3_HEADER = JSON.stringify({ type: "session", version: 3, id: "v3", timestamp: at(0), cwd: "/p" });
const v3 = (id: string, parentId: string | null, s: number, message: unknown) =>
  JSON.stringify({ type: "message", id, parentId, timestamp: at(s), message });

describe("splitObjects", () => {
  it("splits objects written back to back, braces inside strings included, and nothing else", () => {
    expect(splitObjects('{"a":"}{"}{"b":1}')).toEqual([{ a: "}{" }, { b: 1 }]);
    expect(splitObjects('{"a":1} {"b":"\\"}"}')).toEqual([{ a: 1 }, { b: '"}' }]);
    expect(splitObjects('{"a":1}')).toBeUndefined();
    expect(splitObjects('{"a":1}x{"b":2}')).toBeUndefined();
    expect(splitObjects('{"a":')).toBeUndefined();
  });
});

describe("parseSessionText on damaged files", () => {
  it("a v1 file whose header line holds two objects is replayed as v1, and says Pi would not open it", async () => {
    const lines = [
      `${JSON.stringify(V1_HEADER)}${v1(1, user("first question"))}`,
      v1(2, answer("first answer")),
      v1(3, user("second question")),
      v1(4, answer("second answer")),
    ];
    const text = `${lines.join("\n")}\n`;
    const file = parseSessionText(text, "v1.jsonl");
    expect(file.version).toBe(1);
    expect(file.branch.filter((e) => e.type === "message")).toHaveLength(4);
    expect(file.problems.map((p) => p.message)).toEqual([
      expect.stringMatching(/^Pi would not open this file: its session header is on line 1 together with an entry/),
      expect.stringMatching(/^line 1 holds 2 JSON objects with no line break between them \(the session header/),
    ]);
    expect(await piOpens("v1.jsonl", text)).toBeInstanceOf(Error);
  });

  it("a v3 header and an entry on one line: replayed, and the problems say Pi refuses the file", async () => {
    const text = `${V3_HEADER}${v3("a", null, 1, user("q"))}\n${v3("b", "a", 2, answer("x"))}\n`;
    const file = parseSessionText(text, "joined.jsonl");
    expect(file.branch.map((e) => e.id)).toEqual(["a", "b"]);
    expect(file.problems[0]?.message).toMatch(/^Pi would not open this file/);
    expect(String(await piOpens("joined.jsonl", text))).toMatch(/not a valid pi session/);
  });

  it("after a skipped line the branch starts where Pi's does, and the problem says what is left out", async () => {
    const lines = [
      V3_HEADER,
      v3("a", null, 1, user("first")),
      v3("b", "a", 2, answer("one")),
      '{"type":"message","id":"c","parentId":"b",', // damaged
      v3("d", "c", 4, answer("two")),
      v3("e", "d", 5, user("third")),
      v3("f", "e", 6, answer("three")),
    ];
    const text = `${lines.join("\n")}\n`;
    const file = parseSessionText(text, "broken.jsonl");
    const pi = await piOpens("broken.jsonl", text);
    expect(file.branch.map((e) => e.id)).toEqual(pi);
    expect(pi).toEqual(["d", "e", "f"]);
    expect(file.problems.map((p) => p.message)).toEqual([
      expect.stringMatching(/^line 4 is not valid JSON/),
      'line 5: its parent entry "c" is missing (a skipped line?); Pi resumes the branch from here, so 2 entries of the file are not replayed',
    ]);
  });

  it("nothing replayable is an error that says why, not an empty success", () => {
    // v1 entries (no ids) under a header that claims v3: Pi cannot link any of them.
    const lines = [V3_HEADER, v1(1, user("q")), v1(2, answer("a"))];
    expect(() => parseSessionText(`${lines.join("\n")}\n`, "ids.jsonl")).toThrow(SessionReadError);
    expect(() => parseSessionText(`${lines.join("\n")}\n`, "ids.jsonl")).toThrow(
      /nothing to replay: the branch Pi would resume holds no message \(2 problem lines; the first: line 2 has no entry id/,
    );
  });

  it("without a header, entries without ids are read as v1", () => {
    const file = parseSessionText(`${v1(1, user("q"))}\n${v1(2, answer("a"))}\n`, "bare.jsonl");
    expect(file.version).toBe(1);
    expect(file.branch).toHaveLength(2);
    expect(file.problems[0]?.message).toMatch(/no session header, so Pi would not open it; replayed as format v1/);
  });
});
