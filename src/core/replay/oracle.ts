// The replay's reference judge: one that knows what the session does next. It answers a pruning request as
// the classifier would, with each piece kept exactly when the needed-later proxy finds the later
// conversation using it, so the same edit mechanics (points, stubs, gates, hand-over, cache model) run
// with a perfect judge of the proxy's kind. It removes nothing the proxy finds used, so it is a ceiling at
// no harm, not on money: keeping a piece a stub or a recall would serve costs it (docs/replay.md). What it
// cannot see (tokens visible elsewhere in the context) it counts as used.
import { answersFrom, requestPieces } from "../classifier/lexical.ts";
import { classifyRouting } from "../classifier/lexical-routing.ts";
import type { Answer, ClassifierRequest } from "../shared/types.ts";
import type { SuspectFinder } from "./proxy.ts";

/** The probabilities the oracle gives a used piece and an unused one. */
export const ORACLE_KEEP = 0.99;
export const ORACLE_DROP = 0.01;

const NOTHING_VISIBLE: ReadonlySet<string> = new Set();

/** Answers `request`, asked at branch position `after`, from what the conversation after it uses. */
export function oracleAnswers(
  request: ClassifierRequest,
  finder: SuspectFinder,
  after: number,
): Record<string, Answer> {
  const routed = classifyRouting(request);
  if (routed) return routed;
  const p = new Map<string, number>();
  for (const [id, text] of requestPieces(request)) {
    const suspect = finder.judge({
      key: id,
      kind: "chunk",
      entryId: id,
      pass: 0,
      after,
      text,
      calls: [],
      visible: NOTHING_VISIBLE,
    });
    p.set(id, suspect?.tier === "likely-needed" ? ORACLE_KEEP : ORACLE_DROP);
  }
  return answersFrom(request, p);
}
