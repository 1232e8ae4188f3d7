// Skill routing, the pure part: the routing state the classifier judges, the per-skill and per-namespace
// requests, the load/evict policy, and the bytes that go into the system prompt. No Pi, no IO.
import { clip } from "../shared/text.ts";
import type { ClassifierOutcome, ClassifierRequest, JsonObject, JsonValue } from "../shared/types.ts";

// ---------------------------------------------------------------------------------------------------
// Routing state

/** Most characters of the latest request kept verbatim (a pasted log can be huge). */
const PROMPT_CHARS = 12_000;
/** Most characters of the earlier conversation in the digest. */
export const DIGEST_CHARS = 24_000;
/** Most characters of one earlier message in the digest (head and tail are kept). */
export const MESSAGE_CHARS = 3_000;
/** Most characters of a skill body sent to the classifier. */
const SKILL_BODY_CHARS = 24_000;
/** Tool names listed per namespace in the batched request. */
const NAMESPACE_TOOLS_LISTED = 30;

export type DigestRole = "user" | "assistant" | "summary";

export interface DigestMessage {
  role: DigestRole;
  text: string;
}

export interface RoutingStateInput {
  /** The latest user prompt as Pi will send it (a /skill:name expansion included). */
  prompt: string;
  /** Earlier conversation, newest first: user and assistant text, summaries; no tool I/O. */
  messages: DigestMessage[];
  promptChars?: number;
  digestChars?: number;
  messageChars?: number;
}

export interface RoutingState {
  state: JsonObject;
  /** The skill a `/skill:name` prompt invoked, if any. */
  invokedSkill?: string;
  promptChars: number;
  digestChars: number;
  /** Earlier messages that made it into the digest. */
  messages: number;
}

const SKILL_BLOCK = /^<skill name="([^"]+)" location="[^"]*">\n[\s\S]*?\n<\/skill>(?:\n\n([\s\S]*))?$/;

/**
 * Pi expands `/skill:name args` into `<skill name="…" location="…">…body…</skill>\n\nargs` before the run
 * starts. Returns the skill's name and what the user asked besides it.
 */
export function parseSkillInvocation(prompt: string): { skill?: string; request: string } {
  const m = SKILL_BLOCK.exec(prompt);
  if (!m) return { request: prompt };
  return { skill: m[1], request: (m[2] ?? "").trim() };
}

/** The latest request in its own field, verbatim (up to a cap), and the earlier conversation newest first. */
export function buildRoutingState(input: RoutingStateInput): RoutingState {
  const promptMax = input.promptChars ?? PROMPT_CHARS;
  const digestMax = input.digestChars ?? DIGEST_CHARS;
  const messageMax = input.messageChars ?? MESSAGE_CHARS;
  const invocation = parseSkillInvocation(input.prompt);
  const request = invocation.skill
    ? invocation.request || `(the user invoked the ${invocation.skill} skill without further words)`
    : invocation.request;
  const latest = clip(request, promptMax);
  const conversation: JsonValue[] = [];
  let used = 0;
  for (const m of input.messages) {
    if (used >= digestMax) break;
    let text = m.text.trim();
    if (!text) continue;
    if (m.role === "user") {
      const inv = parseSkillInvocation(text);
      if (inv.skill) text = `[invoked skill ${inv.skill}] ${inv.request}`.trim();
    }
    text = clip(text, Math.min(messageMax, Math.max(200, digestMax - used)));
    used += text.length;
    conversation.push({ role: m.role, text });
  }
  const state: JsonObject = {
    latest_request: latest,
    earlier_conversation_newest_first: conversation,
  };
  return {
    state,
    ...(invocation.skill ? { invokedSkill: invocation.skill } : {}),
    promptChars: latest.length,
    digestChars: used,
    messages: conversation.length,
  };
}

// ---------------------------------------------------------------------------------------------------
// Skills

export interface SkillDoc {
  name: string;
  description: string;
  /** SKILL.md without its frontmatter. */
  body: string;
}

/** SKILL.md without its leading `---` frontmatter block. */
export function stripFrontmatter(text: string): string {
  const normalized = text.replace(/\r\n/g, "\n");
  if (!normalized.startsWith("---\n")) return normalized.trim();
  const end = normalized.indexOf("\n---", 4);
  if (end < 0) return normalized.trim();
  const after = normalized.indexOf("\n", end + 4);
  return (after < 0 ? "" : normalized.slice(after + 1)).trim();
}

export const SKILL_QUESTION_ID = "needed";

export function skillRequest(state: JsonObject, skill: SkillDoc): ClassifierRequest {
  return {
    state: {
      ...state,
      skill: { name: skill.name, description: skill.description, instructions: clip(skill.body, SKILL_BODY_CHARS) },
    },
    questions: {
      [SKILL_QUESTION_ID]: {
        type: "bool",
        instructions:
          "A coding agent can be handed the skill in the state: a set of instructions for one kind of work. Judging by the latest request (and the earlier conversation for context), does the agent need this skill's instructions to do what is asked now?",
        criteria: {
          true: "the latest request is the kind of work these instructions are for, so the agent should have them",
          false: "the latest request is about something else; these instructions would not change what the agent does",
        },
      },
    },
  };
}

// ---------------------------------------------------------------------------------------------------
// Namespaces (one batched request)

export interface NamespaceDoc {
  name: string;
  description?: string;
  /** The namespace's registered tools. */
  tools: string[];
}

export interface NamespaceBatch {
  request: ClassifierRequest;
  /** Question id → namespace name. */
  ids: Record<string, string>;
}

export function namespaceRequest(state: JsonObject, namespaces: NamespaceDoc[]): NamespaceBatch {
  const groups: JsonObject = {};
  const questions: ClassifierRequest["questions"] = {};
  const ids: Record<string, string> = {};
  namespaces.forEach((ns, i) => {
    const listed = ns.tools.slice(0, NAMESPACE_TOOLS_LISTED);
    const more = ns.tools.length - listed.length;
    groups[ns.name] = {
      ...(ns.description ? { description: ns.description } : {}),
      tools: more > 0 ? [...listed, `… and ${more} more`] : listed,
    };
    const id = `ns_${i}`;
    ids[id] = ns.name;
    questions[id] = {
      type: "bool",
      instructions: `Tool group "${ns.name}"${ns.description ? ` (${ns.description})` : ""}: will the agent need to call any of this group's tools to do what the latest request asks?`,
      criteria: {
        true: `the agent will likely call a "${ns.name}" tool for the latest request`,
        false: `the latest request can be done without the "${ns.name}" tools`,
      },
    };
  });
  return { request: { state: { ...state, tool_groups: groups }, questions }, ids };
}

// ---------------------------------------------------------------------------------------------------
// Policy

export interface Held {
  /** Score when it was loaded; null for pins and misses. */
  score: number | null;
  /** User turn it was loaded at. */
  turn: number;
}

export interface PolicyConfig {
  loadThreshold: number;
  /** Most items loaded at one turn; Infinity for no limit. */
  topK: number;
  decayThreshold: number;
}

export interface DecisionInput {
  /** Scores of items that were not loaded, by name; undefined = no usable answer. */
  scores: ReadonlyMap<string, number | undefined>;
  /** Scores of the decay re-check of loaded items (only when one was due). */
  decayScores?: ReadonlyMap<string, number | undefined>;
  loaded: ReadonlyMap<string, Held>;
  pinned: ReadonlySet<string>;
  config: PolicyConfig;
}

export interface Decision {
  load: Array<{ name: string; score: number }>;
  evict: Array<{ name: string; score: number }>;
  /** At or above the threshold but beyond top-K. */
  crowded: string[];
}

/** Descending score, then name, so equal scores always resolve the same way. */
function byScore(a: { name: string; score: number }, b: { name: string; score: number }): number {
  return b.score - a.score || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
}

/**
 * Load the not-yet-loaded items at or above `loadThreshold`, at most `topK` by score; evict loaded items
 * whose decay score fell below `decayThreshold`. Pins are never loaded by score nor evicted; unknown
 * scores (errors, timeouts, malformed answers) neither load nor evict.
 */
export function loadAndEvict(input: DecisionInput): Decision {
  const { loadThreshold, topK, decayThreshold } = input.config;
  const passing: Array<{ name: string; score: number }> = [];
  for (const [name, score] of input.scores) {
    if (input.loaded.has(name) || input.pinned.has(name)) continue;
    if (score === undefined || !Number.isFinite(score)) continue;
    if (score >= loadThreshold) passing.push({ name, score });
  }
  passing.sort(byScore);
  const k = Math.max(0, topK);
  const load = passing.slice(0, k);
  const crowded = passing.slice(k).map((p) => p.name);
  const evict: Array<{ name: string; score: number }> = [];
  for (const [name, score] of input.decayScores ?? []) {
    if (!input.loaded.has(name) || input.pinned.has(name)) continue;
    if (score === undefined || !Number.isFinite(score)) continue;
    if (score < decayThreshold) evict.push({ name, score });
  }
  evict.sort((a, b) => a.score - b.score || (a.name < b.name ? -1 : 1));
  return { load, evict, crowded };
}

/** A decay re-check is due on every `interval`-th user turn (turns count from 1). */
export function decayDue(userTurn: number, interval: number): boolean {
  return interval > 0 && userTurn > 0 && userTurn % interval === 0;
}

/** The probability of a bool answer, or undefined when the outcome has none usable. */
export function boolScore(outcome: ClassifierOutcome | undefined, id: string): number | undefined {
  if (outcome?.status !== "stop") return undefined;
  const a = outcome.answers?.[id];
  if (a?.type !== "bool") return undefined;
  const p = (a as { probability?: unknown }).probability;
  return typeof p === "number" && Number.isFinite(p) && p >= 0 && p <= 1 ? p : undefined;
}

// ---------------------------------------------------------------------------------------------------
// Failures

export type BatchHealth = "ok" | "empty" | "rate-limited" | "failed";

const RATE_LIMIT = /\(429\)|\b429\b|rate.?limit|too many requests|quota/i;

export function isRateLimit(error: string | undefined): boolean {
  return error !== undefined && RATE_LIMIT.test(error);
}

/** An answer with at least one usable probability (a reply whose numbers are all out of range is none). */
function answered(o: ClassifierOutcome): boolean {
  if (o.status !== "stop") return false;
  return Object.keys(o.answers ?? {}).some((id) => boolScore(o, id) !== undefined);
}

/**
 * `ok`: at least one request answered usably. `rate-limited`: nothing answered and some request was
 * refused for rate or quota. `failed`: nothing answered (errors, timeouts, unusable answers). `empty`:
 * nothing was asked.
 */
export function batchHealth(outcomes: readonly ClassifierOutcome[]): BatchHealth {
  if (outcomes.length === 0) return "empty";
  if (outcomes.some(answered)) return "ok";
  if (outcomes.some((o) => o.status === "error" && isRateLimit(o.error))) return "rate-limited";
  return "failed";
}

/** A short, text-free description of a classifier error for notices and telemetry (`http 500`, `timeout`, …). */
export function errorClass(error: string | undefined): string {
  if (!error) return "error";
  const status = /\((\d{3})\)/.exec(error)?.[1] ?? /\b(4\d\d|5\d\d)\b/.exec(error)?.[1];
  if (status) return `http ${status}`;
  if (/abort/i.test(error)) return "aborted";
  if (/timeout|timed out/i.test(error)) return "timeout";
  if (/ECONNREFUSED|ENOTFOUND|fetch failed|network|socket/i.test(error)) return "unreachable";
  if (/did not return|malformed|JSON/i.test(error)) return "bad answer";
  return "error";
}

// ---------------------------------------------------------------------------------------------------
// What the model sees

export interface LoadedSkillDoc {
  name: string;
  filePath: string;
  baseDir: string;
  body: string;
}

/** The system-prompt section that carries the loaded skills' bodies. */
export const LOADED_SKILLS_SECTION = "loaded_skills";

/**
 * The section's content: identical bytes for the same set of skills and bodies, whatever order they were
 * loaded in, so an unchanged set never changes the prompt.
 */
export function renderLoadedSkills(skills: readonly LoadedSkillDoc[]): string {
  if (skills.length === 0) return "";
  const sorted = [...skills].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const blocks = sorted.map(
    (s) =>
      `<skill name="${s.name}" location="${s.filePath}">\nReferences are relative to ${s.baseDir}.\n\n${s.body.trim()}\n</skill>`,
  );
  return [
    "These skills were selected for the current work; their full instructions follow, so there is no need to read their SKILL.md files. Resolve a skill's relative paths against its directory.",
    ...blocks,
  ].join("\n\n");
}

/** Pi's catalog line for one skill, to estimate what leaving it out saves. */
export function catalogChars(skill: { name: string; description: string; filePath: string }): number {
  return (
    "  <skill>\n    <name></name>\n    <description></description>\n    <location></location>\n  </skill>\n".length +
    skill.name.length +
    skill.description.length +
    skill.filePath.length
  );
}
