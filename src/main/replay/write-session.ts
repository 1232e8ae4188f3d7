// `--write`: the guarded session as a file Pi opens. The branch the replay followed (entries already
// migrated to the current format by Pi's SessionManager), with the guard's context_edit entries and
// records where the extension would have appended them, under a current-format header.
import { writeFile } from "node:fs/promises";
import { resolve } from "node:path";
import { CURRENT_SESSION_VERSION, type SessionEntry, type SessionHeader } from "@earendil-works/pi-coding-agent";

export function guardedSessionText(header: SessionHeader, entries: readonly SessionEntry[]): string {
  const head: SessionHeader = { ...header, version: CURRENT_SESSION_VERSION };
  return `${[head, ...entries].map((e) => JSON.stringify(e)).join("\n")}\n`;
}

export async function writeGuardedSession(
  path: string,
  header: SessionHeader,
  entries: readonly SessionEntry[],
): Promise<string> {
  const out = resolve(path);
  await writeFile(out, guardedSessionText(header, entries));
  return out;
}
