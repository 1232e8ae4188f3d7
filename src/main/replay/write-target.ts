// Where `--write` puts the guarded session. The target is checked before the replay starts (a replay can
// take minutes, and a bad target found after it loses them), and the file is written beside it under a
// temporary name and renamed onto it, so a failed write (a full disk, a file size limit) leaves the
// target as it was and never a file cut mid-line.
import { randomBytes } from "node:crypto";
import type { Stats } from "node:fs";
import { constants } from "node:fs";
import { access, open, realpath, rename, stat, unlink } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import { errorCode, fileKind } from "../platform/regular-file.ts";

class WriteTargetError extends Error {
  override name = "WriteTargetError";
}

export interface WriteTarget {
  /** The file to replace: the target with its symlinks resolved. */
  path: string;
  /** Permission bits of the file it replaces (a new file gets the usual ones). */
  mode: number;
}

/**
 * Checks a `--write` target against the files being replayed: refuses a folder, a device or pipe, the
 * input itself (the same file by device and inode, so a symlink or hard link to it too) and a folder
 * that cannot take a new file.
 */
export async function checkWriteTarget(target: string, inputs: readonly string[]): Promise<WriteTarget> {
  const wanted = resolve(target);
  let info: Stats | undefined;
  try {
    info = await stat(wanted);
  } catch (error) {
    if (errorCode(error) !== "ENOENT")
      throw new WriteTargetError(`--write ${target}: cannot use it (${errorCode(error)})`);
  }
  if (info?.isDirectory()) throw new WriteTargetError(`--write ${target}: is a folder; give the name of a file`);
  if (info && !info.isFile()) {
    throw new WriteTargetError(`--write ${target}: is not a regular file (${fileKind(info)}); give a file name`);
  }
  if (info) {
    for (const input of inputs) {
      // swallow-ok: an input that is not there cannot be the target.
      const other = await stat(input).catch(() => undefined);
      if (other && other.dev === info.dev && other.ino === info.ino) {
        throw new WriteTargetError(
          `--write ${target}: is the session being replayed${input === wanted ? "" : ` (${input})`}; writing there would replace it, so give another file name`,
        );
      }
    }
    try {
      await access(wanted, constants.W_OK);
    } catch (error) {
      throw new WriteTargetError(`--write ${target}: not writable (${errorCode(error)})`);
    }
  }
  const path = info ? await realpath(wanted) : wanted;
  // The folder must take the temporary file that is renamed onto the target.
  const probe = tempName(path);
  try {
    await (await open(probe, "wx")).close();
    await unlink(probe);
  } catch (error) {
    throw new WriteTargetError(`--write ${target}: cannot create a file in ${dirname(path)} (${errorCode(error)})`);
  }
  return { path, mode: info ? info.mode & 0o777 : 0o644 };
}

function tempName(path: string): string {
  return join(dirname(path), `.${basename(path)}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`);
}

const CHUNK = 1 << 20;

/**
 * Writes the lines (each ends with a newline) to a temporary file beside the target and renames it onto
 * the target. On any failure the temporary file is removed and the target is untouched.
 */
export async function writeLinesAtomically(target: WriteTarget, lines: Iterable<string>): Promise<void> {
  const temp = tempName(target.path);
  const file = await open(temp, "wx", target.mode);
  let closed = false;
  try {
    const flush = async (text: string) => {
      const bytes = Buffer.from(text);
      for (let at = 0; at < bytes.length; ) at += (await file.write(bytes, at, bytes.length - at)).bytesWritten;
    };
    let chunk = "";
    for (const line of lines) {
      chunk += `${line}\n`;
      if (chunk.length >= CHUNK) {
        await flush(chunk);
        chunk = "";
      }
    }
    if (chunk !== "") await flush(chunk);
    await file.sync();
    closed = true;
    await file.close();
    await rename(temp, target.path);
  } catch (error) {
    // swallow-ok: cleanup after the error above, which is what is reported.
    if (!closed) await file.close().catch(() => {});
    await unlink(temp).catch(() => {});
    throw error;
  }
}
