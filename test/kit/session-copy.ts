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

/** A session file's entry, with the fields the guard's entries name others by. */
export interface FileEntry {
  id: string;
  parentId: string | null;
  type: string;
  customType?: string;
  targetId?: string;
  data?: { results?: Array<{ entryId: string }> };
}

/**
 * Every entry id the guard's entries name (an edit's target, a record's results) with whether it stands
 * before the naming entry on its branch.
 */
export function guardNames(entries: FileEntry[]): Array<{ entry: string; named: string; onBranch: boolean }> {
  const byId = new Map(entries.map((e) => [e.id, e]));
  const out: Array<{ entry: string; named: string; onBranch: boolean }> = [];
  for (const e of entries) {
    if (e.type !== "context_edit" && e.customType !== "context-guard") continue;
    const named = e.type === "context_edit" ? [e.targetId as string] : (e.data?.results ?? []).map((r) => r.entryId);
    const before = new Set<string>();
    for (let p = e.parentId; p !== null; p = byId.get(p)?.parentId ?? null) before.add(p);
    for (const id of named) out.push({ entry: e.id, named: id, onBranch: before.has(id) });
  }
  return out;
}
