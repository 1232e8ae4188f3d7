// `npm pack` of this checkout, one pack at a time across the test processes: `prepack` builds dist/ and
// strips package.json (`postpack` puts it back from a backup file), so two packs at once race on dist/ and
// can leave package.json stripped. A lock folder next to the system's temp files serializes them (and a
// run of the built checkout, so dist/ is not rebuilt under it); a lock whose owner process is gone is taken over.
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { copyFile, mkdir, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { REPO_ROOT } from "./pi-agent-dir.ts";

const run = promisify(execFile);
const LOCK = join(tmpdir(), `cg-npm-pack-${createHash("sha1").update(REPO_ROOT).digest("hex").slice(0, 12)}.lock`);

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

async function acquire(waitMs: number): Promise<void> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    try {
      await mkdir(LOCK);
      await writeFile(join(LOCK, "pid"), String(process.pid));
      return;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
    }
    const owner = Number(await readFile(join(LOCK, "pid"), "utf8").catch(() => ""));
    if (owner > 0 && !alive(owner)) {
      await rm(LOCK, { recursive: true, force: true });
      continue;
    }
    if (Date.now() > deadline) throw new Error(`npm pack: ${LOCK} still held by pid ${owner || "?"}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** Runs `fn` while no other test process packs the checkout (or runs the built checkout under this lock). */
export async function withCheckoutLock<T>(fn: () => Promise<T>, waitMs = 150_000): Promise<T> {
  await acquire(waitMs);
  try {
    return await fn();
  } finally {
    await rm(LOCK, { recursive: true, force: true });
  }
}

/**
 * The test run this process belongs to: its parent (vitest's main process) by pid and start time, so that
 * a later run that reuses the pid is not taken for this one.
 */
function runKey(): string {
  try {
    const stat = readFileSync(`/proc/${process.ppid}/stat`, "utf8");
    const startTime = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
    return `${process.ppid}-${startTime}`;
  } catch {
    return `${process.pid}`;
  }
}

/**
 * Packs the checkout into `packDir` and returns the tarball's path. The test files of one run share one
 * pack (it builds dist/, the slowest step): the first packs, the others copy its tarball.
 */
export function packCheckout(packDir: string): Promise<string> {
  return withCheckoutLock(async () => {
    const shared = `${LOCK}-run-${runKey()}`;
    const [cached] = await readdir(shared).catch(() => []);
    if (cached === undefined) {
      const env = { ...process.env, PATH: `${join(REPO_ROOT, "node_modules/.bin")}:${process.env.PATH}` };
      const { stdout } = await run("npm", ["pack", "--silent", "--pack-destination", packDir], {
        cwd: REPO_ROOT,
        env,
      });
      const name = stdout.trim().split("\n").at(-1) as string;
      await mkdir(shared, { recursive: true });
      await copyFile(join(packDir, name), join(shared, name));
      return join(packDir, name);
    }
    await copyFile(join(shared, cached), join(packDir, cached));
    return join(packDir, cached);
  });
}
