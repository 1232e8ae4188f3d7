// The Node flags a worker thread is started with. Pi's own flags are passed on (a loader, `--conditions`),
// but a worker refuses per-process ones (`--expose-gc`, `--max-old-space-size=…`, `--stack-size=…`) with
// ERR_WORKER_INVALID_EXEC_ARGV, and one refused flag stops every worker of the pool. Which flags are
// refused depends on the Node version, so each is tried on a real Worker rather than listed here.
import { Worker } from "node:worker_threads";

/** `argv` split into flags, each with the separate values that follow it (`--require x.cjs`). */
export function flagGroups(argv: readonly string[]): string[][] {
  const groups: string[][] = [];
  for (const arg of argv) {
    const last = groups.at(-1);
    if (last && !arg.startsWith("-")) last.push(arg);
    else groups.push([arg]);
  }
  return groups;
}

/** The flags of `argv` that `accepts` takes, each with its values, in their order. */
export function acceptedFlags(argv: readonly string[], accepts: (flag: readonly string[]) => boolean): string[] {
  return flagGroups(argv)
    .filter((g) => accepts(g))
    .flat();
}

/** A value a worker's data cannot carry: the constructor throws after checking the flags, before a thread starts. */
const UNCLONABLE = () => undefined;

/** Whether a worker starts with these flags. No thread is started to find out. */
export function workerAccepts(flags: readonly string[]): boolean {
  try {
    // A Node that starts the thread before cloning the data gets an empty one, stopped at once.
    void new Worker("", { eval: true, execArgv: [...flags], workerData: UNCLONABLE, stdout: true, stderr: true })
      .terminate()
      // swallow-ok: the probe thread is stopped unstarted; its end tells nothing.
      .catch(() => undefined);
    return true;
  } catch (error) {
    return (error as { code?: string }).code !== "ERR_WORKER_INVALID_EXEC_ARGV";
  }
}

/** `argv` without the flags a worker refuses: all of it when a worker takes it whole (one try). */
export function workerExecArgv(argv: readonly string[]): string[] {
  return workerAccepts(argv) ? [...argv] : acceptedFlags(argv, workerAccepts);
}
