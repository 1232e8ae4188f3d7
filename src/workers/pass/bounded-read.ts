// Reading a file for the stale-read check without trusting what it claims to be. A path can name a FIFO
// (opening it waits for a writer), a device (`/dev/zero` never ends), a `/proc` file (stat says a regular
// file of 0 bytes, `/proc/self/pagemap` then reads the address space), a huge sparse file or a symlink to
// any of these; and it can be swapped between the stat and the open. So: the real path must lie outside
// the kernel's pseudo file systems, the open never blocks, the opened descriptor must be a regular file,
// and the bytes read stop at a cap whatever the size said. Anything in doubt is "unknown": a read is judged
// stale only when the disk said so plainly.
import * as fs from "node:fs";

/** The calls used, so a test can stand in for the file system (permissions, races, endless files). */
export interface DiskOps {
  stat(path: string): fs.Stats;
  realpath(path: string): string;
  open(path: string, flags: number): number;
  fstat(fd: number): fs.Stats;
  read(fd: number, buffer: Buffer, offset: number, length: number): number;
  close(fd: number): void;
}

export const nodeDiskOps: DiskOps = {
  stat: (p) => fs.statSync(p),
  realpath: (p) => fs.realpathSync.native(p),
  open: (p, flags) => fs.openSync(p, flags),
  fstat: (fd) => fs.fstatSync(fd),
  read: (fd, buffer, offset, length) => fs.readSync(fd, buffer, offset, length, null),
  close: (fd) => fs.closeSync(fd),
};

/** Kernel and device trees: their files are not source files, and reading some never ends. */
const PSEUDO_ROOTS = ["/proc", "/sys", "/dev"];

function underPseudoRoot(real: string): boolean {
  return PSEUDO_ROOTS.some((root) => real === root || real.startsWith(`${root}/`));
}

/** What the disk says about a file: gone, a regular file's version, or nothing to go by. */
export type FileState = { gone: true } | { mtimeMs: number; size: number } | undefined;

/** The file's state; undefined for anything but a regular file outside the pseudo file systems. */
export function fileState(file: string, ops: DiskOps = nodeDiskOps): FileState {
  let stat: fs.Stats;
  let real: string;
  try {
    stat = ops.stat(file);
    real = ops.realpath(file);
  } catch (error) {
    // Gone is a change; a loop, a permission problem or the like tells nothing.
    return (error as NodeJS.ErrnoException).code === "ENOENT" ? { gone: true } : undefined;
  }
  if (!stat.isFile() || underPseudoRoot(real)) return undefined;
  return { mtimeMs: stat.mtimeMs, size: stat.size };
}

const CHUNK = 64 * 1024;
const OPEN_FLAGS = fs.constants.O_RDONLY | (fs.constants.O_NONBLOCK ?? 0) | (fs.constants.O_NOCTTY ?? 0);

/**
 * The file's text, read through one descriptor and at most `maxBytes` of it; undefined when it cannot be
 * opened or read, is not a regular file once opened, or holds more than `maxBytes`.
 */
export function readTextBounded(file: string, maxBytes: number, ops: DiskOps = nodeDiskOps): string | undefined {
  let fd: number;
  try {
    fd = ops.open(file, OPEN_FLAGS);
  } catch {
    // swallow-ok: A file that cannot be opened is not read: the caller treats it as unknown.
    return undefined;
  }
  try {
    const stat = ops.fstat(fd);
    if (!stat.isFile() || stat.size > maxBytes) return undefined;
    // One byte past the cap tells a file that grew (or lied about its size) from one that fits.
    const chunks: Buffer[] = [];
    let length = 0;
    while (length <= maxBytes) {
      const chunk = Buffer.allocUnsafe(Math.min(CHUNK, maxBytes + 1 - length));
      const n = ops.read(fd, chunk, 0, chunk.length);
      if (n <= 0) break;
      chunks.push(n === chunk.length ? chunk : chunk.subarray(0, n));
      length += n;
    }
    if (length > maxBytes) return undefined;
    return Buffer.concat(chunks, length).toString("utf8");
  } catch {
    // swallow-ok: A read that fails midway is unknown, as one that was never made.
    return undefined;
  } finally {
    try {
      ops.close(fd);
    } catch {
      // swallow-ok: Closing a descriptor that read nothing loses nothing.
    }
  }
}
