// The key facts the guard's stub lists for a labelled removal, rebuilt as the guard writes them today
// (render.ts, small.ts, exchanges.ts budgets): used to read a needed removal against its stub.
import { chunkOutput } from "../../src/core/distill/chunk.ts";
import type { RemovedPiece } from "../../src/core/replay/proxy.ts";
import { factTokens, keyFacts } from "../../src/core/shared/key-facts.ts";
import type { LabelledRemoval } from "../../test/kit/labelled-removals.ts";

/** The facts the guard's stub for this removal would list (render.ts, small.ts, exchanges.ts budgets). */
export function stubFacts(piece: RemovedPiece, removal: LabelledRemoval, original: string | undefined): string[] {
  if (removal.kind === "exchange") return keyFacts([piece.text], { maxChars: 300 });
  if (removal.removed === "all" || original === undefined) {
    const budget = piece.text.length < 4000 ? Math.min(300, Math.floor(piece.text.length / 4)) : 300;
    return keyFacts([piece.text], { maxChars: budget });
  }
  const chunks = chunkOutput(original);
  const gone = new Set(removal.removed);
  const kept = factTokens(chunks.filter((c) => !gone.has(c.n)).map((c) => c.text));
  const listed = new Set<string>();
  const out: string[] = [];
  let run: string[] = [];
  const flush = () => {
    if (run.length === 0) return;
    const facts = keyFacts(run, { maxChars: 100, skip: (f) => listed.has(f) || kept.has(f) });
    for (const f of facts) listed.add(f);
    out.push(...facts);
    run = [];
  };
  for (const c of chunks) {
    if (gone.has(c.n)) run.push(c.text);
    else flush();
  }
  flush();
  return out;
}
