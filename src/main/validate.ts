// Pi drops every extension's drafts when one is invalid, so each of ours is checked against the
// context it will be applied to before it is returned.
import type { ContextEditDraft } from "../core/types.ts";
import { type ProjectedLike, readContent } from "./snapshot.ts";

const EDITABLE_ROLES = new Set(["user", "toolResult"]);

export interface Validation {
  valid: ContextEditDraft[];
  dropped: Array<{ draft: ContextEditDraft; why: string }>;
}

function rawOf(entry: ProjectedLike["sourceEntry"]): { role?: string; content?: unknown } | undefined {
  if (entry.type === "message") return entry.message as { role?: string; content?: unknown };
  if (entry.type === "custom_message") return { role: "custom", content: entry.content };
  return undefined;
}

export function validateEdits(drafts: readonly ContextEditDraft[], context: readonly ProjectedLike[]): Validation {
  const byId = new Map<string, ProjectedLike>();
  for (const entry of context) byId.set(entry.sourceEntry.id, entry);
  const valid: ContextEditDraft[] = [];
  const dropped: Validation["dropped"] = [];
  const seen = new Set<string>();
  for (const draft of drafts) {
    const target = byId.get(draft.targetId);
    const raw = target ? rawOf(target.sourceEntry) : undefined;
    let why: string | undefined;
    if (!target) why = "target is not in the context";
    else if (!raw?.role) why = "target is not a message";
    else if (seen.has(draft.targetId)) why = "second edit of the same target";
    else if (draft.replacement !== null && !EDITABLE_ROLES.has(raw.role) && raw.role !== "custom") {
      // Replacing assistant content would drop its thinking, signatures and tool calls.
      why = `the guard never replaces ${raw.role} content`;
    } else if (draft.replacement !== null) {
      const before = readContent(raw.content).text.length;
      const after = draft.replacement.content.reduce((n, block) => n + block.text.length, 0);
      if (after >= before) why = "replacement is not shorter than the original";
    }
    if (why) dropped.push({ draft, why });
    else {
      valid.push(draft);
      seen.add(draft.targetId);
    }
  }
  return { valid, dropped };
}
