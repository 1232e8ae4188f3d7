// What the needed-later proxy reads of a session: the recorded user, assistant and tool-result
// messages of the branch in order, and the text of a message as the model sees it.
import type { SessionEntry } from "@earendil-works/pi-coding-agent";
import { type Compaction, callSignature, type LaterMessage } from "../../core/replay/proxy.ts";
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
    const calls = content.toolCalls.map((c) => {
      const { reference, fresh } = splitCallArgs(c.args);
      return {
        signature: callSignature(c.name, c.args),
        text: `${c.name} ${JSON.stringify(reference)}`,
        ...(fresh ? { fresh } : {}),
      };
    });
    out.push({ index, role: m.role, text: content.text, calls });
  });
  return out;
}

// Arguments that carry text the agent writes anew (a write's content, an edit's replacement), as opposed
// to what it refers to (a path, a command, an edit's old text, which must match what it read).
const FRESH_KEYS = new Set(["content", "newText", "new_string", "newString", "new_str", "file_text"]);

/** A call's arguments without the text it writes anew, and that text. */
export function splitCallArgs(args: Record<string, unknown>): { reference: unknown; fresh: string } {
  const fresh: string[] = [];
  const walk = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(walk);
    if (value === null || typeof value !== "object") return value;
    const out: Record<string, unknown> = {};
    for (const [key, v] of Object.entries(value)) {
      if (FRESH_KEYS.has(key) && typeof v === "string") fresh.push(v);
      else out[key] = walk(v);
    }
    return out;
  };
  return { reference: walk(args), fresh: fresh.join("\n") };
}

/** The branch's compactions, each with the position of the first entry it kept. */
export function compactionsOf(branch: readonly SessionEntry[]): Compaction[] {
  const indexOf = new Map(branch.map((e, i) => [e.id, i]));
  const out: Compaction[] = [];
  branch.forEach((entry, index) => {
    if (entry.type !== "compaction") return;
    const kept = indexOf.get((entry as { firstKeptEntryId?: string }).firstKeptEntryId ?? "");
    out.push({ index, firstKept: kept ?? index });
  });
  return out;
}

export function rawText(entry: SessionEntry | undefined): string {
  if (!entry) return "";
  if (entry.type === "custom_message") return readContent(entry.content).text;
  return entry.type === "message" ? messageText(entry.message) : "";
}

export function excerpt(text: string, max = 360): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}

/** The later message around the first matched token. */
export function around(text: string, token: string | undefined, max = 320): string {
  const at = token === undefined ? -1 : text.indexOf(token);
  if (at === -1) return excerpt(text, max);
  const start = Math.max(0, at - Math.floor(max / 3));
  return `${start > 0 ? "…" : ""}${text.slice(start, start + max)}${start + max < text.length ? "…" : ""}`;
}
