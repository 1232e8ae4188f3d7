// Gathers what the money view needs while the driver replays: each request's prompt pieces in both arms,
// its time, model and recorded usage, and each pass's classifier cost; then prices the session.
import type { SessionEntry } from "@earendil-works/pi-coding-agent";
import { familyOf } from "../../core/cache/prompt-cache.ts";
import type { Usage } from "../../core/replay/calibrate.ts";
import {
  type ModelPricing,
  MoneySimulator,
  type PassCost,
  type RequestHead,
  type SessionMoney,
} from "../../core/replay/money.ts";
import { messageChars, type PassMetrics } from "../../core/replay/replay-metrics.ts";
import { CHARS_PER_TOKEN } from "../../core/shared/size.ts";
import { emptyRecordedCost, type PriceBook, type RecordedCost } from "./prices.ts";
import { PromptPieces } from "./prompt-pieces.ts";

export interface AssistantLike {
  api?: string;
  provider?: string;
  model?: string;
  timestamp?: unknown;
  usage?: {
    input?: unknown;
    output?: unknown;
    cacheRead?: unknown;
    cacheWrite?: unknown;
    cacheWrite1h?: unknown;
    cost?: { input?: unknown; output?: unknown; cacheRead?: unknown; cacheWrite?: unknown; total?: unknown };
  };
}

export const num = (x: unknown) => (typeof x === "number" && Number.isFinite(x) && x > 0 ? x : 0);

/** The usage Pi recorded on an assistant message. */
export function usageOf(m: AssistantLike): Usage | undefined {
  const u = m.usage;
  if (!u || typeof u !== "object") return undefined;
  return {
    input: num(u.input),
    output: num(u.output),
    cacheRead: num(u.cacheRead),
    cacheWrite: num(u.cacheWrite),
    ...(num(u.cacheWrite1h) > 0 ? { cacheWrite1h: num(u.cacheWrite1h) } : {}),
    cost: num(u.cost?.total),
  };
}

/** provider/model of an assistant message, the key the money view groups requests by. */
const modelKey = (m: AssistantLike) => `${m.provider ?? "?"}/${m.model ?? "?"}`;

function isAssistant(entry: SessionEntry): AssistantLike | undefined {
  if (entry.type !== "message") return undefined;
  const m = entry.message as AssistantLike & { role?: string };
  return m.role === "assistant" ? m : undefined;
}

export class MoneyLog {
  readonly off = new PromptPieces();
  readonly on = new PromptPieces();
  #prices: PriceBook | undefined;
  #simulator: MoneySimulator;

  /**
   * Reads the branch's requests up front (model, time, recorded usage: what prices and calibrates
   * them), so each request's prompt is priced when it comes and none is kept.
   */
  constructor(branch: readonly SessionEntry[], startTime: number, prices: PriceBook | undefined) {
    this.#prices = prices;
    const heads: RequestHead[] = [];
    const models = new Map<string, { api?: string; provider?: string; model?: string; recorded: RecordedCost }>();
    let now = startTime;
    for (const entry of branch) {
      // The driver's clock: the entry's timestamp, else the last one seen.
      now = Date.parse(entry.timestamp) || now;
      const message = isAssistant(entry);
      if (!message) continue;
      const model = modelKey(message);
      let known = models.get(model);
      if (!known) {
        known = { api: message.api, provider: message.provider, model: message.model, recorded: emptyRecordedCost() };
        models.set(model, known);
      }
      const usage = usageOf(message);
      if (usage) {
        const c = message.usage?.cost;
        const r = known.recorded;
        r.tokens.input += usage.input;
        r.tokens.output += usage.output;
        r.tokens.cacheRead += usage.cacheRead;
        r.tokens.cacheWrite += usage.cacheWrite;
        r.dollars.input += num(c?.input);
        r.dollars.output += num(c?.output);
        r.dollars.cacheRead += num(c?.cacheRead);
        r.dollars.cacheWrite += num(c?.cacheWrite);
      }
      heads.push({ n: heads.length + 1, at: num(message.timestamp) || now, model, ...(usage ? { usage } : {}) });
    }
    const pricing = new Map<string, ModelPricing>();
    for (const [key, m] of models) {
      pricing.set(key, prices ? prices.main(m, m.recorded) : { family: familyOf(m), priceSource: "none" });
    }
    this.#simulator = new MoneySimulator(heads, pricing);
  }

  /** An assistant message is about to join the lists: the request that produced it, priced now. */
  request(n: number, message: AssistantLike, entryTime: number, off: SessionEntry[], on: SessionEntry[]): void {
    const usage = usageOf(message);
    this.#simulator.request({
      n,
      // Pi stamps the message when the request starts; the entry when the answer is complete.
      at: num(message.timestamp) || entryTime,
      model: modelKey(message),
      off: this.off.current(off),
      on: this.on.current(on),
      outputChars: messageChars(message),
      ...(usage ? { usage } : {}),
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
