// The real `pi` CLI in RPC mode, driven as an RPC client drives it: JSON commands on stdin, records on
// stdout (events, responses and the extension UI's calls), each stamped with when it arrived.
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { join } from "node:path";
import { type AgentDirOptions, FAKE_MODEL, makeAgentDir, NODE_BIN, PI_BIN, REPO_ROOT } from "./pi-agent-dir.ts";

export type RpcRecord = Record<string, unknown> & { at: number };

export interface RpcPi {
  child: ChildProcessWithoutNullStreams;
  /** Every stdout record, with `at` = performance.now() when it was read. */
  records: RpcRecord[];
  send(message: Record<string, unknown>): void;
  /** The first record from index `from` on that matches. */
  waitFor(pred: (r: RpcRecord) => boolean, opts?: { from?: number; timeoutMs?: number }): Promise<RpcRecord>;
  /** Resolves when the process has exited, with when (performance.now()). */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>;
  /** Kills it (SIGTERM) and waits for the exit. */
  close(): Promise<void>;
}

export interface RpcPiOptions {
  agentDir: string;
  cwd: string;
  /** Extensions loaded with `-e`. */
  extensions: string[];
  /** More CLI arguments (default `--no-session`). */
  args?: string[];
  env?: Record<string, string>;
  /** SIGKILL after this long, whatever happens (default 120 s). */
  killAfterMs?: number;
}

export function startRpcPi(opts: RpcPiOptions): RpcPi {
  const args = [PI_BIN, "--mode", "rpc", "-ne", "--model", FAKE_MODEL, ...(opts.args ?? ["--no-session"])];
  for (const e of opts.extensions) args.push("-e", e);
  const child = spawn(NODE_BIN, args, {
    cwd: opts.cwd,
    env: { ...process.env, PI_CODING_AGENT_DIR: opts.agentDir, PI_OFFLINE: "1", ...opts.env },
  });
  const records: RpcRecord[] = [];
  const waiters: Array<() => void> = [];
  let buffer = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
    const at = performance.now();
    buffer += chunk;
    let nl = buffer.indexOf("\n");
    while (nl !== -1) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      if (line.trim()) {
        try {
          records.push({ ...JSON.parse(line), at });
        } catch {}
      }
      nl = buffer.indexOf("\n");
    }
    for (const w of waiters.splice(0)) w();
  });
  child.stderr.resume();
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal, at: performance.now() })),
  );
  const killer = setTimeout(() => child.kill("SIGKILL"), opts.killAfterMs ?? 120_000);
  void exited.then(() => clearTimeout(killer));
  return {
    child,
    records,
    send: (message) => child.stdin.write(`${JSON.stringify(message)}\n`),
    waitFor(pred, { from = 0, timeoutMs = 30_000 } = {}) {
      return new Promise((resolve, reject) => {
        const deadline = setTimeout(
          () => reject(new Error(`timed out; last records ${JSON.stringify(records.slice(-5))}`)),
          timeoutMs,
        );
        let i = from;
        const check = () => {
          for (; i < records.length; i++) {
            const r = records[i] as RpcRecord;
            if (pred(r)) {
              clearTimeout(deadline);
              resolve(r);
              return;
            }
          }
          waiters.push(check);
        };
        check();
      });
    },
    exited,
    async close() {
      if (child.exitCode === null && child.signalCode === null) child.kill();
      await exited;
    },
  };
}

/** Sends a prompt and waits for its run to settle; returns the `agent_settled` record. */
export function promptSettled(pi: RpcPi, message: string, timeoutMs = 60_000): Promise<RpcRecord> {
  const from = pi.records.length;
  pi.send({ type: "prompt", message });
  return pi.waitFor((r) => r.type === "agent_settled", { from, timeoutMs });
}

/** The session file Pi writes to, from `get_state`. */
export async function sessionFileOf(pi: RpcPi): Promise<string> {
  const from = pi.records.length;
  pi.send({ type: "get_state", id: "state" });
  const state = await pi.waitFor((r) => r.id === "state", { from });
  return (state.data as { sessionFile: string }).sessionFile;
}

/**
 * Pi in RPC mode with the guard from the checkout, in a fresh agent dir (`makeAgentDir`) whose sessions it
 * saves, and with no guard config path from the caller's environment.
 */
export async function startGuardRpcPi(opts: AgentDirOptions & { cwd: string }): Promise<RpcPi> {
  const { cwd, ...dir } = opts;
  const agentDir = await makeAgentDir(dir);
  return startRpcPi({
    agentDir,
    cwd,
    extensions: [join(REPO_ROOT, "src/main/index.ts")],
    args: ["--session-dir", join(agentDir, "s")],
    env: { PI_CONTEXT_GUARD_CONFIG: "" },
  });
}
