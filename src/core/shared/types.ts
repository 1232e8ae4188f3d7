// Plain data shapes the pure core works on. src/main/pass/snapshot.ts builds them from Pi's
// session projection; tests and benchmarks build them directly. No Pi types here.

/** A tool call made by an assistant message. */
export interface SnapToolCall {
  id: string;
  name: string;
  args: Record<string, unknown>;
}

/** Roles of model-visible messages that the guard cares about. */
export type SnapRole =
  | "user"
  | "assistant"
  | "toolResult"
  | "custom"
  | "system"
  | "bashExecution"
  | "compactionSummary"
  | "branchSummary";

/**
 * One projected session entry, reduced to what the passes read.
 * `type` is the session entry type (`message`, `custom_message`, `compaction`, `branch_summary`,
 * `context_edit`, `custom`, `model_change`, …). State-only entries have no role.
 */
export interface SnapEntry {
  id: string;
  type: string;
  /** Role of the (first) model-visible message, or of the raw message when the entry is omitted. */
  role?: SnapRole;
  /** False when the projection shows no message for it (state-only entries, omitted entries). */
  visible: boolean;
  /** Model-visible text: the text blocks joined with "\n". */
  text: string;
  /** Model-visible image blocks. */
  images: number;
  /** Assistant: tool calls, in order. */
  toolCalls?: SnapToolCall[];
  /** Assistant: the provider's stop reason, when known. */
  stopReason?: string;
  /** Tool result: the call it answers. */
  toolCallId?: string;
  toolName?: string;
  isError?: boolean;
  /** Tool result: when Pi made the message (epoch ms), just after the tool ran. */
  timestamp?: number;
  /** True when the visible content differs from the raw entry (a context_edit applies). */
  edited?: boolean;
  /** Raw text, only when `edited` (so the pass can tell our edits from other extensions'). */
  rawText?: string;
  /** Raw image count, only when `edited`. */
  rawImages?: number;
  /** Raw images' heads, only when `edited` and the raw entry has images. */
  rawImageHeads?: ImageHead[];
  /** Compaction and branch summaries: their summary text. */
  summary?: string;
  /** custom_message / custom entries. */
  customType?: string;
  /** custom entries: their data (the guard's own records are read from here). */
  data?: unknown;
  /** Model-visible images: MIME type and the start of the base64 data (enough to read the size header). */
  imageHeads?: ImageHead[];
}

/** The start of an image block, for reading its dimensions without moving the whole image. */
export interface ImageHead {
  mimeType: string;
  /** The first IMAGE_HEAD_CHARS characters of the base64 data. */
  head: string;
}

/** Base64 characters kept per image: covers a JPEG whose SOF marker sits after a 64 KB EXIF block. */
export const IMAGE_HEAD_CHARS = 90_000;

/** The marker every replacement the guard writes starts with. */
export const GUARD_MARKER = "[context-guard]";

/** One earlier exchange as shown to the classifier. */
export interface HistoryExchange {
  user: string;
  assistant: string;
}

export interface History {
  summary?: string;
  firstRequest?: string;
  exchanges: HistoryExchange[];
}

/** The run that just finished (or is going on, for checkpoints). */
export interface RunSpan {
  /** Index in the snapshot of the user message that started the run. */
  startIndex: number;
  promptId: string;
  /** The prompt plus every steering message of the run. */
  question: string;
  /** Last assistant text of the run. */
  answer: string;
  /** Earlier assistant text of the run, joined. */
  notes: string;
  history: History;
  /** Tool calls of the run, by id. */
  calls: Map<string, SnapToolCall>;
}

/** A tool result the pass may distill. */
export interface Candidate {
  entryId: string;
  tool: string;
  /** Short human label such as bash `rg -n foo` or read src/a.ts. */
  label: string;
  args: Record<string, unknown>;
  isError: boolean;
  text: string;
}

/** A piece of an output. `start`/`end` are offsets into the output text; `text` is the slice. */
export interface Chunk {
  /** 1-based number across the whole output. */
  n: number;
  start: number;
  end: number;
  text: string;
  /** For grep-style output: the files this chunk has lines from. */
  files?: string[];
  /** 1-based line numbers of the output covered by the chunk (inclusive). */
  firstLine: number;
  lastLine: number;
}

/** Consecutive chunks that go into one classifier request, or an oversize chunk that is never sent. */
export interface Segment {
  chunks: Chunk[];
  oversize: boolean;
}

/** What the classifier is asked: pi-ai's ClassifierContext, structurally. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

export interface BoolQuestion {
  type: "bool";
  instructions: string;
  criteria: { true: string; false: string };
}
export interface ChoiceQuestion {
  type: "choice";
  instructions: string;
  criteria: Record<string, string>;
}
export type Question = BoolQuestion | ChoiceQuestion;

export interface ClassifierRequest {
  state: JsonObject;
  questions: Record<string, Question>;
}

export interface BoolAnswer {
  type: "bool";
  probability: number;
}
export interface ChoiceAnswer {
  type: "choice";
  choice: string;
  probabilities: Record<string, number>;
  confidence?: number;
}
export type Answer = BoolAnswer | ChoiceAnswer | { type: string; [key: string]: unknown };

/** How one classifier request ended, as the pass sees it. */
export interface ClassifierOutcome {
  /**
   * `stop`: answered. `error`: failed. `timeout`: the deadline passed before it answered or started.
   * `aborted`: the pass was stopped from outside (the user's abort, Pi shutting down) first.
   */
  status: "stop" | "error" | "timeout" | "aborted";
  answers?: Record<string, Answer>;
  error?: string;
  inputTokens?: number;
  costUsd?: number;
  ms?: number;
}

/** Reasons a segment (or a result) keeps chunks, as written in records. */
export type SegmentReason =
  | "chunks"
  | "none-needed"
  | "all-chunks"
  | "whole-needed"
  | "whole-chosen"
  | "no-answer"
  | "error"
  | "timeout"
  | "aborted"
  | "oversize";

/** The decision for one segment. */
export interface SegmentDecision {
  /** Chunk numbers kept. */
  keep: Set<number>;
  reason: SegmentReason;
  /** Short trace such as `kw.15 focus=chunk_4:.52 keep 9/29`. */
  trace: string;
}

/** A `context_edit` draft, structurally the same as Pi's ContextEditEntryDraft. */
export interface ContextEditDraft {
  type: "context_edit";
  targetId: string;
  replacement: { content: Array<{ type: "text"; text: string }> } | null;
}

/** A custom entry draft (the guard's record). */
export interface CustomDraft {
  type: "custom";
  customType: string;
  data: unknown;
}

export type ResultOutcome = "distilled" | "removed" | "kept";

/** One item of a record. */
export interface RecordResult {
  kind?: "large" | "small" | "exchange" | "image";
  entryId: string;
  tool?: string;
  label: string;
  outcome: ResultOutcome;
  reason: string;
  beforeChars: number;
  afterChars: number;
  jev: string[];
  omitted?: string[];
}

/** A pass at a run's end, or a checkpoint within the run. */
export type PassPhase = "run-end" | "mid-run";

/** The `context-guard` custom entry's data. */
export interface GuardRecord {
  v: 1;
  phase: PassPhase;
  model: string;
  savedChars: number;
  requests: number;
  inputTokens: number;
  costUsd: number;
  ms: number;
  timedOut: boolean;
  results: RecordResult[];
  /** Kinds whose thresholds this pass moved toward keeping after misses (core/records/misses.ts). */
  learned?: Array<{ kind: string; misses: number; removals: number; level: number }>;
}

export const RECORD_TYPE = "context-guard";

/** An earlier exchange the guard may omit whole: a prompt and every entry up to the next prompt. */
export interface Exchange {
  /** The prompt that opened the exchange. */
  promptId: string;
  /** Index of the prompt in the snapshot. */
  index: number;
  /**
   * Every editable entry of the exchange except the prompt, in order: assistant messages, tool results,
   * custom messages, and user messages sent while the agent was working. Summaries, system and `!` shell
   * messages and state-only entries are not editable and stay where they are.
   */
  entryIds: string[];
  /** The prompt's text (a placeholder for an image-only prompt). */
  prompt: string;
  /** The last assistant text of the exchange. */
  lastAssistant: string;
  /** Labels of the exchange's tool calls, in order. */
  toolLabels: string[];
  /** Model-visible characters of the prompt and the entries in `entryIds`. */
  chars: number;
  /** The prompt plus the entries in `entryIds`. */
  messages: number;
  /** What the prompt shows once the exchange is omitted. */
  stub: string;
  /**
   * Entries that stay when the exchange is omitted: the messages holding the latest view of a file (and
   * their calls' results). Not in `entryIds`, `chars` or `messages`.
   */
  keptIds?: string[];
  /** The files those entries show. */
  keptViews?: string[];
}
