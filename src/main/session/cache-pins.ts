// The Anthropic cache log: which cache entries this process saw written (or read through), so the read
// point after an edit is only ever an entry the next request can really read. Everything uncertain
// falls back to the question pin. The log lives in memory only and starts empty with each session.
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import { type AnthropicPayload, placeGuardBreakpoints } from "../../core/cache/cache-pin.ts";
import { cacheTtlMs } from "../../core/cache/cold-cache.ts";
import { BranchIndex, type IndexedEntry } from "./branch-index.ts";

/** Anthropic's default cache lifetime. */
export const CACHE_TTL_MS = cacheTtlMs("anthropic");
/** Characters per token when estimating how far a cache read reached: overestimates the tokens. */
const CHARS_PER_TOKEN_LOW = 1.5;

interface Logged {
  entryId: string;
  model: string;
  time: number;
  /** The last branch entry when it was written: what the cached prefix was built from. */
  lastEntryId: string;
}

type BranchEntry = IndexedEntry;

type Ctx = Pick<ExtensionContext, "sessionManager" | "model">;

const modelKey = (ctx: Ctx) => (ctx.model ? `${ctx.model.provider}/${ctx.model.id}` : "");
const answered = (e: BranchEntry) =>
  e.type === "message" &&
  e.message?.role === "assistant" &&
  e.message.stopReason !== "error" &&
  e.message.stopReason !== "aborted";

function textChars(content: unknown): number {
  if (typeof content === "string") return content.length;
  if (!Array.isArray(content)) return 0;
  let n = 0;
  for (const b of content as Array<{ text?: string }>) n += b?.text?.length ?? 0;
  return n;
}

export class CachePins {
  #log = new Map<string, Logged>();
  /** Full input of the run's first request, in tokens: the floor any read-through must exceed. */
  #baseline: number | undefined;
  #lastRequest: { time: number; model: string } | undefined;
  #branch = new BranchIndex();

  clear(): void {
    this.#branch = new BranchIndex();
    this.#log.clear();
    this.#baseline = undefined;
    this.#lastRequest = undefined;
  }

  /** Entries whose cache the next request can still read, oldest first. */
  trustedIds(ctx: Ctx, now = Date.now()): string[] {
    if (this.#log.size === 0) return [];
    const { entries: branch, position } = this.#branch.sync(ctx.sessionManager);
    const model = modelKey(ctx);
    const out: Array<[number, string]> = [];
    for (const item of this.#log.values()) {
      const at = position.get(item.entryId);
      const since = position.get(item.lastEntryId);
      if (item.model !== model || now - item.time > CACHE_TTL_MS || at === undefined || since === undefined) continue;
      let touched = false;
      for (let i = since + 1; i < branch.length && !touched; i++) {
        const e = branch[i] as BranchEntry;
        if (e.type === "compaction" || e.type === "branch_summary") touched = true;
        else if (e.type === "context_edit") touched = (position.get(e.targetId ?? "") ?? -1) <= at;
      }
      if (!touched) out.push([at, item.entryId]);
    }
    return out.sort((a, b) => a[0] - b[0]).map(([, id]) => id);
  }

  /**
   * before_provider_request for an Anthropic model: place the breakpoints and log the tool-result
   * entries the request will write to cache.
   */
  onRequest(payload: AnthropicPayload, ctx: Ctx, now = Date.now()): void {
    const { entries: branch, position, callOf: toolCallOf, entryOfCall } = this.#branch.sync(ctx.sessionManager);
    // Edits appended since the last answered request are still unpaid: this request rewrites after them.
    let firstEdited = Number.POSITIVE_INFINITY;
    for (let i = branch.length - 1; i >= 0; i--) {
      const e = branch[i] as BranchEntry;
      if (answered(e)) break;
      if (e.type === "context_edit") firstEdited = Math.min(firstEdited, position.get(e.targetId ?? "") ?? firstEdited);
    }
    const targets: { readPoint?: string; anchor?: string } = {};
    if (Number.isFinite(firstEdited)) {
      const trusted = this.trustedIds(ctx, now).filter(
        (id) => (position.get(id) ?? Number.POSITIVE_INFINITY) < firstEdited,
      );
      const read = trusted.at(-1);
      if (read) targets.readPoint = toolCallOf.get(read);
      // The anchor goes at the end of the tool-result batch holding the first edited entry.
      const edited = branch[firstEdited];
      if (edited) targets.anchor = toolCallOf.get(edited.id);
    }
    const marks = placeGuardBreakpoints(payload, targets);
    const model = modelKey(ctx);
    const lastEntryId = branch.at(-1)?.id ?? "";
    for (const m of marks) {
      const entryId = m.toolUseId ? entryOfCall.get(m.toolUseId) : undefined;
      if (entryId) this.#log.set(entryId, { entryId, model, time: now, lastEntryId });
    }
    this.#lastRequest = { time: now, model };
  }

  /**
   * message_end of an assistant reply: a read that reached past a logged entry keeps that entry alive,
   * so its time moves to the request's time. Only with a baseline and a clear margin.
   */
  onAssistantEnd(usage: { input?: number; cacheRead?: number; cacheWrite?: number } | undefined, ctx: Ctx): void {
    const request = this.#lastRequest;
    if (!usage || !request || request.model !== modelKey(ctx)) return;
    const branch = this.#branch.sync(ctx.sessionManager).entries;
    // The run's first reply sets the baseline: the prompt's whole input.
    let lastUser = -1;
    let replies = 0;
    for (let i = branch.length - 1; i >= 0; i--) {
      const e = branch[i] as BranchEntry;
      if (e.type === "message" && e.message?.role === "user") {
        lastUser = i;
        break;
      }
      if (e.type === "message" && e.message?.role === "assistant") replies++;
    }
    if (replies <= 1) {
      this.#baseline = (usage.input ?? 0) + (usage.cacheRead ?? 0) + (usage.cacheWrite ?? 0);
      return;
    }
    const baseline = this.#baseline;
    const read = usage.cacheRead ?? 0;
    if (baseline === undefined || lastUser < 0 || read <= baseline) return;
    const trusted = new Set(this.trustedIds(ctx, request.time));
    let chars = 0;
    for (let i = lastUser + 1; i < branch.length; i++) {
      const e = branch[i] as BranchEntry;
      chars += textChars(e.message?.content);
      const logged = this.#log.get(e.id);
      if (logged && trusted.has(e.id) && read >= baseline + chars / CHARS_PER_TOKEN_LOW) logged.time = request.time;
    }
  }
}
