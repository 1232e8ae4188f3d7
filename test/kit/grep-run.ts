// A finished run with one large grep output in Pi's own SessionManager (in memory): the smallest session
// a run-end pass edits, for examples that need Pi's real projection.
import { SessionManager } from "@earendil-works/pi-coding-agent";
import { FAUX_USAGE } from "./pi-messages.ts";

export function grepRunSession(): SessionManager {
  const sm = SessionManager.inMemory("/tmp/cg-grep-run");
  const now = Date.now();
  const model = { api: "openai-completions", provider: "fake", model: "m", usage: FAUX_USAGE, timestamp: now };
  sm.appendMessage({ role: "user", content: [{ type: "text", text: "where is needle?" }], timestamp: now });
  sm.appendMessage({
    role: "assistant",
    content: [{ type: "toolCall", id: "c1", name: "bash", arguments: { command: "rg -n needle" } }],
    stopReason: "toolUse",
    ...model,
  } as never);
  const lines = Array.from({ length: 600 }, (_, i) => `src/f${i % 9}.ts:${i}: const value_${i} = ${i}; // hay`);
  sm.appendMessage({
    role: "toolResult",
    toolCallId: "c1",
    toolName: "bash",
    content: [{ type: "text", text: lines.join("\n") }],
    isError: false,
    timestamp: now,
  } as never);
  sm.appendMessage({
    role: "assistant",
    content: [{ type: "text", text: "needle is not there" }],
    stopReason: "stop",
    ...model,
  } as never);
  return sm;
}
