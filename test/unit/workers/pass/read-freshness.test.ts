import { mkdtempSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ReadCheck } from "../../../../src/core/items/stale-reads.ts";
import { changedOnDisk, MTIME_SLACK_MS, resolveReadPath } from "../../../../src/workers/pass/read-freshness.ts";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "cg-fresh-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** A read of `name`, relative to the test folder, that returned `body` at `readAt`. */
function readOf(name: string, body: string, readAt: number, extra: Partial<ReadCheck> = {}): ReadCheck {
  return { entryId: name, path: name, startLine: 0, body, toEnd: true, readAt, ...extra };
}

function write(name: string, text: string, mtimeMs: number): void {
  const file = join(dir, name);
  writeFileSync(file, text);
  utimesSync(file, mtimeMs / 1000, mtimeMs / 1000);
}

const T = 1_700_000_000_000;

describe("resolveReadPath", () => {
  it("resolves as Pi's read does: relative to cwd, @ dropped, ~ expanded", () => {
    expect(resolveReadPath("src/a.ts", "/w")).toBe("/w/src/a.ts");
    expect(resolveReadPath("@src/a.ts", "/w")).toBe("/w/src/a.ts");
    expect(resolveReadPath("/abs/a.ts", "/w")).toBe("/abs/a.ts");
    expect(resolveReadPath("~/a.ts", "/w")).toBe(join(homedir(), "a.ts"));
  });
});

describe("changedOnDisk", () => {
  it("finds a file whose content changed after the read", () => {
    write("a.ts", "new\n", T + 60_000);
    expect(changedOnDisk(dir, [readOf("a.ts", "old\n", T)])).toEqual(new Set(["a.ts"]));
  });

  it("finds a file deleted after the read", () => {
    expect(changedOnDisk(dir, [readOf("gone.ts", "old\n", T)])).toEqual(new Set(["gone.ts"]));
  });

  it("keeps a read whose file was touched but holds the same lines", () => {
    write("a.ts", "same\n", T + 60_000);
    expect(changedOnDisk(dir, [readOf("a.ts", "same\n", T)]).size).toBe(0);
  });

  it("does not read a file whose mtime is well before the read (it is not compared)", () => {
    write("a.ts", "different now\n", T - MTIME_SLACK_MS - 1000);
    expect(changedOnDisk(dir, [readOf("a.ts", "old\n", T)]).size).toBe(0);
  });

  it("compares within the slack, for file systems that keep mtimes to the second", () => {
    write("a.ts", "new\n", T - 500);
    expect(changedOnDisk(dir, [readOf("a.ts", "old\n", T)])).toEqual(new Set(["a.ts"]));
  });

  it("compares only the read's range of a partial read", () => {
    write("a.ts", "1\n2\n3\nfour\n", T + 60_000);
    const same = readOf("a.ts", "2\n3", T, { entryId: "same", startLine: 1, toEnd: false });
    const moved = readOf("a.ts", "3\n4", T, { entryId: "moved", startLine: 2, toEnd: false });
    expect(changedOnDisk(dir, [same, moved])).toEqual(new Set(["moved"]));
  });

  it("compares again once the file changed again (a checkout back to what was read)", () => {
    write("a.ts", "new\n", T + 60_000);
    expect(changedOnDisk(dir, [readOf("a.ts", "old\n", T)])).toEqual(new Set(["a.ts"]));
    write("a.ts", "old\n", T + 120_000);
    expect(changedOnDisk(dir, [readOf("a.ts", "old\n", T)]).size).toBe(0);
  });

  it("tells nothing about a path that is not a file", () => {
    expect(changedOnDisk(dir, [readOf(".", "x", T)]).size).toBe(0);
    expect(statSync(dir).isDirectory()).toBe(true);
  });
});
