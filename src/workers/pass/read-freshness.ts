// The disk side of stale reads (core/items/stale-reads.ts), on the pass worker's thread so that Pi's
// thread never waits on the file system. Which reads changed is decided by content: the lines the read
// returned against the file's lines at the same place now. The mtime only spares that comparison for a
// file untouched since the read. mtime alone would call a read stale after `touch`, a checkout of the
// same content or a formatter that changed nothing, and the session keeps no size or mtime from the time
// of the read to compare with; reading every file on every pass would cost more than it tells.
import { type ReadCheck, readMatchesFile } from "../../core/items/stale-reads.ts";
import { type DiskOps, type FileState, fileState, nodeDiskOps, readTextBounded } from "./bounded-read.ts";
import { resolveReadPath } from "./read-path.ts";

/**
 * How much older than the read a file's mtime must be for the content comparison to be skipped: some file
 * systems keep mtimes to the second (or two), so a change just after the read can show an earlier time.
 */
export const MTIME_SLACK_MS = 2_000;

/** Files larger than this are not compared (not known to be stale, so left to the classifier as they are). */
export const MAX_COMPARED_BYTES = 8 * 1024 * 1024;

/**
 * Comparisons already made, by read and file version (mtime and size): a read left in context is checked at
 * every run end, and its file is read again only when it changed since. Bounded; cleared when full.
 */
const compared = new Map<string, boolean>();
const MAX_COMPARED = 10_000;

/** As Pi's `access(F_OK)`: anything the path leads to, following symlinks. */
function exists(path: string, ops: DiskOps): boolean {
  try {
    ops.stat(path);
    return true;
  } catch {
    // swallow-ok: stat failing is the answer: nothing is there.
    return false;
  }
}

/** The entry ids of the reads whose file no longer holds what they returned (or no longer exists). */
export function changedOnDisk(cwd: string, reads: readonly ReadCheck[], ops: DiskOps = nodeDiskOps): Set<string> {
  const changed = new Set<string>();
  const states = new Map<string, FileState>();
  const texts = new Map<string, string | undefined>();
  for (const read of reads) {
    const file = resolveReadPath(read.path, cwd, (p) => exists(p, ops));
    if (file === undefined) continue;
    if (!states.has(file)) states.set(file, fileState(file, ops));
    const state = states.get(file);
    if (state === undefined) continue;
    if ("gone" in state) {
      changed.add(read.entryId);
      continue;
    }
    if (state.mtimeMs < read.readAt - MTIME_SLACK_MS || state.size > MAX_COMPARED_BYTES) continue;
    const key = `${read.entryId}\u0000${file}\u0000${state.mtimeMs}\u0000${state.size}`;
    const known = compared.get(key);
    if (known !== undefined) {
      if (known) changed.add(read.entryId);
      continue;
    }
    if (!texts.has(file)) texts.set(file, readTextBounded(file, MAX_COMPARED_BYTES, ops));
    const text = texts.get(file);
    if (text === undefined) continue;
    const differs = !readMatchesFile(read.body, read.startLine, text, read.toEnd);
    if (compared.size >= MAX_COMPARED) compared.clear();
    compared.set(key, differs);
    if (differs) changed.add(read.entryId);
  }
  return changed;
}
