// Pi's SDK documents `session.dispose()` as the end of a session; it sends extensions no session_shutdown.
// A host process that only disposes must still exit on its own: the guard's threads and ports go with the
// session. The limit, counted from the dispose, only tells a hang from an exit.
import { spawn } from "node:child_process";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";

const CHILD = resolve(import.meta.dirname, "children/dispose-only.ts");
const HANG_MS = 20_000;

function runChild(): Promise<{ code: number | null; hung: boolean; stdout: string; stderr: string }> {
  return new Promise((done) => {
    const child = spawn(process.execPath, [CHILD], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    let hung = false;
    let timer: NodeJS.Timeout | undefined;
    child.stdout.on("data", (d) => {
      stdout += d;
      if (timer === undefined && stdout.includes("disposed"))
        timer = setTimeout(() => {
          hung = true;
          child.kill("SIGKILL");
        }, HANG_MS);
    });
    child.stderr.on("data", (d) => {
      stderr += d;
    });
    child.on("exit", (code) => {
      clearTimeout(timer);
      done({ code, hung, stdout, stderr });
    });
  });
}

describe("an SDK host that disposes the session without session_shutdown", () => {
  it("exits on its own after the guard ran", async () => {
    const run = await runChild();
    expect(run.stdout).toMatch(/disposed; guard records: [1-9]/);
    expect({ hung: run.hung, code: run.code }).toEqual({ hung: false, code: 0 });
  }, 120_000);
});
