// The replay (`context-guard replay`) as library functions. Its reader and driver run on Pi's runtime,
// which loads on the first call, not when the package is imported.
import type * as Command from "./command.ts";
import type { ChosenClassifier, ReplayFilesOptions, ReplayFilesResult } from "./command.ts";

export type { ChosenClassifier, ReplayFilesOptions, ReplayFilesResult };

const command = () => import("./command.ts");

/** A session file, or every `.jsonl` under a folder (sorted). */
export async function findSessionFiles(target: string): Promise<string[]> {
  return (await command()).findSessionFiles(target);
}

/** The classifier a replay asks: `local/lexical`, or a hosted one through Pi's client with its answers cached on disk. */
export async function chooseClassifier(
  input: Parameters<typeof Command.chooseClassifier>[0],
): Promise<ChosenClassifier> {
  return (await command()).chooseClassifier(input);
}

/** Replays the session files in order and reports what the guard would have done; the files are unchanged. */
export async function replayFiles(paths: string[], options: ReplayFilesOptions): Promise<ReplayFilesResult> {
  return (await command()).replayFiles(paths, options);
}

/** Writes a replay's HTML report; returns its absolute path. */
export async function writeReport(result: ReplayFilesResult, out: string): Promise<string> {
  return (await command()).writeReport(result, out);
}
