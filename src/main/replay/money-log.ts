// Gathers what the money view needs while the driver replays: each request's prompt pieces in both arms,
// its time, model and recorded usage, and each pass's classifier cost. The branch's requests are read up
// front (model, time, recorded usage: no prompt) to learn each model's cache profile (cache-behaviour);
// each request is then priced as it comes, and only the last prompt is kept. A file recorded with the
// guard on keeps its edits out of the guard-off arm: its usage describes the prompts as recorded.
import type { ProjectedSessionEntry, SessionEntry } from "@earendil-works/pi-coding-agent";
import {
  type AssistantRecord,
  type CacheProfile,
  type CheckedRequest,
  checkRequest,
  learnProfile,
  type ModelInfo,
  modelKey,
} from "../../core/cache/cache-behaviour.ts";
import type { Prices } from "../../core/cache/prompt-cache.ts";
import type { Usage } from "../../core/replay/calibrate.ts";
import { MoneySimulator, type PassCost, type RequestHead, type SessionMoney } from "../../core/replay/money.ts";
import { messageChars, type PassMetrics } from "../../core/replay/replay-metrics.ts";
import { CHARS_PER_TOKEN } from "../../core/shared/size.ts";
import type { PriceBook, RegistryModel } from "./prices.ts";
import { PromptPieces } from "./prompt-pieces.ts";

export interface AssistantLike extends AssistantRecord {
  api?: string;
  provider?: string;
  model?: string;
}

/** The model as the replay knows it: the registry's entry, else what the message says. */
function modelInfoOf(m: AssistantLike, prices: PriceBook | undefined): RegistryModel {
  const found = prices?.model(m.provider, m.model);
  if (found) return found;
  return {
    info: {
      ...(m.api ? { api: m.api } : {}),
      ...(m.provider ? { provider: m.provider } : {}),
      ...(m.model ? { id: m.model } : {}),
    },
  };
}

/** What Pi's ctx.model would be for the model that wrote `m`: the registry's entry with its list as `cost`. */
export function hostModel(m: unknown, prices: PriceBook | undefined): ModelInfo & { cost?: Prices } {
  const { info, list } = modelInfoOf((m ?? {}) as AssistantLike, prices);
  return { ...info, ...(list ? { cost: list } : {}) };
}

/** The usage the money view prices: the checked tokens, and the cost only when it is plausible. */
function usageOf(c: CheckedRequest): Usage | undefined {
  if (!c.tokens) return undefined;
  return { ...c.tokens, cost: c.cost?.total ?? 0 };
}

/** One assistant message of a branch: its request number (from 1) and the time of its entry. */
export interface RecordedRequest {
  n: number;
  message: AssistantLike;
  entryTime: number;
}

/** A request's head as the money view prices it, with why its usage or cost was set aside. */
export type CheckedHead = RequestHead & { aside?: string };

/**
 * Checks each request's recorded usage and learns each model's profile from all its requests: what the
 * replay and the live footer both price with.
 */
export function learnProfiles(
  requests: Iterable<RecordedRequest>,
  prices: PriceBook | undefined,
  check: (r: RecordedRequest, list: Prices | undefined) => CheckedRequest = (r, list) =>
    checkRequest(r.n, r.message, r.entryTime, list),
): { profiles: Map<string, CacheProfile>; heads: CheckedHead[] } {
  const byModel = new Map<string, { m: AssistantLike; checked: CheckedRequest[] }>();
  const heads: CheckedHead[] = [];
  for (const r of requests) {
    const { list } = modelInfoOf(r.message, prices);
    const c = check(r, list);
    const model = modelKey(r.message);
    let slot = byModel.get(model);
    if (!slot) {
      slot = { m: r.message, checked: [] };
      byModel.set(model, slot);
    }
    slot.checked.push(c);
    const usage = usageOf(c);
    // Pi stamps the message when the request starts; the entry when the answer is complete.
    heads.push({
      n: r.n,
      at: c.at || r.entryTime,
      model,
      ...(usage ? { usage } : {}),
      ...(c.aside ? { aside: c.aside } : {}),
    });
  }
  const profiles = new Map<string, CacheProfile>();
  for (const [key, slot] of byModel) {
    const { info, list } = modelInfoOf(slot.m, prices);
    profiles.set(key, learnProfile(info, slot.checked, list));
  }
  return { profiles, heads };
}

function isAssistant(entry: SessionEntry): AssistantLike | undefined {
  if (entry.type !== "message") return undefined;
  const m = entry.message as AssistantLike & { role?: string };
  return m.role === "assistant" ? m : undefined;
}

/** The branch's assistant messages in order, with the driver's clock (the entry's timestamp, else the last). */
export function* recordedRequests(branch: readonly SessionEntry[], startTime: number): Generator<RecordedRequest> {
  let now = startTime;
  let n = 0;
  for (const entry of branch) {
    now = Date.parse(entry.timestamp) || now;
    const message = isAssistant(entry);
    if (message) yield { n: ++n, message, entryTime: now };
  }
}

/**
 * The guard-off prompt, the session without any context edit, and for a file recorded with the guard on,
 * the prompt as recorded (its edits in place): what its usage describes.
 */
export class OffPieces {
  readonly bare = new PromptPieces(false);
  readonly recorded: PromptPieces | undefined;

  constructor(recordedEdits: boolean) {
    if (recordedEdits) this.recorded = new PromptPieces();
  }

  add(entry: SessionEntry): void {
    this.bare.add(entry);
    this.recorded?.add(entry);
  }
}

export class MoneyLog {
  readonly off: OffPieces;
  readonly on = new PromptPieces();
  #prices: PriceBook | undefined;
  #heads: CheckedHead[];
  #simulator: MoneySimulator;

  /**
   * Reads the branch's requests up front (model, time, recorded usage: what learns the profiles and
   * calibrates), so each request's prompt is priced when it comes and none is kept.
   */
  constructor(branch: readonly SessionEntry[], startTime: number, prices: PriceBook | undefined) {
    this.#prices = prices;
    this.off = new OffPieces(branch.some((e) => e.type === "context_edit"));
    const { profiles, heads } = learnProfiles(recordedRequests(branch, startTime), prices);
    this.#heads = heads;
    this.#simulator = new MoneySimulator(heads, profiles);
  }

  /** An assistant message is about to join the lists: the request that produced it, priced now. */
  request(
    n: number,
    message: AssistantLike,
    entryTime: number,
    off: SessionEntry[],
    on: SessionEntry[],
    onProjected?: readonly ProjectedSessionEntry[],
  ): void {
    const model = modelKey(message);
    let head = this.#heads[n - 1];
    if (!head || head.n !== n || head.model !== model) {
      // Not the request read up front: check it on its own (its model's profile stays the branch's).
      const { list } = modelInfoOf(message, this.#prices);
      const c = checkRequest(n, message, entryTime, list);
      const usage = usageOf(c);
      head = { n, at: c.at || entryTime, model, ...(usage ? { usage } : {}), ...(c.aside ? { aside: c.aside } : {}) };
    }
    const offPrompt = this.off.bare.next(off);
    const recPrompt = this.off.recorded?.next(off);
    const onPrompt = this.on.next(on, onProjected);
    this.#simulator.request({
      ...head,
      off: offPrompt.pieces,
      on: onPrompt.pieces,
      offFrom: offPrompt.from,
      onFrom: onPrompt.from,
      ...(recPrompt ? { rec: recPrompt.pieces, recFrom: recPrompt.from } : {}),
      outputChars: messageChars(message),
    });
  }

  price(passes: readonly PassMetrics[]): SessionMoney {
    const prices = this.#prices;
    const jev = prices?.jevInput ?? 0;
    const hosted = passes.some((p) => p.costUsd > 0);
    const costs: PassCost[] = passes
      .filter((p) => p.status === "done")
      .map((p) => {
        const tokens = p.inputTokens > 0 ? p.inputTokens : Math.round(p.requestChars / CHARS_PER_TOKEN);
        return {
          pass: p.n,
          afterRequest: p.afterRequest,
          edited: p.drafts > 0,
          classifier: p.costUsd > 0 ? p.costUsd : (tokens * jev) / 1e6,
        };
      });
    const source = hosted
      ? "as Pi's classifier client reported it"
      : jev > 0
        ? `what Jev would cost for the same requests ($${jev}/M input tokens in Pi's catalog)`
        : "no price for Jev in Pi's catalog";
    return this.#simulator.finish(costs, source);
  }
}
