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

/**
 * The exit-signal watch of every open session in the process: one listener per signal, installed with the
 * first session and removed with the last (one per session made an SDK host with 11 sessions print
 * MaxListenersExceededWarning). It lives on globalThis because Pi loads an extension afresh for each
 * session (jiti without a module cache), so each session can hold its own copy of this module.
 */
interface ExitWatch {
  /** Each open session's callback. */
  sessions: Set<() => void>;
  /** The listener installed for each signal. */
  listeners: Map<NodeJS.Signals, () => void>;
}

const WATCH = Symbol.for("context-guard.exit-watch.v1");

function exitWatch(): ExitWatch {
  const holder = globalThis as { [WATCH]?: ExitWatch };
  holder[WATCH] ??= { sessions: new Set(), listeners: new Map() };
  return holder[WATCH];
}

function dispatcher(watch: ExitWatch, signal: NodeJS.Signals): () => void {
  let reraising = false;
  const listener = () => {
    // Each callback is guarded: one session's failure does not keep the others from stopping.
    for (const session of [...watch.sessions]) session();
    // Pi's modes all listen for these and exit themselves. Where nobody else does (a bare SDK host), our
    // listener must not swallow the signal: once every listener has run, it is raised again with Node's
    // default action.
    if (reraising) return;
    reraising = true;
    setImmediate(() => {
      reraising = false;
      if (process.listeners(signal).some((l) => l !== listener)) return;
      process.off(signal, listener);
      if (watch.listeners.get(signal) === listener) watch.listeners.delete(signal);
      process.kill(process.pid, signal);
    });
  };
  return listener;
}

/** Tells `onExit` when the process gets an exit signal; returns the removal. */
export function watchExitSignals(onExit: () => void): () => void {
  const watch = exitWatch();
  const session = callback("exit-signal", onExit);
  watch.sessions.add(session);
  for (const signal of EXIT_SIGNALS) {
    if (watch.listeners.has(signal)) continue;
    const listener = dispatcher(watch, signal);
    watch.listeners.set(signal, listener);
    process.on(signal, listener);
  }
  return () => {
    watch.sessions.delete(session);
    if (watch.sessions.size > 0) return;
    for (const [signal, listener] of watch.listeners) process.off(signal, listener);
    watch.listeners.clear();
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
    // swallow-ok: A line that is not JSON is not Pi's abort command.
    return false;
  }
}
