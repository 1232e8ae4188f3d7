// Runs a user-supplied regex over lines inside a `node:vm` context with a hard timeout. The context is
// empty (no require, no process, no globals of this realm) and code generation from strings is off, so a
// pattern is only ever data for `RegExp`; a catastrophic pattern is interrupted by the timeout. This runs
// in a worker thread, so even the timeout never blocks Pi's main thread. Whole lines are matched, however
// long: the timeout, not a cut of the line, is what bounds the work.
import vm from "node:vm";

// Flat triples (line index, match index, match length) for the lines that match. `lastIndex` is reset
// per line, so a stateful flag (g, y) cannot carry a position from one line to the next.
const SCRIPT = new vm.Script(
  `(() => {
    const re = new RegExp(source, flags);
    const hits = [];
    for (let i = 0; i < lines.length; i++) {
      re.lastIndex = 0;
      const m = re.exec(lines[i]);
      if (m !== null) hits.push(i, m.index, m[0].length);
    }
    return hits;
  })()`,
  { filename: "recall-pattern.vm" },
);

let context: vm.Context | undefined;

function sandbox(): vm.Context {
  context ??= vm.createContext(Object.create(null), {
    name: "recall-sandbox",
    codeGeneration: { strings: false, wasm: false },
  });
  return context;
}

export class PatternError extends Error {}

/** Where a pattern first matched a line. */
export interface LineMatch {
  /** 0-based index of the line. */
  line: number;
  /** Offset of the match in the line, and its length (0 for an empty match). */
  index: number;
  length: number;
}

/** The first match in each line the pattern matches. Throws PatternError for an invalid or too slow pattern. */
export function matchPositions(lines: string[], source: string, flags: string, timeoutMs: number): LineMatch[] {
  const ctx = sandbox();
  ctx.lines = lines;
  ctx.source = source;
  ctx.flags = flags;
  try {
    const hits = SCRIPT.runInContext(ctx, { timeout: timeoutMs, breakOnSigint: false }) as unknown;
    // Copy out of the sandbox realm so callers get plain values of this realm.
    const flat = Array.from(hits as ArrayLike<number>, Number);
    const out: LineMatch[] = [];
    for (let i = 0; i + 2 < flat.length; i += 3) {
      out.push({ line: flat[i] as number, index: flat[i + 1] as number, length: flat[i + 2] as number });
    }
    return out;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    if (/timed out/i.test(message)) {
      throw new PatternError(`the pattern took longer than ${timeoutMs} ms; use a simpler pattern`);
    }
    throw new PatternError(`invalid pattern: ${message}`);
  } finally {
    ctx.lines = undefined;
    ctx.source = undefined;
    ctx.flags = undefined;
  }
}

/** Indices of the lines the pattern matches. Throws PatternError for an invalid or too slow pattern. */
export function matchLines(lines: string[], source: string, flags: string, timeoutMs: number): number[] {
  return matchPositions(lines, source, flags, timeoutMs).map((m) => m.line);
}
