// Pi gives an extension no signal at `agent_before_settle` (ctx.signal is undefined there) and sends
// `session_shutdown` only after settling, so a pass in flight would hold SIGTERM, stdin EOF or an RPC
// `abort` until its deadline. This watches for them directly while a pass runs: the process's own
// signals, the end of RPC input, an RPC `abort` command, and Esc in the TUI.
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import { callback } from "./callbacks.ts";

export interface InterruptHandlers {
  /** The process is going away (SIGTERM, SIGHUP, the end of RPC input): stop and write nothing. */
  onExit(): void;
  /** The user asked to stop this run (RPC `abort`, Esc in the TUI): stop asking, keep what was answered. */
  onAbort(): void;
}

const EXIT_SIGNALS: NodeJS.Signals[] = process.platform === "win32" ? ["SIGTERM"] : ["SIGTERM", "SIGHUP"];

/** Every exit-signal listener of ours, across sessions (an SDK host can hold several). */
const ours = new Set<(...args: unknown[]) => void>();
const reraising = new Set<NodeJS.Signals>();

/** Process-wide signal listeners, installed once per session; returns their removal. */
export function watchExitSignals(onExit: () => void): () => void {
  const listeners = EXIT_SIGNALS.map((signal) => {
    const stop = callback("exit-signal", onExit);
    const listener = () => {
      stop();
      // Pi's modes all listen for these and exit themselves. Where nobody else does (a bare SDK host),
      // listeners of ours must not swallow the signal: once every listener has run (another session's
      // too), it is raised again with Node's default action.
      if (reraising.has(signal)) return;
      reraising.add(signal);
      setImmediate(() => {
        reraising.delete(signal);
        const all = process.listeners(signal);
        if (!all.every((l) => ours.has(l as (...args: unknown[]) => void))) return;
        for (const l of all) process.off(signal, l as (...args: unknown[]) => void);
        process.kill(process.pid, signal);
      });
    };
    ours.add(listener);
    process.on(signal, listener);
    return { signal, listener };
  });
  return () => {
    for (const { signal, listener } of listeners) {
      ours.delete(listener);
      process.off(signal, listener);
    }
  };
}

/**
 * Watches for a stop request while one pass runs; returns the removal. RPC input is only read
 * alongside Pi's own reader (never before it is attached: a `data` listener would start the stream
 * flowing, and lines would be lost to Pi).
 */
export function watchPass(
  ctx: Pick<ExtensionContext, "mode" | "hasUI" | "ui">,
  handlers: InterruptHandlers,
): () => void {
  const undo: Array<() => void> = [];
  const stdin = process.stdin;
  if (ctx.mode === "rpc" && stdin.listenerCount("data") > 0) {
    let buffer = "";
    const onData = callback("rpc-input", (chunk: Buffer | string) => {
      buffer += typeof chunk === "string" ? chunk : chunk.toString("utf8");
      for (let at = buffer.indexOf("\n"); at >= 0; at = buffer.indexOf("\n")) {
        const line = buffer.slice(0, at);
        buffer = buffer.slice(at + 1);
        if (isAbortCommand(line)) handlers.onAbort();
      }
      // Only the start of a line is needed to recognise a command.
      if (buffer.length > 4096) buffer = buffer.slice(0, 4096);
    });
    const onEnd = callback("rpc-input", () => handlers.onExit());
    stdin.on("data", onData);
    stdin.on("end", onEnd);
    undo.push(() => {
      stdin.off("data", onData);
      stdin.off("end", onEnd);
    });
  }
  if (ctx.mode === "tui" && ctx.hasUI && typeof ctx.ui.onTerminalInput === "function") {
    // Esc alone (not the start of an escape sequence) is Pi's "stop" key.
    undo.push(
      ctx.ui.onTerminalInput((data) => {
        if (data === "\x1b") handlers.onAbort();
        return undefined;
      }),
    );
  }
  return () => {
    for (const u of undo.splice(0)) u();
  };
}

function isAbortCommand(line: string): boolean {
  if (!line.includes('"abort"')) return false;
  try {
    const parsed = JSON.parse(line) as { type?: unknown };
    return parsed?.type === "abort";
  } catch {
    // A line that is not JSON is not Pi's abort command.
    return false;
  }
}
