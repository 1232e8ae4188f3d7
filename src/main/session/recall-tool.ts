// The `recall` tool: returns the raw text of an output the guard replaced, whole, by line window, or
// the lines a regex matches. The regex runs in a worker under a hard time limit.
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";
import { z } from "zod";
import { exchangeTranscript, RECALL_MAX_PATTERN, type TranscriptEntry } from "../../core/recall/recall.ts";
import { type GuardRecord, RECORD_TYPE } from "../../core/shared/types.ts";
import { readContent } from "../pass/snapshot.ts";
import type { TaskRunner } from "../platform/pool.ts";

const RECALL_PARAMETERS = Type.Object({
  entryId: Type.String({ description: "The entry id from a [context-guard] note, e.g. 3f9c2a1b" }),
  pattern: Type.Optional(
    Type.String({
      description:
        "JavaScript regex (≤ 500 chars, /src/i form allowed); returns only matching lines (a very long line is shown around its match)",
    }),
  ),
  offset: Type.Optional(Type.Integer({ description: "First line to return, 1-based (counts matches with pattern)" })),
  limit: Type.Optional(Type.Integer({ description: "Most lines to return" })),
});

/** The tool's registration, without `execute` (the session runs it). */
export const RECALL_TOOL = {
  name: "recall",
  label: "Recall",
  description:
    "Return the full original of a tool output that context-guard shortened or removed. Give the entryId from the [context-guard] note; optionally a regex pattern (matching lines only, with line numbers) or offset/limit for a line window. Output is capped at 2,000 lines / 50 KB.",
  parameters: RECALL_PARAMETERS,
};

const argsSchema = z.object({
  entryId: z.string().trim().min(1, "entryId is empty").max(200, "entryId is too long"),
  pattern: z
    .string()
    .min(1, "pattern is empty")
    .max(RECALL_MAX_PATTERN, `pattern is longer than ${RECALL_MAX_PATTERN} characters`)
    .optional(),
  offset: z.number().int("offset must be a whole number").min(1, "offset starts at 1").optional(),
  limit: z.number().int("limit must be a whole number").min(1, "limit must be at least 1").optional(),
});

export type RecallArgs = z.infer<typeof argsSchema>;

class RecallError extends Error {}

function parseRecallArgs(raw: unknown): RecallArgs {
  const parsed = argsSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new RecallError(`recall: ${issue?.path.join(".") || "arguments"}: ${issue?.message ?? "invalid"}`);
  }
  return parsed.data;
}

interface ImageBlock {
  type: "image";
  data: string;
  mimeType: string;
}

const MAX_IMAGES = 6;

export interface RecallDeps {
  runner: () => TaskRunner | undefined;
  timeoutMs: () => number;
}

/** Time past the pattern's own limit before a recall's worker is stopped from outside. */
const RECALL_BACKSTOP_MS = 10_000;

export async function executeRecall(
  raw: unknown,
  ctx: Pick<ExtensionContext, "sessionManager">,
  deps: RecallDeps,
  signal?: AbortSignal,
): Promise<{ content: Array<{ type: "text"; text: string } | ImageBlock>; details: Record<string, unknown> }> {
  const args = parseRecallArgs(raw);
  const hint = 'Use the entryId from a [context-guard] note, e.g. recall({"entryId":"3f9c2a1b"}).';
  const branch = ctx.sessionManager.getBranch() as unknown as BranchEntry[];
  const index = branch.findIndex((e) => e.id === args.entryId);
  const entry = branch[index];
  if (!entry) throw new RecallError(`recall: no entry "${args.entryId}" on this branch. ${hint}`);
  const message = entry.type === "message" ? entry.message : undefined;
  if (message?.role !== "toolResult" && message?.role !== "user") {
    throw new RecallError(`recall: entry "${args.entryId}" is neither a tool output nor an earlier prompt. ${hint}`);
  }
  const runner = deps.runner();
  if (!runner) throw new RecallError("recall: context-guard is not running in this session");
  const { text, images } = message.role === "user" ? exchangeOf(branch, index) : outputOf(message);
  const timeoutMs = deps.timeoutMs();
  // The sandbox stops the regex itself; the abort is the backstop that kills the worker if it does not.
  // It also counts the recall worker's start (it idles out) and the copy of the output to it, which on a
  // loaded machine took seconds: a tight backstop failed first recalls that the sandbox would have run.
  const hardStop = AbortSignal.timeout(timeoutMs + RECALL_BACKSTOP_MS);
  const out = await runner
    .run(
      "recall",
      { text, pattern: args.pattern, offset: args.offset, limit: args.limit, timeoutMs, entryId: args.entryId },
      { signal: signal ? AbortSignal.any([signal, hardStop]) : hardStop },
    )
    .catch((error: unknown) => {
      if (hardStop.aborted)
        return { ok: false as const, error: "the search ran past its time limit; use a simpler pattern" };
      throw error;
    });
  if (!out.ok) throw new RecallError(`recall: ${out.error}`);
  const content: Array<{ type: "text"; text: string } | ImageBlock> = [{ type: "text", text: out.text }];
  const plain = args.pattern === undefined && args.offset === undefined && args.limit === undefined;
  if (images.length > 0) {
    if (plain) content.push(...images.slice(0, MAX_IMAGES));
    const note = plain
      ? images.length > MAX_IMAGES
        ? `[${images.length} images; the first ${MAX_IMAGES} are attached]`
        : undefined
      : `[this output has ${images.length} image(s); recall without pattern/offset/limit to see them]`;
    if (note) content.push({ type: "text", text: note });
  }
  return {
    content,
    details: { entryId: args.entryId, tool: message.toolName, shown: out.shown, truncated: out.truncated },
  };
}

interface RawMessage {
  role?: string;
  content?: unknown;
  toolName?: string;
}

interface BranchEntry {
  id: string;
  type: string;
  message?: RawMessage;
  customType?: string;
  content?: unknown;
  data?: unknown;
}

const imagesOf = (content: unknown): ImageBlock[] =>
  Array.isArray(content)
    ? (content as Array<{ type?: string }>).filter((b): b is ImageBlock => b?.type === "image")
    : [];

function outputOf(message: RawMessage): { text: string; images: ImageBlock[] } {
  return { text: readContent(message.content).text, images: imagesOf(message.content) };
}

/** The entries an omission hid, from the latest record that omitted this exchange. */
function omittedIds(branch: BranchEntry[], promptId: string): Set<string> | undefined {
  for (let i = branch.length - 1; i >= 0; i--) {
    const e = branch[i] as BranchEntry;
    if (e.type !== "custom" || e.customType !== RECORD_TYPE) continue;
    // Records come back from session files: skip anything damaged.
    const results = (e.data as GuardRecord | undefined)?.results;
    if (!Array.isArray(results)) continue;
    const result = results.find((r) => r?.kind === "exchange" && r.entryId === promptId && Array.isArray(r.omitted));
    if (result?.omitted) return new Set(result.omitted);
  }
  return undefined;
}

function toTranscriptEntry(e: BranchEntry): TranscriptEntry | undefined {
  if (e.type === "custom_message") {
    const c = readContent(e.content);
    return { id: e.id, role: "custom", text: c.text, images: c.images, customType: e.customType };
  }
  if (e.type !== "message" || !e.message?.role) return undefined;
  const c = readContent(e.message.content);
  return {
    id: e.id,
    role: e.message.role,
    text: c.text,
    images: c.images,
    toolCalls: c.toolCalls,
    toolName: e.message.toolName,
  };
}

/** A prompt's exchange: exactly the entries a record omitted, else everything up to the next prompt. */
function exchangeOf(branch: BranchEntry[], index: number): { text: string; images: ImageBlock[] } {
  const prompt = branch[index] as BranchEntry;
  const listed = omittedIds(branch, prompt.id);
  const picked: BranchEntry[] = [prompt];
  for (let i = index + 1; i < branch.length; i++) {
    const e = branch[i] as BranchEntry;
    if (listed) {
      if (listed.has(e.id)) picked.push(e);
    } else if (e.type === "message" && e.message?.role === "user") break;
    else picked.push(e);
  }
  const entries = picked.map(toTranscriptEntry).filter((e): e is TranscriptEntry => e !== undefined);
  const images = picked.filter((e) => e.message?.role === "user").flatMap((e) => imagesOf(e.message?.content));
  return { text: exchangeTranscript(entries), images };
}
