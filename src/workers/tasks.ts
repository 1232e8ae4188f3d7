// Pool task entry points. Each export is a plain function, so the same code runs in a worker
// (Piscina/Tinypool select it by name) or inline (library use, benchmarks). Every message of a pass
// goes through `pass` (protocol.ts declares them, pass-handler.ts answers them).
import { handlePass } from "./pass/pass-handler.ts";
import type { PassKind, PassMessage, PassReply } from "./pass/protocol.ts";
import { type RecallTaskInput, type RecallTaskOutput, recallText } from "./recall/recall-task.ts";
import { type SavedInput, type SavedOutput, savedTask } from "./saved/saved-task.ts";

/** One message of a pass (protocol.ts), answered on this thread. */
export function pass<M extends PassMessage>(message: M): PassReply<M["kind"]> {
  return handlePass(message as Extract<PassMessage, { kind: PassKind }>) as PassReply<M["kind"]>;
}

export function recall(input: RecallTaskInput): RecallTaskOutput {
  return recallText(input);
}

/** What the guard saved on a branch so far (the footer's dollars), priced off Pi's thread a slice at a time. */
export function saved(input: SavedInput): SavedOutput {
  return savedTask(input);
}

export function ping(): string {
  return "pong";
}
