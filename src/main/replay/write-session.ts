// `--write`: the guarded session as a file Pi opens. The branch the replay followed (entries already
// migrated to the current format by Pi's SessionManager), with the guard's context_edit entries and
// records where the extension would have appended them, under a current-format header that names the
// extension whose `recall` tool its stubs point at. `--cwd` records another working directory, for
// opening the file on a machine where the original one does not exist.
import { writeFile } from "node:fs/promises";
import { resolve } from "node:path";
import { CURRENT_SESSION_VERSION, type SessionEntry, type SessionHeader } from "@earendil-works/pi-coding-agent";

/** Pi ignores header fields it does not know; a person reading the file finds what its stubs need. */
export const STUBS_NEED =
  "context_edit stubs by context-guard: their recall({entryId}) needs the pi-context-guard extension loaded";

export function guardedSessionText(header: SessionHeader, entries: readonly SessionEntry[], cwd?: string): string {
  const head = {
    ...header,
    version: CURRENT_SESSION_VERSION,
    ...(cwd !== undefined ? { cwd: resolve(cwd) } : {}),
    contextGuard: STUBS_NEED,
  };
  return `${[head, ...entries].map((e) => JSON.stringify(e)).join("\n")}\n`;
}

export async function writeGuardedSession(
  path: string,
  header: SessionHeader,
  entries: readonly SessionEntry[],
  cwd?: string,
): Promise<string> {
  const out = resolve(path);
  await writeFile(out, guardedSessionText(header, entries, cwd));
  return out;
}
