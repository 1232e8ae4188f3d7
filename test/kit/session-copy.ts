/**
 * A session file as Pi loads it, read from a copy: `SessionManager.open` may rewrite an original in place.
 */
import { copyFile, mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SessionManager } from "@earendil-works/pi-coding-agent";

/** Opens a fresh copy of `file` (with `cwd` as the session's working directory when given). */
export async function openCopy(file: string, cwd?: string): Promise<SessionManager> {
  const copy = join(await mkdtemp(join(tmpdir(), "cg-copy-")), "session.jsonl");
  await copyFile(file, copy);
  return SessionManager.open(copy, undefined, cwd);
}

export interface ProjectedMessage {
  role: string;
  toolCallId?: string;
  content?: unknown;
}

/** Each leaf of the session's tree (an entry no other names as parent) with the messages Pi projects there. */
export function leafProjections(manager: SessionManager): Array<{ leafId: string; messages: ProjectedMessage[] }> {
  const entries = manager.getEntries() as unknown as Array<{ id: string; parentId: string | null }>;
  const children = new Set(entries.map((e) => e.parentId));
  return entries
    .filter((e) => !children.has(e.id))
    .map((leaf) => {
      manager.branch(leaf.id);
      return { leafId: leaf.id, messages: manager.buildSessionProjection().messages as ProjectedMessage[] };
    });
}
