// The Pi extension: maps Pi's events to the session object (session/session-guard.ts), which owns
// everything of one Pi session. Nothing is started in the factory: Pi also runs it for commands that
// never open a session (e.g. `pi --list-models`).
import { registerSessionResourceCleanup } from "@earendil-works/pi-ai";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { traceSwallowed } from "./platform/swallowed.ts";
import { guardCommand } from "./session/guard-command.ts";
import { openSessionGuard } from "./session/open-session.ts";
import { executeRecall, RECALL_TOOL } from "./session/recall-tool.ts";
import type { SessionGuard } from "./session/session-guard.ts";
import { TurnEndHook } from "./session/turn-end-hook.ts";

export default function contextGuard(pi: ExtensionAPI): void {
  let session: SessionGuard | undefined;
  // Mid-run checkpoints start at turn_start and land at a later turn_end. The handler is registered only
  // while the session has work for the next turn_end: Pi skips a boundary nobody listens to.
  const turnEnd = new TurnEndHook(() =>
    pi.on("turn_end", (event, ctx) => (event.outcome === "completed" ? session?.turnEnd(event, ctx) : undefined)),
  );

  let unregister: (() => void) | undefined;
  const shutdown = async () => {
    const s = session;
    session = undefined;
    turnEnd.set(false);
    unregister?.();
    unregister = undefined;
    await s?.shutdown();
  };

  pi.on("session_start", async (_event, ctx) => {
    session = await openSessionGuard(pi, (on) => turnEnd.set(on));
    session.start(ctx);
    // An SDK host may end with `session.dispose()` alone, which tells extensions nothing; it does run pi-ai's
    // session resource cleanups with the session's id. Without this the guard's threads keep the host alive.
    const manager = ctx.sessionManager;
    unregister?.();
    unregister = registerSessionResourceCleanup((sessionId) => {
      if (sessionId === manager.getSessionId()) void shutdown().catch((error) => traceSwallowed("sdk-cleanup", error));
    });
  });

  pi.on("session_shutdown", shutdown);

  pi.on("agent_start", (_event, ctx) => session?.runStarted(ctx));

  // Both boundaries also append the edits of restores asked for since the last one (/guard restore).
  pi.on("agent_before_settle", (event, ctx) =>
    event.outcome === "completed" ? session?.settle(event, ctx) : undefined,
  );

  pi.on("context", (event, ctx) => session?.restoreContext(event.messages, ctx));

  pi.on("input", (event, ctx) => session?.input(event, ctx));
  pi.on("before_agent_start", (event, ctx) => session?.route(event, ctx));
  pi.on("before_provider_request", (event, ctx) => session?.providerRequest(event, ctx));
  pi.on("message_end", (event, ctx) => session?.messageEnd(event.message, ctx));

  pi.on("turn_start", (_event, ctx) => session?.turnStarted(ctx));
  pi.on("agent_settled", (_event, ctx) => session?.draw(ctx));
  pi.on("session_compact", (_event, ctx) => session?.draw(ctx));
  pi.on("session_tree", (_event, ctx) => session?.treeChanged(ctx));

  // Without a session the tool still checks its arguments, then says that the guard is not running.
  pi.registerTool({
    ...RECALL_TOOL,
    execute: (_toolCallId, params, signal, _onUpdate, ctx) =>
      session
        ? session.recall(params, ctx, signal)
        : executeRecall(params, ctx, { runner: () => undefined, timeoutMs: () => 0 }, signal),
  });

  pi.registerCommand(
    "guard",
    guardCommand(
      () => session,
      (customType, data) => pi.appendEntry(customType, data),
    ),
  );
}
