/**
 * A terminal program under tmux, for TUI tests: its own tmux server (a private socket, so no other tmux
 * session is touched), keys sent with send-keys, the screen read with capture-pane, and waits that poll
 * the screen for text with generous time limits (never a timing threshold).
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";

const run = promisify(execFile);

export interface TmuxSession {
  /** The visible screen, as plain text. */
  screen(): Promise<string>;
  /** Types text literally (no key names). */
  type(text: string): Promise<void>;
  /** Sends tmux key names, e.g. "Enter", "Escape", "Down". */
  keys(...names: string[]): Promise<void>;
  /** Polls the screen until `match` holds; rejects with the last screen after `timeoutMs`. */
  waitFor(match: RegExp | ((screen: string) => boolean), timeoutMs?: number): Promise<string>;
  close(): Promise<void>;
}

export async function startTmux(opts: {
  command: string[];
  cwd: string;
  env: Record<string, string>;
  width?: number;
  height?: number;
}): Promise<TmuxSession> {
  const socket = `cg-test-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
  const tmux = (...args: string[]) => run("tmux", ["-L", socket, "-f", "/dev/null", ...args], { encoding: "utf8" });
  const env = Object.entries(opts.env).map(([k, v]) => `${k}=${v}`);
  await tmux(
    "new-session",
    "-d",
    "-s",
    "cg",
    "-x",
    String(opts.width ?? 160),
    "-y",
    String(opts.height ?? 48),
    "-c",
    opts.cwd,
    "env",
    ...env,
    ...opts.command,
  );
  const screen = async () => (await tmux("capture-pane", "-p", "-t", "cg")).stdout;
  return {
    screen,
    async type(text) {
      await tmux("send-keys", "-t", "cg", "-l", text);
    },
    async keys(...names) {
      await tmux("send-keys", "-t", "cg", ...names);
    },
    async waitFor(match, timeoutMs = 30_000) {
      const test = typeof match === "function" ? match : (s: string) => match.test(s);
      const deadline = Date.now() + timeoutMs;
      let last = "";
      for (;;) {
        last = await screen().catch(() => last);
        if (test(last)) return last;
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${String(match)}; screen:\n${last}`);
        await new Promise((r) => setTimeout(r, 150));
      }
    },
    async close() {
      await tmux("kill-server").catch(() => undefined);
    },
  };
}
