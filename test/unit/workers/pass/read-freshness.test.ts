import { execFileSync } from "node:child_process";
import {
  mkdtempSync,
  rmSync,
  statSync,
  symlinkSync,
  truncateSync,
  unlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ReadCheck } from "../../../../src/core/items/stale-reads.ts";
import { type DiskOps, nodeDiskOps } from "../../../../src/workers/pass/bounded-read.ts";
import { changedOnDisk, MAX_COMPARED_BYTES, MTIME_SLACK_MS } from "../../../../src/workers/pass/read-freshness.ts";
import { resolveReadPath } from "../../../../src/workers/pass/read-path.ts";

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

describe("changedOnDisk on files that are not what they seem", () => {
  // Read at the epoch: every file looks modified since, so each is compared, not spared by its mtime.
  const now = () => 0;

  it("reads nothing from /proc, even through a symlink to a file that says it is empty", () => {
    symlinkSync("/proc/self/pagemap", join(dir, "a.ts"));
    symlinkSync("/proc/self/status", join(dir, "b.ts"));
    const reads = [readOf("a.ts", "old\n", now()), readOf("b.ts", "old\n", now())];
    expect(changedOnDisk(dir, reads).size).toBe(0);
  });

  it("keeps reads of a device, a FIFO, a directory and a symlink loop", () => {
    symlinkSync("/dev/zero", join(dir, "zero.ts"));
    execFileSync("mkfifo", [join(dir, "fifo.ts")]);
    symlinkSync(join(dir, "loop2.ts"), join(dir, "loop1.ts"));
    symlinkSync(join(dir, "loop1.ts"), join(dir, "loop2.ts"));
    const reads = ["zero.ts", "fifo.ts", "loop1.ts", "."].map((name) => readOf(name, "old\n", now()));
    expect(changedOnDisk(dir, reads).size).toBe(0);
  });

  it("keeps a read of a file larger than the cap (a 2 GB sparse file) without reading it", () => {
    writeFileSync(join(dir, "big.ts"), "");
    truncateSync(join(dir, "big.ts"), 2 * 1024 ** 3);
    expect(changedOnDisk(dir, [readOf("big.ts", "old\n", now())]).size).toBe(0);
  });

  it("stops at the cap when a file says it is small and reads on (a /proc file on another mount)", () => {
    let bytes = 0;
    const endless: DiskOps = {
      ...nodeDiskOps,
      stat: () => statSync(join(dir, "small.ts")),
      realpath: (p) => p,
      open: () => 99,
      fstat: () => statSync(join(dir, "small.ts")),
      read: (_fd, buffer, offset, length) => {
        buffer.fill(0x61, offset, offset + length);
        bytes += length;
        return length;
      },
      close: () => {},
    };
    writeFileSync(join(dir, "small.ts"), "");
    expect(changedOnDisk(dir, [readOf("endless.ts", "old\n", now())], endless).size).toBe(0);
    expect(bytes).toBeLessThanOrEqual(MAX_COMPARED_BYTES + 1);
  });

  it("keeps a read of a file it may not open (mode 000 for a user other than root)", () => {
    write("locked.ts", "new\n", T + 60_000);
    const denied: DiskOps = {
      ...nodeDiskOps,
      open: () => {
        throw Object.assign(new Error("EACCES: permission denied"), { code: "EACCES" });
      },
    };
    expect(changedOnDisk(dir, [readOf("locked.ts", "old\n", T)], denied).size).toBe(0);
    const noStat: DiskOps = {
      ...nodeDiskOps,
      stat: () => {
        throw Object.assign(new Error("EACCES: permission denied"), { code: "EACCES" });
      },
    };
    expect(changedOnDisk(dir, [readOf("locked.ts", "old\n", T)], noStat).size).toBe(0);
  });

  it("finds a file deleted after the read changed", () => {
    write("gone.ts", "old\n", T + 60_000);
    unlinkSync(join(dir, "gone.ts"));
    expect(changedOnDisk(dir, [readOf("gone.ts", "old\n", T)])).toEqual(new Set(["gone.ts"]));
  });
});

describe("changedOnDisk with the paths and offsets Pi's read takes", () => {
  it("keeps untouched reads through a file URL, a no-break space and a fractional offset", () => {
    write("a b.ts", "1\n2\n3\n", T + 60_000);
    const url = readOf(pathToFileURL(join(dir, "a b.ts")).href, "1\n2\n3\n", T, { entryId: "url" });
    const nbsp = readOf("a\u00A0b.ts", "1\n2\n3\n", T, { entryId: "nbsp" });
    const offset = readOf("a b.ts", "2\n3\n", T, { entryId: "offset", startLine: 1 });
    expect(changedOnDisk(dir, [url, nbsp, offset]).size).toBe(0);
    write("a b.ts", "1\nTWO\n3\n", T + 120_000);
    expect(changedOnDisk(dir, [url, nbsp, offset])).toEqual(new Set(["url", "nbsp", "offset"]));
  });
});
