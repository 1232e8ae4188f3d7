// The extension's one warning channel.
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import { redactKnown } from "./secrets.ts";

/**
 * A warning the user sees in every mode: a notification where Pi has a UI (the TUI, RPC clients), a line
 * on stderr in print and JSON mode, where notifications go nowhere.
 */
export function warn(ctx: Pick<ExtensionContext, "hasUI" | "ui">, message: string): void {
  // A message can quote an error that echoes a credential.
  const text = `context-guard: ${redactKnown(message)}`;
  if (ctx.hasUI) ctx.ui.notify(text, "warning");
  else process.stderr.write(`${text}\n`);
}
