// What the needed-later proxy reads of a session: the recorded user, assistant and tool-result
// messages of the branch in order, and the text of a message as the model sees it.
import type { SessionEntry } from "@earendil-works/pi-coding-agent";
import { callSignature, type LaterMessage } from "../../core/replay/proxy.ts";
import { readContent } from "../pass/snapshot.ts";

/** Text of a message as the proxy reads it: text blocks, tool-call arguments, summaries. */
export function messageText(message: unknown): string {
  const m = message as { role?: string; content?: unknown; summary?: unknown };
  if (typeof m?.summary === "string") return m.summary;
  const content = readContent(m?.content);
  const calls = content.toolCalls.map((c) => `${c.name} ${JSON.stringify(c.args)}`);
  return [content.text, ...calls].join("\n");
}

/** The branch's messages for the proxy, each with its position in the branch. */
export function laterMessages(branch: readonly SessionEntry[]): LaterMessage[] {
  const out: LaterMessage[] = [];
  branch.forEach((entry, index) => {
    if (entry.type !== "message") return;
    const m = entry.message as { role?: string; content?: unknown };
    if (m.role !== "user" && m.role !== "assistant" && m.role !== "toolResult") return;
    const content = readContent(m.content);
    const calls = content.toolCalls.map((c) => ({
      signature: callSignature(c.name, c.args),
      text: `${c.name} ${JSON.stringify(c.args)}`,
    }));
    out.push({ index, role: m.role, text: content.text, calls });
  });
  return out;
}
