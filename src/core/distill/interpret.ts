// From the classifier's answers for one segment to the set of chunks kept. Anything doubtful keeps
// chunks: a wrong "keep" costs some context, a wrong "drop" loses information the agent needed.

import { oneLine } from "../shared/text.ts";
import type { Answer, ClassifierOutcome, SegmentDecision, SegmentReason } from "../shared/types.ts";
import { chunkId } from "./request.ts";

export interface InterpretThresholds {
  keepWholeThreshold: number;
  focusWholeThreshold: number;
  chunkKeepThreshold: number;
  noneThreshold: number;
}

/** A usable probability: a finite number in [0, 1]. Anything else is treated as no answer. */
export function isProbability(p: unknown): p is number {
  return typeof p === "number" && Number.isFinite(p) && p >= 0 && p <= 1;
}

/** `0.15` → `.15`, `0.5` → `.50`, `1` → `1` (as in traces). */
export function formatProbability(p: number): string {
  const hundredths = Math.round(p * 100);
  if (hundredths >= 100) return "1";
  return `.${String(Math.max(0, hundredths)).padStart(2, "0")}`;
}

interface Focus {
  choice: string;
  /** Probability of the chosen option. */
  p: number;
  probabilities: Record<string, number>;
}

function boolProbability(answer: Answer | undefined): number | undefined {
  if (answer?.type !== "bool" || !("probability" in answer)) return undefined;
  return isProbability(answer.probability) ? answer.probability : undefined;
}

/** The focus answer, when it is well-formed and chose one of the offered options. */
function readFocus(answer: Answer | undefined, ids: Set<string>): Focus | undefined {
  if (answer?.type !== "choice") return undefined;
  const { choice, probabilities } = answer as { choice?: unknown; probabilities?: unknown };
  if (typeof choice !== "string" || typeof probabilities !== "object" || probabilities === null) return undefined;
  if (choice !== "whole" && choice !== "none" && !ids.has(choice)) return undefined;
  const probs = probabilities as Record<string, unknown>;
  if (!Object.values(probs).every(isProbability)) return undefined;
  const p = probs[choice];
  return isProbability(p) ? { choice, p, probabilities: probs as Record<string, number> } : undefined;
}

function keepAll(chunkNumbers: number[], reason: SegmentReason, trace: string): SegmentDecision {
  return { keep: new Set(chunkNumbers), reason, trace };
}

/** The chunk the focus answer rates highest, for a weak "none" that left nothing kept. */
function bestFocusChunk(chunkNumbers: number[], focus: Focus): number | undefined {
  let best: number | undefined;
  let bestP = -1;
  for (const n of chunkNumbers) {
    const p = focus.probabilities[chunkId(n)];
    if (p !== undefined && p > bestP) {
      best = n;
      bestP = p;
    }
  }
  return best;
}

/** Decide which chunks of one segment stay, from the classifier's answers. */
export function interpret(outcome: ClassifierOutcome, chunkNumbers: number[], t: InterpretThresholds): SegmentDecision {
  if (outcome.status === "timeout") return keepAll(chunkNumbers, "timeout", "timeout");
  if (outcome.status === "aborted") return keepAll(chunkNumbers, "aborted", "aborted");
  if (outcome.status !== "stop") {
    return keepAll(chunkNumbers, "error", `error: ${oneLine(outcome.error ?? "unknown", 60)}`);
  }
  const answers = outcome.answers ?? {};
  const ids = new Set(chunkNumbers.map(chunkId));
  const kw = boolProbability(answers.keep_whole);
  if (kw === undefined) return keepAll(chunkNumbers, "no-answer", "no-answer: keep_whole");
  const focus = readFocus(answers.focus, ids);
  if (focus === undefined) return keepAll(chunkNumbers, "no-answer", "no-answer: focus");

  const head = `kw${formatProbability(kw)} focus=${focus.choice}:${formatProbability(focus.p)}`;
  const all = (reason: SegmentReason) => keepAll(chunkNumbers, reason, `${head} keep all (${reason})`);
  if (kw >= t.keepWholeThreshold) return all("whole-needed");
  if (focus.choice === "whole" && focus.p >= t.focusWholeThreshold) return all("whole-chosen");

  const keep = new Set<number>();
  for (const n of chunkNumbers) {
    const p = boolProbability(answers[chunkId(n)]);
    // A missing or invalid chunk answer keeps the chunk.
    if (p === undefined || p >= t.chunkKeepThreshold || focus.choice === chunkId(n)) keep.add(n);
  }
  const decided = (reason: SegmentReason) => ({
    keep,
    reason,
    trace: `${head} keep ${keep.size}/${chunkNumbers.length}`,
  });
  if (keep.size === 0) {
    if (focus.choice === "none" && focus.p >= t.noneThreshold) return decided("none-needed");
    if (focus.choice === "whole") return all("whole-chosen");
    // A weak "none": keep the one chunk the focus answer leaned to rather than drop everything.
    const best = bestFocusChunk(chunkNumbers, focus);
    if (best === undefined) return all("no-answer");
    keep.add(best);
  }
  return decided(keep.size === chunkNumbers.length ? "all-chunks" : "chunks");
}

/** A chunk too large to send is kept as it is. */
export function oversizeDecision(chunkNumbers: number[]): SegmentDecision {
  return keepAll(chunkNumbers, "oversize", "oversize: kept without asking");
}
