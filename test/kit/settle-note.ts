// A Pi extension that appends a custom entry at every run end. Loaded before the guard, its draft is in the
// context Pi hands the guard's agent_before_settle handler, as an entry of a preview whose id Pi does not keep.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function settleNote(pi: ExtensionAPI): void {
  pi.on("agent_before_settle", (event) => ({
    entries: [...event.entries, { type: "custom", customType: "settle-note", data: { at: Date.now() } }],
  }));
}
