// The exit-signal watch must never swallow a signal: in Pi, Pi's own handler exits; in a bare host with
// only our listeners (one per open session), the signal is raised again with Node's default action,
// after every session has been told to stop.
import { spawn } from "node:child_process";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { NODE_BIN, REPO_ROOT } from "../../../kit/pi-agent-dir.ts";

const MODULE = pathToFileURL(join(REPO_ROOT, "src/main/platform/interrupts.ts")).href;

function host(script: string): Promise<{ code: number | null; signal: NodeJS.Signals | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(NODE_BIN, ["--input-type=module", "-e", script], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => {
      out += d;
    });
    const killer = setTimeout(() => child.kill("SIGKILL"), 20_000);
    child.on("exit", (code, signal) => {
      clearTimeout(killer);
      resolve({ code, signal, out });
    });
  });
}

describe("watchExitSignals", () => {
  it("in a host with only our listeners, tells every session and then dies of the signal", async () => {
    const r = await host(`
      import { writeSync } from "node:fs";
      import { watchExitSignals } from ${JSON.stringify(MODULE)};
      watchExitSignals(() => writeSync(1, "a "));
      watchExitSignals(() => writeSync(1, "b "));
      setInterval(() => {}, 1000);
      setTimeout(() => process.kill(process.pid, "SIGTERM"), 50);
    `);
    expect(r.signal).toBe("SIGTERM");
    expect(r.out.trim().split(" ").sort()).toEqual(["a", "b"]);
  });

  it("leaves the exit to a host that handles the signal itself, after telling the session", async () => {
    const r = await host(`
      import { writeSync } from "node:fs";
      import { watchExitSignals } from ${JSON.stringify(MODULE)};
      // As Pi does: the host disposes the session, then exits.
      process.on("SIGTERM", () => setTimeout(() => process.exit(7), 20));
      watchExitSignals(() => writeSync(1, "guard "));
      setInterval(() => {}, 1000);
      setTimeout(() => process.kill(process.pid, "SIGTERM"), 50);
    `);
    expect(r.code).toBe(7);
    expect(r.out).toContain("guard");
  });
});
