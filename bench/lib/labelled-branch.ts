// A labelled removal's session file as the labelled-set benches read it (keep-rules.ts, trade-curve.ts).
import type { SessionEntry } from "@earendil-works/pi-coding-agent";
import type { SnapEntry } from "../../src/core/shared/types.ts";
import { SnapshotBuilder } from "../../src/main/pass/snapshot.ts";
import type { SessionFile } from "../../src/main/replay/reader.ts";

/** The branch as the pass snapshots it, every entry with its messages. */
export function snapshot(branch: readonly SessionEntry[]): SnapEntry[] {
  return new SnapshotBuilder().entries(
    branch.map((e) => ({ sourceEntry: e, messages: e.type === "message" ? [e.message] : [] })),
  );
}

/** The branch index of the entry on a file line (a label names entries by line). */
export function indexOfLine(file: SessionFile, line: number): number {
  const i = file.branch.findIndex((e) => file.lineOf.get(e) === line);
  if (i === -1) throw new Error(`${file.path}: no entry on line ${line}`);
  return i;
}
