// The run-end boundary holds the user for a short budget only (docs/DESIGN.md, nobody waits): what is
// ready within it lands at once; a pass still planning or asking goes on in the background and lands at
// a later boundary, like a handed-over rest.
import { savedChars } from "../../core/records/record.ts";
import type { PassRest } from "../pass/handed-over.ts";
import type { Judged } from "../pass/revalidate.ts";

/** `work`'s value if it settles within `ms` and before `stop` aborts; otherwise `{ done: false }`. */
export function within<T>(
  work: Promise<T>,
  ms: number,
  stop?: AbortSignal,
): Promise<{ done: true; value: T } | { done: false }> {
  return new Promise((resolve, reject) => {
    const end = () => {
      if (timer) clearTimeout(timer);
      stop?.removeEventListener("abort", late);
    };
    const late = () => {
      end();
      resolve({ done: false });
    };
    const timer = Number.isFinite(ms) ? setTimeout(late, ms) : undefined;
    if (stop?.aborted) return late();
    stop?.addEventListener("abort", late, { once: true });
    work.then(
      (value) => {
        end();
        resolve({ done: true, value });
      },
      (error) => {
        end();
        reject(error);
      },
    );
  });
}

/**
 * One pass's two parts as one result: the items the rest decided take their results from it (the first
 * part recorded them kept, `aborted`), and the classifier figures add up. The parts' drafts target
 * disjoint items (core/distill/split.ts).
 */
export function joinParts(first: Judged, rest: Omit<PassRest, "classifier">): Judged {
  const decided = new Map(rest.record.results.map((r) => [r.entryId, r]));
  const results = first.record.results.map((r) => decided.get(r.entryId) ?? r);
  const a = first.record;
  const b = rest.record;
  return {
    edits: [...first.edits, ...rest.edits],
    record: {
      ...a,
      results,
      savedChars: savedChars(results),
      requests: a.requests + b.requests,
      inputTokens: a.inputTokens + b.inputTokens,
      costUsd: a.costUsd + b.costUsd,
      ms: a.ms + b.ms,
      timedOut: a.timedOut || b.timedOut,
    },
  };
}
