// `--write`: the guarded session as a file Pi opens. The branch the replay followed (entries already
// migrated to the current format by Pi's SessionManager), with the guard's context_edit entries and
// records where the extension would have appended them, under a current-format header that names the
// extension whose `recall` tool its stubs point at. `--cwd` records another working directory, for
// opening the file on a machine where the original one does not exist.
import { resolve } from "node:path";
import { CURRENT_SESSION_VERSION, type SessionEntry, type SessionHeader } from "@earendil-works/pi-coding-agent";
import { type WriteTarget, writeLinesAtomically } from "./write-target.ts";

/** Pi ignores header fields it does not know; a person reading the file finds what its stubs need. */
const STUBS_NEED =
  "context_edit stubs by context-guard: their recall({entryId}) needs the pi-context-guard extension loaded";

/** The file's lines, one at a time: a long session's text would not fit in one string. */
function* guardedSessionLines(
  header: SessionHeader,
  entries: readonly SessionEntry[],
  cwd?: string,
): Generator<string> {
  yield JSON.stringify({
    ...header,
    version: CURRENT_SESSION_VERSION,
    ...(cwd !== undefined ? { cwd: resolve(cwd) } : {}),
    contextGuard: STUBS_NEED,
  });
  for (const entry of entries) yield JSON.stringify(entry);
}

/** Writes the guarded session onto a checked target (see write-target.ts); returns its path. */
export async function writeGuardedSession(
  target: WriteTarget,
  header: SessionHeader,
  entries: readonly SessionEntry[],
  cwd?: string,
): Promise<string> {
  await writeLinesAtomically(target, guardedSessionLines(header, entries, cwd));
  return target.path;
}
