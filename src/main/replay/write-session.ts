// `--write`: the guarded session as a file Pi opens. The branch the replay followed (entries already
// migrated to the current format by Pi's SessionManager), with the guard's context_edit entries and
// records where the extension would have appended them, under a current-format header.
import { CURRENT_SESSION_VERSION, type SessionEntry, type SessionHeader } from "@earendil-works/pi-coding-agent";
import { type WriteTarget, writeLinesAtomically } from "./write-target.ts";

/** The file's lines, one at a time: a long session's text would not fit in one string. */
export function* guardedSessionLines(header: SessionHeader, entries: readonly SessionEntry[]): Generator<string> {
  yield JSON.stringify({ ...header, version: CURRENT_SESSION_VERSION });
  for (const entry of entries) yield JSON.stringify(entry);
}

export function guardedSessionText(header: SessionHeader, entries: readonly SessionEntry[]): string {
  return `${[...guardedSessionLines(header, entries)].join("\n")}\n`;
}

/** Writes the guarded session onto a checked target (see write-target.ts); returns its path. */
export async function writeGuardedSession(
  target: WriteTarget,
  header: SessionHeader,
  entries: readonly SessionEntry[],
): Promise<string> {
  await writeLinesAtomically(target, guardedSessionLines(header, entries));
  return target.path;
}
