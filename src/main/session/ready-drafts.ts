// A pass handed over at the run end usually ends long before the next prompt, but its drafts land only
// at the next boundary, after that run's first request. Until they land, every request carries them as
// the projection will once they have (docs/DESIGN.md, nobody waits at the run end), so the next run's
// first request is the one the drafts would have made at the run end: no extra cache write.
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import type { ContextEditDraft } from "../../core/shared/types.ts";
import type { Message } from "./restore.ts";

type SessionView = ExtensionContext["sessionManager"];

const same = (a: Message | undefined, b: Message) =>
  a !== undefined &&
  a.role === b.role &&
  (a as { timestamp?: unknown }).timestamp === (b as { timestamp?: unknown }).timestamp;

/**
 * `messages` with `edits` applied: an omitted entry's messages left out, a replaced one's content swapped.
 * Returns undefined when nothing applies or the messages do not line up with Pi's projection (another
 * extension changed them): the boundary still lands the drafts.
 */
export function withReadyDrafts(
  messages: readonly Message[],
  sm: SessionView,
  edits: readonly ContextEditDraft[],
): Message[] | undefined {
  if (edits.length === 0) return undefined;
  const byTarget = new Map(edits.map((e) => [e.targetId, e]));
  const out: Message[] = [];
  let changed = false;
  let k = 0;
  for (const projected of sm.buildSessionProjection().entries) {
    const edit = byTarget.get(projected.sourceEntry.id);
    const shown = projected.messages.filter((m) => m.role !== "system") as Message[];
    for (let j = 0; j < shown.length; j++) {
      const message = messages[k];
      if (!same(message, shown[j] as Message)) return undefined;
      k++;
      if (!edit) out.push(message as Message);
      else if (edit.replacement !== null && j === 0) {
        out.push({ ...(message as Message), content: edit.replacement.content } as Message);
        changed = true;
      } else changed = true;
    }
  }
  return changed ? [...out, ...messages.slice(k)] : undefined;
}
