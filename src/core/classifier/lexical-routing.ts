// The embedded scorer's answers to routing requests: does the latest request need this skill, will it
// call this tool group. Word overlap between what the user asks and what the skill or group says it is
// for: its name counts most, then its description, its instructions least (they share much vocabulary
// with any coding request). Words are cut to a short stem so "deploying" meets "deployment".
import { wordCounts } from "../shared/tokens.ts";
import type { Answer, ClassifierRequest, JsonObject, JsonValue } from "../shared/types.ts";

/** Weight of a request word found in the skill's name, description, instructions. */
const NAME_WEIGHT = 3;
const DESCRIPTION_WEIGHT = 2;
const BODY_WEIGHT = 0.5;
/** Earlier conversation counts this much of the latest request. */
const EARLIER_WEIGHT = 0.25;
/** The logistic curve from score to probability: its midpoint and steepness. */
const MIDPOINT = 1.6;
const STEEPNESS = 2.2;
const STEM = 6;

const isObject = (v: JsonValue | undefined): v is JsonObject =>
  typeof v === "object" && v !== null && !Array.isArray(v);

function textOf(v: JsonValue | undefined): string {
  if (v === undefined || v === null) return "";
  if (typeof v === "string") return v;
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  if (Array.isArray(v)) return v.map(textOf).join("\n");
  return Object.values(v).map(textOf).join("\n");
}

function stems(text: string): Map<string, number> {
  const out = new Map<string, number>();
  // Names like `k8s-deploy` and `browser_click` are words too.
  for (const [w, n] of wordCounts(text.replace(/[-_]/g, " "))) {
    const s = (w.length > 3 && !w.endsWith("ss") ? w.replace(/s$/, "") : w).slice(0, STEM);
    out.set(s, (out.get(s) ?? 0) + n);
  }
  return out;
}

function requestStems(state: JsonObject): Map<string, number> {
  const out = new Map<string, number>();
  for (const s of stems(textOf(state.latest_request)).keys()) out.set(s, 1);
  const earlier = state.earlier_conversation_newest_first;
  const recent = Array.isArray(earlier) ? earlier.slice(0, 2) : [];
  for (const s of stems(textOf(recent)).keys()) if (!out.has(s)) out.set(s, EARLIER_WEIGHT);
  return out;
}

/** Probability that the work described by `request` needs what `name`, `description` and `body` describe. */
export function relevance(request: Map<string, number>, name: string, description: string, body: string): number {
  const fields: Array<[Map<string, number>, number]> = [
    [stems(name), NAME_WEIGHT],
    [stems(description), DESCRIPTION_WEIGHT],
    [stems(body), BODY_WEIGHT],
  ];
  let score = 0;
  let asked = 0;
  for (const [s, w] of request) {
    asked += w;
    let best = 0;
    for (const [field, weight] of fields) if (field.has(s)) best = Math.max(best, weight);
    score += w * best;
  }
  // A long request matches more words by chance: normalise by its length, gently.
  const normalised = asked > 0 ? score / Math.sqrt(asked) : 0;
  const p = 0.04 + 0.92 / (1 + Math.exp(-STEEPNESS * (normalised - MIDPOINT)));
  return Math.round(p * 10_000) / 10_000;
}

/**
 * Answers a skill request or a batched tool-group request; undefined for any other request, which the
 * lexical scorer answers itself.
 */
export function classifyRouting(request: ClassifierRequest): Record<string, Answer> | undefined {
  const { state } = request;
  if (typeof state.latest_request !== "string") return undefined;
  const asked = requestStems(state);
  const answers: Record<string, Answer> = {};
  if (isObject(state.skill)) {
    const s = state.skill;
    const p = relevance(asked, textOf(s.name), textOf(s.description), textOf(s.instructions));
    for (const id of Object.keys(request.questions)) answers[id] = { type: "bool", probability: p };
    return answers;
  }
  if (isObject(state.tool_groups)) {
    const groups = state.tool_groups;
    for (const [id, q] of Object.entries(request.questions)) {
      const name = /"([^"]+)"/.exec(q.instructions)?.[1] ?? "";
      const g = groups[name];
      // A group's tool names say what it is for as plainly as a description.
      const p = isObject(g) ? relevance(asked, name, `${textOf(g.description)}\n${textOf(g.tools)}`, "") : 0.5;
      answers[id] = { type: "bool", probability: p };
    }
    return answers;
  }
  return undefined;
}
