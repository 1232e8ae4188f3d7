// Gathers what the money view needs while the driver replays: each request's prompt pieces in both arms,
// its time, model and recorded usage, and each pass's classifier cost; then learns each model's cache
// profile from its recorded requests (cache-behaviour) and prices the session.
import type { SessionEntry } from "@earendil-works/pi-coding-agent";
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
import { type MoneyRequest, type PassCost, priceSession, type SessionMoney } from "../../core/replay/money.ts";
import { messageChars, type PassMetrics } from "../../core/replay/replay-metrics.ts";
import { CHARS_PER_TOKEN } from "../../core/shared/size.ts";
import type { PriceBook, RegistryModel } from "./prices.ts";
import { PromptPieces } from "./prompt-pieces.ts";

interface AssistantLike extends AssistantRecord {
  api?: string;
  provider?: string;
  model?: string;
}

interface Pending extends Omit<MoneyRequest, "usage"> {
  message: AssistantLike;
  entryTime: number;
}

/** The model as the replay knows it: the registry's entry, else what the message says. */
export function modelInfoOf(m: AssistantLike, prices: PriceBook | undefined): RegistryModel {
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

function usageOf(c: CheckedRequest): Usage | undefined {
  if (!c.tokens) return undefined;
  return { ...c.tokens, cost: c.cost?.total ?? 0 };
}

export class MoneyLog {
  readonly off = new PromptPieces();
  readonly on = new PromptPieces();
  #pending: Pending[] = [];

  /** An assistant message is about to join the lists: the request that produced it. */
  request(n: number, message: AssistantLike, entryTime: number, off: SessionEntry[], on: SessionEntry[]): void {
    this.#pending.push({
      n,
      at: entryTime,
      model: modelKey(message),
      off: this.off.current(off),
      on: this.on.current(on),
      outputChars: messageChars(message),
      message,
      entryTime,
    });
  }

  /** Each model's profile from all its recorded requests, and the checked requests. */
  profiles(prices: PriceBook | undefined): { profiles: Map<string, CacheProfile>; requests: MoneyRequest[] } {
    const byModel = new Map<string, { m: AssistantLike; checked: CheckedRequest[] }>();
    const requests: MoneyRequest[] = [];
    for (const p of this.#pending) {
      const { list } = modelInfoOf(p.message, prices);
      const c = checkRequest(p.n, p.message, p.entryTime, list);
      let slot = byModel.get(p.model);
      if (!slot) {
        slot = { m: p.message, checked: [] };
        byModel.set(p.model, slot);
      }
      slot.checked.push(c);
      const usage = usageOf(c);
      const { message: _m, entryTime: _t, ...rest } = p;
      // Pi stamps the message when the request starts; the entry when the answer is complete.
      requests.push({
        ...rest,
        at: c.at || p.entryTime,
        ...(usage ? { usage } : {}),
        ...(c.aside ? { aside: c.aside } : {}),
      });
    }
    const profiles = new Map<string, CacheProfile>();
    for (const [key, slot] of byModel) {
      const { info, list } = modelInfoOf(slot.m, prices);
      profiles.set(key, learnProfile(info, slot.checked, list));
    }
    return { profiles, requests };
  }

  price(passes: readonly PassMetrics[], prices: PriceBook | undefined): SessionMoney {
    const { profiles, requests } = this.profiles(prices);
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
    return priceSession(requests, profiles, costs, source);
  }
}
