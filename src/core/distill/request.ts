// The classifier request for one segment of one tool output at run end. The questions are kept short
// because one bool per chunk is repeated up to maxChunksPerSegment times.

import { clip, clipStart } from "../shared/text.ts";
import type {
  BoolQuestion,
  Candidate,
  ChoiceQuestion,
  Chunk,
  ClassifierRequest,
  History,
  JsonObject,
  PassPhase,
  Question,
  RunSpan,
} from "../shared/types.ts";
import { safeJson } from "./run.ts";

export interface RunEndRequestInput {
  span: RunSpan;
  candidate: Candidate;
  /** This segment's chunks. */
  chunks: Chunk[];
  /** 0-based index of this segment among the output's segments. */
  segmentIndex: number;
  segmentCount: number;
  /** Lines in the whole output. */
  totalLines: number;
  /** Why the output is out of date (a read whose file changed on disk since). */
  superseded?: string;
}

const LIMITS = { question: 4000, answer: 6000, notes: 2000, args: 600, latestNote: 2000, earlierNotes: 2000 } as const;

const SITUATION =
  "A coding agent has finished its reply (final_answer) to user_question. Below is a single output of a tool it ran " +
  "for that work, cut into numbered chunks. Afterwards the agent will only see the chunks judged worth keeping; " +
  "the others are hidden from it.";
const SITUATION_HISTORY =
  " earlier_conversation shows what happened in the session before this question; the agent will most " +
  "likely go on with that work next.";

const FAILED_STATUS =
  "This call failed. If final_answer shows the agent moved past the failure, the details of the error are " +
  "usually not needed any more.";

export function chunkId(n: number): string {
  return `chunk_${n}`;
}

/** Whether there is any earlier conversation to show. */
export function hasHistory(h: History): boolean {
  return h.summary !== undefined || h.firstRequest !== undefined || h.exchanges.length > 0;
}

/** The earlier conversation with empty parts left out. */
export function earlierConversation(h: History): JsonObject {
  const out: JsonObject = {};
  if (h.summary) out.summary = h.summary;
  if (h.firstRequest) out.first_request = h.firstRequest;
  if (h.exchanges.length > 0) out.recent_exchanges = h.exchanges.map((x) => ({ user: x.user, assistant: x.assistant }));
  return out;
}

export interface WorkStateOptions {
  /** The fixed explanation, and the sentence added when there is earlier conversation. */
  situation: string;
  historyNote: string;
  /** At run end, also send the agent's earlier notes of the run. */
  runEndNotes: boolean;
}

/**
 * The current work every request carries: the situation, the earlier conversation, the question, and
 * the final answer at run end or the agent's progress mid-run.
 */
export function workState(span: RunSpan, phase: PassPhase, options: WorkStateOptions): JsonObject {
  const withHistory = hasHistory(span.history);
  const state: JsonObject = { situation: withHistory ? options.situation + options.historyNote : options.situation };
  if (withHistory) state.earlier_conversation = earlierConversation(span.history);
  state.user_question = clip(span.question, LIMITS.question);
  if (phase === "run-end") {
    state.final_answer = clip(span.answer, LIMITS.answer);
    if (options.runEndNotes && span.notes.trim() !== "")
      state.agent_notes_during_the_run = clip(span.notes, LIMITS.notes);
  } else {
    const progress: JsonObject = { latest_note: clip(span.answer, LIMITS.latestNote) };
    if (span.notes.trim() !== "") progress.earlier_notes = clipStart(span.notes, LIMITS.earlierNotes);
    state.agent_progress = progress;
  }
  return state;
}

function outputSize(totalLines: number, segmentIndex: number, segmentCount: number): string {
  const lines = `${totalLines} ${totalLines === 1 ? "line" : "lines"}`;
  return segmentCount > 1 ? `${lines}, part ${segmentIndex + 1} of ${segmentCount}` : lines;
}

export function bool(instructions: string, yes: string, no: string): BoolQuestion {
  return { type: "bool", instructions, criteria: { true: yes, false: no } };
}

/** The wording of a segment's questions; the ids and types are the same for every phase. */
export interface SegmentWording {
  keepWhole: BoolQuestion;
  focus: { instructions: string; whole: string; none: string };
  chunk: (id: string) => BoolQuestion;
}

/** keep_whole, focus (whole, none or the key chunk) and one bool chunk_N per chunk. */
export function segmentQuestions(chunks: Chunk[], wording: SegmentWording): Record<string, Question> {
  const criteria: Record<string, string> = { whole: wording.focus.whole, none: wording.focus.none };
  for (const c of chunks) criteria[chunkId(c.n)] = `a few chunks; ${chunkId(c.n)} is the key one`;
  const focus: ChoiceQuestion = { type: "choice", instructions: wording.focus.instructions, criteria };
  const out: Record<string, Question> = { keep_whole: wording.keepWhole, focus };
  for (const c of chunks) out[chunkId(c.n)] = wording.chunk(chunkId(c.n));
  return out;
}

/** Run-end wording; with history the questions also weigh the ongoing work. */
function runEndWording(withHistory: boolean): SegmentWording {
  const purpose = withHistory ? "final_answer or the ongoing work in earlier_conversation" : "final_answer";
  return {
    keepWhole: bool(
      `Is all of this output still needed for ${purpose}, so that hiding any chunk would lose evidence ` +
        "or details a likely next step needs?",
      "every part of the output is still needed",
      "some chunks could be hidden without loss",
    ),
    focus: {
      instructions:
        `How much of this output is used by ${purpose}: most of it (whole), none of it (none), ` +
        "or only a few chunks? In the last case, pick the most important of them.",
      whole: "most of the output is used",
      none: "nothing in the output is used",
    },
    chunk: (id) =>
      bool(
        withHistory
          ? `Does ${id} hold lines final_answer is based on, or that the user's ongoing task in ` +
              "earlier_conversation will need, even if user_question is on another topic?"
          : `Does ${id} hold lines final_answer is based on, or that a likely next step would need?`,
        "it has such lines",
        "it has none",
      ),
  };
}

/** One request per segment: the run's question and answer, the call, and this segment's chunks. */
export function buildRunEndRequest(input: RunEndRequestInput): ClassifierRequest {
  const { span, candidate, chunks } = input;
  const withHistory = hasHistory(span.history);
  const state = workState(span, "run-end", { situation: SITUATION, historyNote: SITUATION_HISTORY, runEndNotes: true });
  if (input.superseded) state.superseded = input.superseded;
  state.tool = candidate.tool;
  state.tool_arguments = clip(safeJson(candidate.args), LIMITS.args);
  if (candidate.isError) state.tool_status = FAILED_STATUS;
  state.output_size = outputSize(input.totalLines, input.segmentIndex, input.segmentCount);
  const chunkTexts: JsonObject = {};
  for (const c of chunks) chunkTexts[chunkId(c.n)] = c.text;
  state.chunks = chunkTexts;
  return { state, questions: segmentQuestions(chunks, runEndWording(withHistory)) };
}
