// Reads whose file changed on disk after the read, whoever changed it (a formatter, `git checkout`, another
// process): the run's reads get a superseded note for the classifier, earlier runs' reads their stub. The
// core only says which reads to check and whether a read's text still matches the file; the pass worker
// does the file system calls (workers/pass/read-freshness.ts).

import { type CandidateConfig, chunkedFrom, resultCandidate } from "../distill/run.ts";
import { formatCount } from "../shared/text.ts";
import { GUARD_MARKER, type RecordResult, type RunSpan, type SnapEntry, type SnapToolCall } from "../shared/types.ts";

/** The superseded note of a read whose file changed on disk since; its stub asks for a new read. */
export const CHANGED_ON_DISK = "the file changed on disk after this read; read it again for its current content";

/** The record reason of an earlier run's read replaced because its file changed on disk. */
const CHANGED_ON_DISK_REASON = "changed-on-disk";

/** The line that replaces a whole read whose file changed on disk since. */
export function changedOnDiskStub(item: { entryId: string; label: string; chars: number }): string {
  return (
    `${GUARD_MARKER} Omitted the output of ${item.label} (${formatCount(item.chars)} chars): the file changed ` +
    `on disk after this read; read it again for its current content. Old output: ` +
    `recall(${JSON.stringify({ entryId: item.entryId })}).`
  );
}

/** One read to compare with the file as it is now. */
export interface ReadCheck {
  entryId: string;
  /** As the call gave it: relative to the session's working directory, or absolute. */
  path: string;
  /** 0-based index of the read's first file line. */
  startLine: number;
  /** The file text the read returned, without Pi's continuation notice. */
  body: string;
  /** No continuation notice: the read went to the end of the file, so the file must end there too. */
  toEnd: boolean;
  /** When the read's result was made (epoch ms). */
  readAt: number;
}

/** Tells which of the reads no longer match their file; the worker's version reads the disk. */
export type DiskCheck = (reads: ReadCheck[]) => ReadonlySet<string>;

// The notices Pi's read tool appends after the file's lines (see its read tool): a truncated output
// and a range the `limit` stopped early. Their numbers come from the call's offset and limit, which
// may be fractional or negative.
const NUM = String.raw`-?\d+(?:\.\d+)?(?:e[+-]?\d+)?`;
const CONTINUATION = new RegExp(
  String.raw`\n\n\[(?:Showing lines ${NUM}-${NUM} of \d+[^\]\n]*|${NUM} more lines in file\. Use offset=${NUM} to continue\.)\]$`,
);
/** A read whose first line is too long: the output is only a notice, no file text to compare. */
const LONG_FIRST_LINE = /^\[Line \d+ is .* exceeds .* limit\. Use bash: /;

/** The file text of a read's output, or undefined when it holds none to compare. */
export function readBody(text: string): string | undefined {
  if (LONG_FIRST_LINE.test(text)) return undefined;
  const body = text.replace(CONTINUATION, "");
  // A notice alone: the limit selected no line (0, or a fraction below 1), so nothing to compare.
  return body === "" && body !== text ? undefined : body;
}

/**
 * The 0-based first line Pi's read tool shows for the call's `offset`: it starts at `offset - 1` (none
 * below 0) and slices its lines there, which drops a fraction (offset 2.5 starts at line 2). Undefined
 * when the offset is not a number Pi reads from.
 */
export function startLineOf(args: Record<string, unknown>): number | undefined {
  const offset = args.offset;
  if (offset === undefined || offset === null) return 0;
  if (typeof offset !== "number") return undefined;
  const start = Math.trunc(offset ? Math.max(0, offset - 1) : 0);
  return Number.isFinite(start) ? start : undefined;
}

/**
 * Whether the file's current text still holds `body` at `startLine`: the same lines, split as Pi's read
 * splits them. Lines after a partial read's range may have changed; after one `toEnd`, there are none.
 */
export function readMatchesFile(body: string, startLine: number, fileText: string, toEnd: boolean): boolean {
  const want = body.split("\n");
  const have = fileText.split("\n");
  const end = startLine + want.length;
  if (end > have.length || (toEnd && end !== have.length)) return false;
  for (let i = 0; i < want.length; i++) if (have[startLine + i] !== want[i]) return false;
  return true;
}

/** The check of one tool result, when it is a successful text read the guard has not edited. */
function readCheckOf(e: SnapEntry | undefined, calls: ReadonlyMap<string, SnapToolCall>): ReadCheck | undefined {
  if (e?.role !== "toolResult" || e.toolCallId === undefined) return undefined;
  if (!e.visible || e.edited === true || e.isError === true || e.images > 0) return undefined;
  if (e.timestamp === undefined) return undefined;
  const call = calls.get(e.toolCallId);
  if (call?.name !== "read" || (e.toolName !== undefined && e.toolName !== "read")) return undefined;
  // The path exactly as given: the worker resolves it as Pi's read did (a trimmed name is another file).
  const path = call.args?.path;
  const body = readBody(e.text);
  const startLine = startLineOf(call.args ?? {});
  if (typeof path !== "string" || path === "" || body === undefined || startLine === undefined) return undefined;
  return { entryId: e.id, path, startLine, body, toEnd: body === e.text, readAt: e.timestamp };
}

/** The run's successful text reads not already superseded (`skip`), with their result's time. */
export function readsToCheck(entries: SnapEntry[], span: RunSpan, skip: ReadonlyMap<string, string>): ReadCheck[] {
  const out: ReadCheck[] = [];
  for (let i = span.startIndex + 1; i < entries.length; i++) {
    const check = skip.has(entries[i]?.id ?? "") ? undefined : readCheckOf(entries[i], span.calls);
    if (check) out.push(check);
  }
  return out;
}

/** An earlier run's read whose file changed on disk since: replaced by its stub with no judgment. */
export interface StaleRead {
  entryId: string;
  label: string;
  chars: number;
  kind: "large" | "small";
}

/**
 * Reads before the run's prompt (`before`) that the earlier passes left in context and whose file has
 * changed on disk since. What they show is known to be out of date, so no classifier is asked: each goes
 * for its stub, when that is shorter and its cache rewrite pays (finish.ts). `skip`: outputs the pass
 * judges anyway (retries).
 */
export function earlierStaleReads(
  entries: SnapEntry[],
  before: number,
  config: CandidateConfig,
  skip: ReadonlySet<string>,
  check: DiskCheck | undefined,
): StaleRead[] {
  if (!check) return [];
  const calls = new Map<string, SnapToolCall>();
  const reads: ReadCheck[] = [];
  const items = new Map<string, StaleRead>();
  for (let i = 0; i < Math.min(before, entries.length); i++) {
    const e = entries[i] as SnapEntry;
    for (const call of e.toolCalls ?? []) calls.set(call.id, call);
    if (skip.has(e.id)) continue;
    const read = readCheckOf(e, calls);
    // A read kept from judging (keepReads) still goes once its file changed: its text is out of date.
    const candidate = read ? resultCandidate(e, calls, { ...config, keepReads: false }) : undefined;
    if (!read || !candidate) continue;
    const item: StaleRead = {
      entryId: e.id,
      label: candidate.label,
      chars: e.text.length,
      kind: e.text.length >= chunkedFrom(config) ? "large" : "small",
    };
    if (changedOnDiskStub(item).length >= item.chars) continue;
    reads.push(read);
    items.set(e.id, item);
  }
  if (reads.length === 0) return [];
  let changed: ReadonlySet<string>;
  try {
    changed = check(reads);
  } catch {
    // swallow-ok: A disk check that fails marks no read stale: everything is kept.
    return [];
  }
  return [...items.values()].filter((item) => changed.has(item.entryId));
}

/** The record result of an earlier run's read replaced by its stub. */
export function staleReadResult(item: StaleRead): RecordResult {
  return {
    kind: item.kind,
    entryId: item.entryId,
    tool: "read",
    label: item.label,
    outcome: "removed",
    reason: CHANGED_ON_DISK_REASON,
    beforeChars: item.chars,
    afterChars: changedOnDiskStub(item).length,
    jev: ["disk"],
  };
}

/**
 * The superseded notes of the run, with CHANGED_ON_DISK added for the reads `check` finds changed. A
 * failing check changes nothing: a read is stale only when the disk said so.
 */
export function withDiskChanges(
  entries: SnapEntry[],
  span: RunSpan,
  superseded: Map<string, string>,
  check: DiskCheck | undefined,
): Map<string, string> {
  if (!check) return superseded;
  const reads = readsToCheck(entries, span, superseded);
  if (reads.length === 0) return superseded;
  let changed: ReadonlySet<string>;
  try {
    changed = check(reads);
  } catch {
    // swallow-ok: A disk check that fails marks no read stale: everything is kept.
    return superseded;
  }
  if (changed.size === 0) return superseded;
  const out = new Map(superseded);
  for (const r of reads) if (changed.has(r.entryId)) out.set(r.entryId, CHANGED_ON_DISK);
  return out;
}
