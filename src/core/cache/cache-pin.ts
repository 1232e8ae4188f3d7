// Anthropic prompt-cache breakpoints for the main model's requests. Pi marks the system prompt, the
// last tool and the end of the conversation; the tools' mark is redundant with the system prompt's, and
// the system prompt's gives way when the budget is needed for the previous user question, the read point
// (a cache entry this process saw written, before the first edit) and the write anchor (the end of the
// tool-result batch holding the first edited output). Anthropic accepts at most 4 breakpoints.

export const MAX_BREAKPOINTS = 4;

interface Block {
  type?: string;
  text?: string;
  tool_use_id?: string;
  cache_control?: unknown;
  [key: string]: unknown;
}

interface Message {
  role?: string;
  content?: string | Block[];
}

export interface AnthropicPayload {
  system?: string | Block[];
  tools?: Array<{ cache_control?: unknown; [key: string]: unknown }>;
  messages?: Message[];
  [key: string]: unknown;
}

export interface PinTargets {
  /** tool_use_id of the read point's tool result. */
  readPoint?: string;
  /** tool_use_id of the first edited tool result (its batch gets the write anchor). */
  anchor?: string;
}

export type MarkKind = "conversation-end" | "question" | "read-point" | "write-anchor";

export interface PlacedMark {
  kind: MarkKind;
  messageIndex: number;
  /** tool_use_id when the marked block is a tool result. */
  toolUseId?: string;
}

const EPHEMERAL = { type: "ephemeral" } as const;

function blocks(message: Message): Block[] {
  if (typeof message.content === "string") message.content = [{ type: "text", text: message.content }];
  return message.content ?? [];
}

const marked = (message: Message | undefined) =>
  Array.isArray(message?.content) && message.content.some((b) => b.cache_control !== undefined);

function hasText(message: Message): boolean {
  if (typeof message.content === "string") return message.content.trim() !== "";
  return (message.content ?? []).some((b) => b.type === "text" && (b.text ?? "").trim() !== "");
}

/** Index of the message holding the tool result for `toolUseId`, searching from the end. */
function findToolResult(messages: Message[], toolUseId: string, before: number): number {
  for (let i = Math.min(before, messages.length) - 1; i >= 0; i--) {
    const m = messages[i] as Message;
    if (m.role !== "user" || !Array.isArray(m.content)) continue;
    if (m.content.some((b) => b.type === "tool_result" && b.tool_use_id === toolUseId)) return i;
  }
  return -1;
}

/**
 * Places the guard's breakpoints in place and returns every mark on a message (Pi's conversation-end
 * mark included), so the caller can log the cache entries the request writes. Walks back from the end
 * only as far as each target.
 */
export function placeGuardBreakpoints(payload: AnthropicPayload, targets: PinTargets): PlacedMark[] {
  const messages = payload.messages ?? [];
  if (Array.isArray(payload.system)) for (const b of payload.system) delete b.cache_control;
  for (const t of payload.tools ?? []) delete t.cache_control;

  const marks: PlacedMark[] = [];
  const lastIndex = messages.length - 1;
  const last = messages[lastIndex];
  if (last && marked(last)) {
    const tail = blocks(last).at(-1);
    marks.push({ kind: "conversation-end", messageIndex: lastIndex, toolUseId: tail?.tool_use_id });
  }
  const mark = (index: number, kind: MarkKind, block?: Block) => {
    if (index < 0 || marks.length >= MAX_BREAKPOINTS) return;
    if (marks.some((m) => m.messageIndex === index)) return;
    const message = messages[index] as Message;
    const target = block ?? blocks(message).at(-1);
    if (!target) return;
    target.cache_control = EPHEMERAL;
    marks.push({ kind, messageIndex: index, toolUseId: target.tool_use_id });
  };

  // The previous user question: the last user message with text.
  for (let i = lastIndex; i >= 0; i--) {
    const m = messages[i] as Message;
    if (m.role === "user" && hasText(m)) {
      mark(i, "question");
      break;
    }
  }
  if (targets.readPoint) {
    const i = findToolResult(messages, targets.readPoint, messages.length);
    const block = i >= 0 ? blocks(messages[i] as Message).find((b) => b.tool_use_id === targets.readPoint) : undefined;
    if (block) mark(i, "read-point", block);
  }
  if (targets.anchor) mark(findToolResult(messages, targets.anchor, messages.length), "write-anchor");
  // A spare breakpoint goes back on the system prompt, where Pi had it: a provider that serves only part
  // of a long prefix (or evicts it) still serves the tools and system prompt from there.
  const system = Array.isArray(payload.system) ? payload.system.at(-1) : undefined;
  if (system && marks.length < MAX_BREAKPOINTS) system.cache_control = EPHEMERAL;
  return marks;
}

/** Every cache_control mark in the payload (for tests and checks). */
export function countBreakpoints(payload: AnthropicPayload): number {
  let n = 0;
  if (Array.isArray(payload.system)) for (const b of payload.system) if (b.cache_control) n++;
  for (const t of payload.tools ?? []) if (t.cache_control) n++;
  for (const m of payload.messages ?? [])
    if (Array.isArray(m.content)) for (const b of m.content) if (b.cache_control) n++;
  return n;
}
