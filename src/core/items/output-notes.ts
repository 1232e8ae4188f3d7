// What a pass knows about the run's outputs beyond their text: which are out of date (a later call, or the
// disk, says so) and which lines a later edit matched. plan.ts reads both for every kind of output.

import type { Candidate, Chunk, RunSpan, SnapEntry } from "../shared/types.ts";
import { anchoredChunks, laterEditTexts } from "./edit-anchors.ts";
import { CHANGED_ON_DISK, type DiskCheck, withDiskChanges } from "./stale-reads.ts";
import { supersededIn } from "./superseded.ts";

export interface OutputNotes {
  /** Superseded notes by entry id (CHANGED_ON_DISK for a read whose file changed since). */
  superseded: Map<string, string>;
  /** The oldTexts of later edits of each read's file, by the read's entry id. */
  editTexts: Map<string, string[]>;
}

export function outputNotes(
  entries: SnapEntry[],
  span: RunSpan,
  diskCheck?: DiskCheck,
  /** supersededIn's answer when the caller keeps it (core/distill/plan-index.ts). */
  superseded: Map<string, string> = supersededIn(entries, span),
): OutputNotes {
  return {
    superseded: withDiskChanges(entries, span, superseded, diskCheck),
    editTexts: laterEditTexts(entries, span),
  };
}

/** Whether a read changed on disk since (its replacement asks for a new read). */
export function onDisk(notes: OutputNotes | undefined, entryId: string): boolean {
  return notes?.superseded.get(entryId) === CHANGED_ON_DISK;
}

/** What a planned output carries from the notes: the disk flag and the chunks never dropped. */
export function plannedMarks(
  notes: OutputNotes | undefined,
  candidate: Candidate,
  chunks: readonly Pick<Chunk, "n" | "start" | "end">[],
): { changedOnDisk?: true; anchors?: number[] } {
  const out: { changedOnDisk?: true; anchors?: number[] } = {};
  if (onDisk(notes, candidate.entryId)) out.changedOnDisk = true;
  const editTexts = candidate.tool === "read" ? notes?.editTexts.get(candidate.entryId) : undefined;
  const anchors = editTexts ? anchoredChunks(candidate.text, chunks, editTexts) : [];
  if (anchors.length > 0) out.anchors = anchors;
  return out;
}
