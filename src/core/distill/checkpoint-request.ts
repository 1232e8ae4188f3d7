// The classifier request for one segment of an older output during a run. There is no final answer yet:
// the classifier sees the task, the agent's progress and the calls made since the output, and judges
// whether the agent will still need each chunk to finish.

import { clip } from "../shared/text.ts";
import type { Candidate, Chunk, ClassifierRequest, JsonObject, RunSpan } from "../shared/types.ts";
import { bool, chunkId, type SegmentWording, segmentQuestions, workState } from "./request.ts";
import { safeJson } from "./run.ts";

export interface CheckpointRequestInput {
  span: RunSpan;
  candidate: Candidate;
  chunks: Chunk[];
  segmentIndex: number;
  segmentCount: number;
  totalLines: number;
  /** Labels of the calls made after this output, oldest first (already shortened). */
  laterCalls: string[];
  /** Why the output is out of date, when a later call made it so. */
  superseded?: string;
}

const LIMITS = { args: 600 } as const;

const SITUATION =
  "A coding agent is still working on user_question. Below is the output of a tool it called earlier in this " +
  "run, cut into numbered chunks. From now on the agent will only see the chunks judged still needed; the " +
  "others are hidden from it (it can fetch them again if it must).";
const SITUATION_HISTORY = " earlier_conversation shows the session before this question.";
const FAILED = "This call failed. If the agent has moved on since, the error details are usually not needed any more.";

const WORDING: SegmentWording = {
  keepWhole: bool(
    "Will the agent still need all of this output to finish user_question, so that hiding any chunk would lose " +
      "something it has not acted on yet?",
    "all of it is still needed",
    "some chunks are done with or never mattered",
  ),
  focus: {
    instructions:
      "How much of this output will the agent still need: most of it (whole), none (none), or a few chunks? " +
      "In the last case pick the most important. Lines that are out of date, or that the agent already acted on " +
      "and moved past, are not needed.",
    whole: "most of it is still needed",
    none: "none of it is needed any more",
  },
  chunk: (id) =>
    bool(
      `Will the agent still need lines of ${id} to finish user_question? Out-of-date lines and lines it already ` +
        "acted on do not count.",
      "still needed",
      "no longer needed",
    ),
};

export function buildCheckpointRequest(input: CheckpointRequestInput): ClassifierRequest {
  const { span, candidate, chunks } = input;
  const state = workState(span, "mid-run", {
    situation: SITUATION,
    historyNote: SITUATION_HISTORY,
    runEndNotes: false,
  });
  state.later_tool_calls = input.laterCalls;
  if (input.superseded) state.superseded = input.superseded;
  state.tool = candidate.tool;
  if (candidate.isError) state.tool_status = FAILED;
  state.tool_arguments = clip(safeJson(candidate.args), LIMITS.args);
  const lines = `${input.totalLines} ${input.totalLines === 1 ? "line" : "lines"}`;
  state.output_size =
    input.segmentCount > 1 ? `${lines}, part ${input.segmentIndex + 1} of ${input.segmentCount}` : lines;
  const chunkTexts: JsonObject = {};
  for (const c of chunks) chunkTexts[chunkId(c.n)] = c.text;
  state.chunks = chunkTexts;
  return { state, questions: segmentQuestions(chunks, WORDING) };
}
