// Where Pi would have called the guard in a recorded branch (the replay's boundaries), read from the
// messages alone.
import type { SessionEntry } from "@earendil-works/pi-coding-agent";
import type { PassOptions } from "../pass/run-pass.ts";
import { readContent } from "../pass/snapshot.ts";

export type Phase = PassOptions["phase"];

export interface MessageLike {
  role?: string;
  content?: unknown;
  stopReason?: string;
  toolCallId?: string;
  api?: string;
  provider?: string;
}

export function messageOf(entry: SessionEntry | undefined): MessageLike | undefined {
  return entry?.type === "message" ? (entry.message as MessageLike) : undefined;
}

export function toolCallsOf(
  message: MessageLike | undefined,
): Array<{ id: string; name: string; args: Record<string, unknown> }> {
  return readContent(message?.content).toolCalls;
}

export const ended = (m: MessageLike | undefined) => m?.stopReason === "error" || m?.stopReason === "aborted";

/** Messages that move a run forward; custom notices, shell runs and system messages do not decide a boundary. */
function isTurnMessage(entry: SessionEntry): boolean {
  const role = messageOf(entry)?.role;
  return role === "user" || role === "assistant" || role === "toolResult";
}

/**
 * Where Pi would call the guard: `run-end` after a completed answer without tool calls whose next user,
 * assistant or tool-result message is a user prompt (or that ends the file); `mid-run` after the last
 * tool result of a turn whose calls were not cut off. Custom notices in between do not count.
 */
export function boundaryAt(
  branch: readonly SessionEntry[],
  i: number,
  lastAssistant: MessageLike | undefined,
): Phase | undefined {
  const entry = branch[i] as SessionEntry;
  const message = messageOf(entry);
  if (!message) return undefined;
  let next: SessionEntry | undefined;
  for (let j = i + 1; j < branch.length; j++) {
    if (isTurnMessage(branch[j] as SessionEntry)) {
      next = branch[j];
      break;
    }
  }
  const nextRole = messageOf(next)?.role;
  if (message.role === "assistant") {
    if (toolCallsOf(message).length > 0 || ended(message)) return undefined;
    return next === undefined || nextRole === "user" ? "run-end" : undefined;
  }
  if (message.role === "toolResult") {
    if (next === undefined || nextRole === "toolResult") return undefined;
    return lastAssistant && !ended(lastAssistant) && toolCallsOf(lastAssistant).length > 0 ? "mid-run" : undefined;
  }
  return undefined;
}
