// Runs a user-supplied regex over lines inside a `node:vm` context with a hard timeout. The context is
// empty (no require, no process, no globals of this realm) and code generation from strings is off, so a
// pattern is only ever data for `RegExp`; a catastrophic pattern is interrupted by the timeout. This runs
// in a worker thread, so even the timeout never blocks Pi's main thread.
import vm from "node:vm";

const SCRIPT = new vm.Script(
  `(() => {
    const re = new RegExp(source, flags);
    const hits = [];
    for (let i = 0; i < lines.length; i++) if (re.test(lines[i])) hits.push(i);
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

/** Indices of the lines the pattern matches. Throws PatternError for an invalid or too slow pattern. */
export function matchLines(lines: string[], source: string, flags: string, timeoutMs: number): number[] {
  const ctx = sandbox();
  ctx.lines = lines;
  ctx.source = source;
  ctx.flags = flags;
  try {
    const hits = SCRIPT.runInContext(ctx, { timeout: timeoutMs, breakOnSigint: false }) as unknown;
    // Copy out of the sandbox realm so callers get a plain array of this realm.
    return Array.from(hits as ArrayLike<number>, Number);
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
