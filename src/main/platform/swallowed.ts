// Errors the guard catches and goes on past. None disappears: the latest are kept for `/guard trace`
// (where and what), and each open session's telemetry gets a `caught` line (where and the error's class,
// never its text). Pi's thread only; code on other threads returns its failures as values.

export interface Swallowed {
  /** The site, e.g. `warm-up.snapshot`. */
  where: string;
  /** `TypeError: x is undefined`, one line. */
  message: string;
  /** The error's class or code (`TypeError`, `ENOENT`): what telemetry may hold. */
  kind: string;
  /** Times this site failed with this message. */
  count: number;
}

/** Distinct failures kept; the oldest goes first. */
const MAX_KEPT = 20;
const MAX_MESSAGE = 300;
const kept = new Map<string, Swallowed>();
const sinks = new Set<(caught: Swallowed) => void>();
let sending = false;

/** Leaves a trace of an error caught at `where` that the code goes on past. Never throws. */
export function traceSwallowed(where: string, error: unknown): void {
  const kind = errorKind(error);
  const text = errorText(error).replace(/\s+/g, " ").trim();
  const message = (text.startsWith(kind) ? text : `${kind}: ${text}`).slice(0, MAX_MESSAGE);
  const key = `${where}\n${message}`;
  const known = kept.get(key);
  kept.delete(key);
  const caught = { where, message, kind, count: (known?.count ?? 0) + 1 };
  kept.set(key, caught);
  if (kept.size > MAX_KEPT) kept.delete(kept.keys().next().value as string);
  // A sink that fails in turn (telemetry's own record) is kept above, not sent round again.
  if (sending) return;
  sending = true;
  try {
    for (const sink of sinks) sink(caught);
  } catch (failure) {
    traceSwallowed("swallowed.sink", failure);
  } finally {
    sending = false;
  }
}

/** The failures kept, oldest first. */
export function swallowedErrors(): readonly Swallowed[] {
  return [...kept.values()];
}

/** Calls `sink` at every later failure; returns the unsubscribe. */
export function onSwallowed(sink: (caught: Swallowed) => void): () => void {
  sinks.add(sink);
  return () => sinks.delete(sink);
}

/** Forgets the kept failures (tests). */
export function clearSwallowed(): void {
  kept.clear();
}

function errorKind(error: unknown): string {
  if (!(error instanceof Error)) return typeof error;
  const code = (error as NodeJS.ErrnoException).code;
  return typeof code === "string" && /^[A-Z0-9_]+$/.test(code) ? code : error.name || "Error";
}

function errorText(error: unknown): string {
  try {
    return error instanceof Error ? error.message : String(error);
  } catch {
    // swallow-ok: a value whose text throws (a null-prototype object) is named by its kind alone.
    return "(no text)";
  }
}
