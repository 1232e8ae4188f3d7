// Builders for SnapEntry / SnapToolCall objects shared by the core tests.
// Every builder takes the entry id explicitly (tests that number their entries keep their own
// counter) and ends with an `extra` override that is spread last, so any field can be replaced
// or added without a new builder.

import { RECORD_TYPE, type SnapEntry, type SnapRole, type SnapToolCall } from "../../src/core/shared/types.ts";

/** A tool call as made by an assistant message. */
export function toolCall(id: string, name: string, args: Record<string, unknown> = {}): SnapToolCall {
  return { id, name, args };
}

/** A visible `message` entry of any role, without images. */
export function messageEntry(id: string, role: SnapRole, text: string, extra: Partial<SnapEntry> = {}): SnapEntry {
  return { id, type: "message", role, visible: true, text, images: 0, ...extra };
}

/** A user message. */
export function userEntry(id: string, text: string, extra: Partial<SnapEntry> = {}): SnapEntry {
  return messageEntry(id, "user", text, extra);
}

/** An assistant message; `toolCalls` is set only when given (an empty array is kept as such). */
export function assistantEntry(
  id: string,
  text = "",
  toolCalls?: SnapToolCall[],
  extra: Partial<SnapEntry> = {},
): SnapEntry {
  return messageEntry(id, "assistant", text, { ...(toolCalls ? { toolCalls } : {}), ...extra });
}

/** A successful tool result answering call `callId` of tool `toolName`. */
export function toolResultEntry(
  id: string,
  callId: string,
  toolName: string,
  text: string,
  extra: Partial<SnapEntry> = {},
): SnapEntry {
  return messageEntry(id, "toolResult", text, { toolCallId: callId, toolName, isError: false, ...extra });
}

/** A successful tool result answering `call`. */
export function callResultEntry(
  id: string,
  call: SnapToolCall,
  text: string,
  extra: Partial<SnapEntry> = {},
): SnapEntry {
  return toolResultEntry(id, call.id, call.name, text, extra);
}

/** A visible `custom_message` entry (extension notices, subagent reports, …). */
export function customMessageEntry(
  id: string,
  customType: string,
  text: string,
  extra: Partial<SnapEntry> = {},
): SnapEntry {
  return { id, type: "custom_message", role: "custom", visible: true, text, images: 0, customType, ...extra };
}

/** A state-only entry the model never sees (`custom`, `model_change`, …). */
export function hiddenEntry(id: string, type = "custom", extra: Partial<SnapEntry> = {}): SnapEntry {
  return { id, type, visible: false, text: "", images: 0, ...extra };
}

/** One of the guard's own record entries (a `custom` entry of RECORD_TYPE) carrying `data`. */
export function recordEntry(id: string, data: unknown, extra: Partial<SnapEntry> = {}): SnapEntry {
  return hiddenEntry(id, "custom", { customType: RECORD_TYPE, data, ...extra });
}

/** A compaction entry; its visible text is empty unless `extra` sets it. */
export function compactionEntry(id: string, summary: string, extra: Partial<SnapEntry> = {}): SnapEntry {
  return { id, type: "compaction", role: "compactionSummary", visible: true, text: "", images: 0, summary, ...extra };
}

/** A branch summary entry; its visible text is empty unless `extra` sets it. */
export function branchSummaryEntry(id: string, summary: string, extra: Partial<SnapEntry> = {}): SnapEntry {
  return { id, type: "branch_summary", role: "branchSummary", visible: true, text: "", images: 0, summary, ...extra };
}

/**
 * A run whose `outputs` grep outputs (`lines` lines over `files` files each) are each large enough to be
 * judged, then the answer. Ids carry `tag`, so two runs can share a session.
 */
export function grepRun(tag: string, outputs: number, lines = 400, files = 11): SnapEntry[] {
  const out: SnapEntry[] = [userEntry(`u-${tag}`, "where is compute used?")];
  for (let i = 0; i < outputs; i++) {
    const text = Array.from({ length: lines }, (_, l) => `src/${tag}${i}_${l % files}.ts:${l + 1}: compute(${l});`);
    out.push(assistantEntry(`a-${tag}${i}`, "", [toolCall(`c-${tag}${i}`, "bash", { command: `rg ${i}` })]));
    out.push(toolResultEntry(`t-${tag}${i}`, `c-${tag}${i}`, "bash", text.join("\n")));
  }
  out.push(assistantEntry(`z-${tag}`, "compute is used widely"));
  return out;
}
