// The exit-signal watch must never swallow a signal: in Pi, Pi's own handler exits; in a bare host with
// only our listener, the signal is raised again with Node's default action, after every session has been
// told to stop. However many sessions are open, and however many copies of the module they loaded (Pi
// imports an extension without a module cache), the process holds one listener per signal.
import { spawn } from "node:child_process";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { NODE_BIN, REPO_ROOT } from "../../../kit/pi-agent-dir.ts";

const MODULE = pathToFileURL(join(REPO_ROOT, "src/main/platform/interrupts.ts")).href;
/** A second instance of the module, as a session whose extension Pi loaded afresh holds. */
const COPY = `${MODULE}?copy`;

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

  it("12 sessions over two copies of the module: one listener per signal, no warning; the last close removes it", async () => {
    const r = await host(`
      import { watchExitSignals } from ${JSON.stringify(MODULE)};
      import { watchExitSignals as watchInCopy } from ${JSON.stringify(COPY)};
      const warnings = [];
      process.on("warning", (w) => warnings.push(w.name));
      const count = () => ["SIGTERM", "SIGHUP"].map((s) => process.listenerCount(s));
      const before = count();
      const closes = [];
      for (let i = 0; i < 12; i++) closes.push((i % 2 ? watchInCopy : watchExitSignals)(() => {}));
      const open = count();
      for (const close of closes.slice(0, 11)) close();
      const one = count();
      closes[11]();
      const after = count();
      // Node emits the warning on a later tick.
      setTimeout(() => process.stdout.write(JSON.stringify({ before, open, one, after, warnings })), 50);
    `);
    expect(r.code).toBe(0);
    const seen = JSON.parse(r.out) as Record<string, unknown>;
    expect(seen).toEqual({ before: [0, 0], open: [1, 1], one: [1, 1], after: [0, 0], warnings: [] });
  });

  it("12 sessions over two copies: a SIGTERM tells each once, then the host dies of it", async () => {
    const r = await host(`
      import { writeSync } from "node:fs";
      import { watchExitSignals } from ${JSON.stringify(MODULE)};
      import { watchExitSignals as watchInCopy } from ${JSON.stringify(COPY)};
      for (let i = 0; i < 12; i++) (i % 2 ? watchInCopy : watchExitSignals)(() => writeSync(1, i + " "));
      setInterval(() => {}, 1000);
      setTimeout(() => process.kill(process.pid, "SIGTERM"), 50);
    `);
    expect(r.signal).toBe("SIGTERM");
    expect(
      r.out
        .trim()
        .split(" ")
        .map(Number)
        .sort((a, b) => a - b),
    ).toEqual(Array.from({ length: 12 }, (_, i) => i));
  });
});
