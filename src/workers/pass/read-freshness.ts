// The disk side of stale reads (core/items/stale-reads.ts), on the pass worker's thread so that Pi's
// thread never waits on the file system. Which reads changed is decided by content: the lines the read
// returned against the file's lines at the same place now. The mtime only spares that comparison for a
// file untouched since the read. mtime alone would call a read stale after `touch`, a checkout of the
// same content or a formatter that changed nothing, and the session keeps no size or mtime from the time
// of the read to compare with; reading every file on every pass would cost more than it tells.
import { readFileSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { isAbsolute, resolve } from "node:path";
import { type ReadCheck, readMatchesFile } from "../../core/items/stale-reads.ts";

/**
 * How much older than the read a file's mtime must be for the content comparison to be skipped: some file
 * systems keep mtimes to the second (or two), so a change just after the read can show an earlier time.
 */
export const MTIME_SLACK_MS = 2_000;

/** Files larger than this are not compared (not known to be stale, so left to the classifier as they are). */
export const MAX_COMPARED_BYTES = 8 * 1024 * 1024;

/** The read's path as Pi's read tool resolves it: `@` prefix dropped, `~` expanded, relative to `cwd`. */
export function resolveReadPath(path: string, cwd: string): string {
  let p = path.startsWith("@") ? path.slice(1) : path;
  if (p === "~") p = homedir();
  else if (p.startsWith("~/")) p = `${homedir()}${p.slice(1)}`;
  return isAbsolute(p) ? p : resolve(cwd, p);
}

type FileState = { gone: true } | { mtimeMs: number; size: number } | undefined;

/**
 * Comparisons already made, by read and file version (mtime and size): a read left in context is checked at
 * every run end, and its file is read again only when it changed since. Bounded; cleared when full.
 */
const compared = new Map<string, boolean>();
const MAX_COMPARED = 10_000;

function stateOf(file: string): FileState {
  try {
    const stat = statSync(file);
    return stat.isFile() ? { mtimeMs: stat.mtimeMs, size: stat.size } : undefined;
  } catch (error) {
    // Gone is a change; a permission problem or the like tells nothing.
    return (error as NodeJS.ErrnoException).code === "ENOENT" ? { gone: true } : undefined;
  }
}

/** The entry ids of the reads whose file no longer holds what they returned (or no longer exists). */
export function changedOnDisk(cwd: string, reads: readonly ReadCheck[]): Set<string> {
  const changed = new Set<string>();
  const states = new Map<string, FileState>();
  const texts = new Map<string, string | undefined>();
  for (const read of reads) {
    const file = resolveReadPath(read.path, cwd);
    if (!states.has(file)) states.set(file, stateOf(file));
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
    if (!texts.has(file)) {
      let text: string | undefined;
      try {
        text = readFileSync(file, "utf8");
      } catch {
        text = undefined;
      }
      texts.set(file, text);
    }
    const text = texts.get(file);
    if (text === undefined) continue;
    const differs = !readMatchesFile(read.body, read.startLine, text, read.toEnd);
    if (compared.size >= MAX_COMPARED) compared.clear();
    compared.set(key, differs);
    if (differs) changed.add(read.entryId);
  }
  return changed;
}
