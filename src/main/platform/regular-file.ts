// Reading a file a user names (the settings, the replay's --config and --tools) without ever hanging: a
// FIFO blocks an ordinary open until a writer comes, /dev/zero never ends, and a huge file fills memory.
// The path is opened O_NONBLOCK (a FIFO with no writer opens at once), checked with fstat to be a
// regular file under a cap, and read to that cap. `--write` names the same kinds with fileKind.
import { constants } from "node:fs";
import { type FileHandle, open } from "node:fs/promises";

export type BoundedRead =
  | { kind: "missing" }
  | { kind: "text"; text: string; mode: number; uid: number; gid: number }
  /** A directory, FIFO, device or socket: `what` names it ("a FIFO (named pipe)"). */
  | { kind: "not-file"; what: string; directory: boolean }
  /** Over the cap: its size when fstat told it, else it only grew past the cap while being read. */
  | { kind: "too-big"; bytes?: number }
  | { kind: "error"; code: string };

export const errorCode = (error: unknown): string => (error as NodeJS.ErrnoException)?.code ?? String(error);

/** What a path that is not a regular file is, in words. */
export function fileKind(info: {
  isDirectory(): boolean;
  isFIFO(): boolean;
  isCharacterDevice(): boolean;
  isBlockDevice(): boolean;
  isSocket(): boolean;
}): string {
  if (info.isDirectory()) return "a directory";
  if (info.isFIFO()) return "a FIFO (named pipe)";
  if (info.isCharacterDevice()) return "a character device";
  if (info.isBlockDevice()) return "a block device";
  if (info.isSocket()) return "a socket";
  return "not a regular file";
}

const CHUNK = 64 * 1024;

/** The file's text when it is a regular file of at most `maxBytes`; otherwise what it is instead. */
export async function readBounded(path: string, maxBytes: number): Promise<BoundedRead> {
  let handle: FileHandle;
  try {
    // O_NOCTTY: a terminal named here must not become the process's controlling terminal.
    handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK | (constants.O_NOCTTY ?? 0));
  } catch (error) {
    const code = errorCode(error);
    return code === "ENOENT" ? { kind: "missing" } : { kind: "error", code };
  }
  try {
    const info = await handle.stat();
    if (!info.isFile()) return { kind: "not-file", what: fileKind(info), directory: info.isDirectory() };
    if (info.size > maxBytes) return { kind: "too-big", bytes: info.size };
    // The size can be wrong (a file growing, or one under /proc): the read itself stops past the cap.
    const parts: Buffer[] = [];
    let total = 0;
    while (total <= maxBytes) {
      const buffer = Buffer.alloc(Math.min(CHUNK, maxBytes + 1 - total));
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, null);
      if (bytesRead === 0) break;
      parts.push(buffer.subarray(0, bytesRead));
      total += bytesRead;
    }
    if (total > maxBytes) return { kind: "too-big" };
    const text = Buffer.concat(parts, total).toString("utf8");
    return { kind: "text", text, mode: info.mode & 0o7777, uid: info.uid, gid: info.gid };
  } catch (error) {
    return { kind: "error", code: errorCode(error) };
  } finally {
    // swallow-ok: the text is read; a descriptor that fails to close loses nothing of it.
    await handle.close().catch(() => undefined);
  }
}

/** "1 MiB", "16 MiB": a cap in words. */
export const mebibytes = (bytes: number): string => `${bytes / 1024 / 1024} MiB`;

/** Why a read gave no text, in words after the path: "it is a FIFO (named pipe), not a regular file". */
export function readProblem(read: Exclude<BoundedRead, { kind: "text" }>, maxBytes: number, what: string): string {
  switch (read.kind) {
    case "missing":
      return "no such file";
    case "not-file":
      return `it is ${read.what}, not a regular file`;
    case "too-big":
      return `it ${read.bytes === undefined ? "has" : `is ${read.bytes} bytes,`} more than the ${mebibytes(maxBytes)} ${what} may have`;
    case "error":
      return `cannot read it (${read.code})`;
  }
}
