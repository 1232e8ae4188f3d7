// What routing reads from Pi's branch: the conversation digest's input, the user-turn count, the last
// persisted routing state, and why there is no classifier.
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import { breakEvenFamily, type ModelInfo, priorFor } from "../../core/cache/cache-behaviour.ts";
import { cacheTtlMs } from "../../core/cache/cold-cache.ts";
import { DIGEST_CHARS, type DigestMessage, MESSAGE_CHARS, parseSkillInvocation } from "../../core/routing/routing.ts";
import type { GuardConfig } from "../../core/shared/config.ts";
import { findClassifier } from "../pass/classifier.ts";
import { ROUTING_ENTRY, type RoutingSnapshot } from "./routing-shapes.ts";

type Branch = ReturnType<ExtensionContext["sessionManager"]["getBranch"]>;

function textBlocks(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  const out: string[] = [];
  for (const b of content) {
    if (b && typeof b === "object" && (b as { type?: string }).type === "text") {
      const t = (b as { text?: unknown }).text;
      if (typeof t === "string") out.push(t);
    }
  }
  return out.join("\n");
}

/** Cheap pre-cut while walking the branch: buildRoutingState formats; this bounds what it is given. */
function bounded(text: string): string {
  const max = MESSAGE_CHARS * 2;
  return text.length <= max ? text : `${text.slice(0, MESSAGE_CHARS)}\n…\n${text.slice(-MESSAGE_CHARS)}`;
}

/** User and assistant text of the branch, newest first, up to about the digest cap; tool I/O excluded. */
export function historyFromBranch(branch: Branch): DigestMessage[] {
  const out: DigestMessage[] = [];
  let total = 0;
  for (let i = branch.length - 1; i >= 0 && total < DIGEST_CHARS * 1.5; i--) {
    const e = branch[i] as { type: string; message?: { role?: string; content?: unknown }; summary?: unknown };
    let item: DigestMessage | undefined;
    if (e.type === "message" && e.message) {
      const role = e.message.role;
      if (role === "user" || role === "assistant") {
        let text = textBlocks(e.message.content).trim();
        if (role === "user") {
          // A /skill:name expansion counts as what the user asked, not as the skill's body.
          const inv = parseSkillInvocation(text);
          if (inv.skill) text = `[invoked skill ${inv.skill}] ${inv.request}`.trim();
        }
        if (text) item = { role, text: bounded(text) };
      }
    } else if ((e.type === "compaction" || e.type === "branch_summary") && typeof e.summary === "string") {
      item = { role: "summary", text: bounded(e.summary) };
    }
    if (item) {
      out.push(item);
      total += item.text.length;
    }
    if (e.type === "compaction") break;
  }
  return out;
}

/**
 * Whether the main model's cache is still warm: the last request is younger than the family's TTL. A family
 * without a cache is never warm; one that caches by itself is, since only its upper bound proves the cache
 * gone. The family is Pi's provider code's (cache-behaviour's prior).
 */
export function cacheWarm(branch: Branch, model: ModelInfo | undefined, now: number): boolean {
  const family = breakEvenFamily(priorFor(model).behaviour);
  if (family === "none") return false;
  for (let i = branch.length - 1; i >= 0; i--) {
    const e = branch[i] as { type: string; message?: { role?: string; timestamp?: unknown } };
    if (e.type === "compaction" || e.type === "model_change") return false;
    if (e.type === "message" && e.message?.role === "assistant") {
      const at =
        typeof e.message.timestamp === "number"
          ? e.message.timestamp
          : Date.parse(String((e as { timestamp?: string }).timestamp));
      return Number.isFinite(at) && now - at < cacheTtlMs(family);
    }
  }
  return false;
}

export function userTurns(branch: Branch): number {
  let n = 0;
  for (const e of branch) {
    if (e.type === "message" && (e as { message?: { role?: string } }).message?.role === "user") n++;
  }
  return n;
}

export function lastSnapshot(branch: Branch): RoutingSnapshot | undefined {
  for (let i = branch.length - 1; i >= 0; i--) {
    const e = branch[i] as { type: string; customType?: string; data?: unknown };
    if (e.type === "custom" && e.customType === ROUTING_ENTRY && e.data && typeof e.data === "object") {
      return e.data as RoutingSnapshot;
    }
  }
  return undefined;
}

export function unavailable(ctx: ExtensionContext, config: GuardConfig): { class: string; message: string } {
  const found = findClassifier(ctx.modelRegistry, config.model);
  if (found.ok) return { class: "failed", message: "context-guard: the classifier is not usable" };
  const what =
    found.problem === "no-key"
      ? `no ${found.provider} key`
      : found.problem === "not-found"
        ? `the classifier ${config.model} is not in Pi's catalog`
        : `"${config.model}" is not a provider/id`;
  return {
    class: found.problem,
    message: `context-guard: ${what}; skill routing and tool surfacing are off (all skills advertised, all tools visible)`,
  };
}
