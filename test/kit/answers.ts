// Classifier stand-ins that answer every request at once.
import type { ClassifierOutcome, ClassifierRequest } from "../../src/core/shared/types.ts";
import type { ClassifyFn } from "../../src/main/pass/classify-queue.ts";

/** No output is needed whole, no chunk is the focus, and chunk N is kept when `keep(N)` says so. */
export function chunkKeeper(keep: (n: number) => boolean): ClassifyFn {
  return async (request) => {
    const answers: NonNullable<ClassifierOutcome["answers"]> = {
      keep_whole: { type: "bool", probability: 0.05 },
      focus: { type: "choice", choice: "none", probabilities: { none: 0.9 } },
    };
    for (const id of Object.keys(request.questions))
      if (id.startsWith("chunk_")) answers[id] = { type: "bool", probability: keep(Number(id.slice(6))) ? 0.95 : 0.05 };
    return { status: "stop", answers };
  };
}

/** Needs none of any output. */
export const keepNothing = chunkKeeper(() => false);

/** The answer that judges everything clearly not needed: every bool question 0.02, every choice "none". */
export function dropAllAnswer(request: ClassifierRequest): ClassifierOutcome {
  const answers: NonNullable<ClassifierOutcome["answers"]> = {};
  for (const [id, q] of Object.entries(request.questions)) {
    answers[id] =
      q.type === "bool"
        ? { type: "bool", probability: 0.02 }
        : { type: "choice", choice: "none", probabilities: { none: 0.95 } };
  }
  return { status: "stop", answers };
}

/** Judges everything clearly not needed (dropAllAnswer, as a classifier). */
export const dropAll: ClassifyFn = async (request: ClassifierRequest): Promise<ClassifierOutcome> =>
  dropAllAnswer(request);
