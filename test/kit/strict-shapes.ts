// The tool-call shape rules strict providers enforce on a request, for the fake main model's `strict`
// option and the shape properties. OpenAI chat completions: every `tool` message follows (with only other
// `tool` messages between) an assistant whose `tool_calls` has its id, and every tool call is answered
// before the next other message. Anthropic messages: every `tool_result` block answers a `tool_use` of the
// immediately preceding assistant message, and every `tool_use` is answered in the next message.
import type { WireJson } from "./fake-openai.ts";

/** What OpenAI answers (HTTP 400) to a `tool` message that answers no call before it. */
export const OPENAI_ORPHAN_TOOL_MESSAGE =
  "Invalid parameter: messages with role 'tool' must be a response to a preceding message with 'tool_calls'.";
/** What Anthropic answers (HTTP 400) to a `tool_result` block with no `tool_use` before it. */
export const ANTHROPIC_ORPHAN_TOOL_MESSAGE =
  "messages: Unexpected `tool_use_id` found in `tool_result` blocks. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.";

/** Problems of an OpenAI `messages` array (empty when a strict server accepts it). */
export function openaiShapeProblems(messages: readonly WireJson[]): string[] {
  const out: string[] = [];
  let open: Set<string> | undefined;
  let answered = new Set<string>();
  const close = (at: number) => {
    for (const id of open ?? []) if (!answered.has(id)) out.push(`messages.[${at}]: tool call ${id} has no answer`);
    open = undefined;
    answered = new Set();
  };
  messages.forEach((m, i) => {
    if (m?.role === "tool") {
      const id = String(m.tool_call_id ?? "");
      if (!open?.has(id) || answered.has(id)) out.push(`messages.[${i}].role: ${OPENAI_ORPHAN_TOOL_MESSAGE}`);
      else answered.add(id);
      return;
    }
    close(i);
    if (m?.role === "assistant" && Array.isArray(m.tool_calls) && m.tool_calls.length > 0) {
      open = new Set(m.tool_calls.map((c: WireJson) => String(c?.id ?? "")));
    }
  });
  close(messages.length);
  return out;
}

const blocks = (m: WireJson): WireJson[] => (Array.isArray(m?.content) ? m.content : []);

/** Problems of an Anthropic `messages` array (empty when the API accepts it). */
export function anthropicShapeProblems(messages: readonly WireJson[]): string[] {
  const out: string[] = [];
  messages.forEach((m, i) => {
    const prev = messages[i - 1];
    const uses = new Set(
      prev?.role === "assistant"
        ? blocks(prev)
            .filter((b) => b?.type === "tool_use")
            .map((b) => String(b.id))
        : [],
    );
    const results = blocks(m)
      .filter((b) => b?.type === "tool_result")
      .map((b) => String(b.tool_use_id));
    if (m?.role === "user") {
      for (const id of results) if (!uses.has(id)) out.push(`messages.${i}: ${ANTHROPIC_ORPHAN_TOOL_MESSAGE}`);
    }
    if (m?.role === "assistant") {
      const next = messages[i + 1];
      const answers = new Set(
        next?.role === "user"
          ? blocks(next)
              .filter((b) => b?.type === "tool_result")
              .map((b) => String(b.tool_use_id))
          : [],
      );
      for (const b of blocks(m)) {
        if (b?.type === "tool_use" && !answers.has(String(b.id))) {
          out.push(`messages.${i}: tool_use ${b.id} has no tool_result in the next message`);
        }
      }
    }
  });
  return out;
}

/**
 * pi-ai's transformed messages (`transformMessages`) as Anthropic message blocks: each assistant with its
 * text and `tool_use` blocks, a run of tool results as one user message of `tool_result` blocks, other
 * messages as user text (as pi-ai's Anthropic provider groups them).
 */
export function anthropicShape(
  messages: ReadonlyArray<{ role: string; content?: unknown; toolCallId?: string }>,
): WireJson[] {
  const out: WireJson[] = [];
  for (const m of messages) {
    if (m.role === "system") continue;
    if (m.role === "assistant") {
      const content = (Array.isArray(m.content) ? m.content : []).flatMap((b: WireJson) =>
        b?.type === "toolCall" ? [{ type: "tool_use", id: b.id, name: b.name, input: b.arguments ?? {} }] : [],
      );
      out.push({ role: "assistant", content: [{ type: "text", text: "…" }, ...content] });
      continue;
    }
    if (m.role === "toolResult") {
      const block = { type: "tool_result", tool_use_id: m.toolCallId, content: "…" };
      const last = out.at(-1);
      if (last?.role === "user" && blocks(last).every((b) => b.type === "tool_result")) last.content.push(block);
      else out.push({ role: "user", content: [block] });
      continue;
    }
    out.push({ role: "user", content: [{ type: "text", text: "…" }] });
  }
  return out;
}
