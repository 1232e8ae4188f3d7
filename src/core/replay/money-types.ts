// The shapes of the money view: a request as the replay and the live footer hand it in, a model's cache
// view and the session's figures (money.ts computes them).
import type { CacheBehaviour, ProfilePriceSource } from "../cache/cache-behaviour.ts";
import type { CacheFamily, Prices } from "../cache/prompt-cache.ts";
import type { Piece, Usage } from "./calibrate.ts";
import type { ModelCalibration, Split } from "./money-fit.ts";
import type { PassMoney } from "./payback.ts";

export interface MoneyRequest {
  /** 1-based request number (as in RequestPoint). */
  n: number;
  /** Epoch ms. */
  at: number;
  /** provider/model of the request. */
  model: string;
  off: readonly Piece[];
  on: readonly Piece[];
  /**
   * The first piece of `off` (of `on`) that may differ from the previous request's: a caller that keeps
   * its prompt as one growing list says so, and the request is priced in the time of what changed.
   * Without it the pieces are compared with the previous request's.
   */
  offFrom?: number;
  onFrom?: number;
  /**
   * The prompt the recorded usage describes, when it is not `off`: a session recorded with the guard on
   * (live, the branch as it is; a replayed file that holds context edits). Its first changed piece as above.
   */
  rec?: readonly Piece[];
  recFrom?: number;
  /** Characters of the answer (its output when no usage was recorded). */
  outputChars: number;
  /** Recorded tokens, and the cost when it is plausible (0 otherwise, see `aside`). */
  usage?: Usage;
  /** Why the request's usage or cost was set aside (cache-behaviour's checkRequest). */
  aside?: string;
}

/** Where a model's prices come from: its recorded costs, Pi's registry, or none ("free": it billed $0). */
export type PriceSource = ProfilePriceSource;

export interface ModelView {
  model: string;
  family: CacheFamily;
  behaviour: CacheBehaviour;
  /** Why: recorded evidence or Pi's provider code. */
  behaviourWhy: string;
  priceSource: PriceSource;
  prices?: Prices;
  ttlMs: number;
  requests: number;
  /** Requests whose usage or cost was set aside, with the reason. */
  aside: Array<{ n: number; reason: string }>;
  calibration?: ModelCalibration;
}

export interface SessionMoney {
  /** The session recorded usage to calibrate on. */
  calibrated: boolean;
  /** Some billed model has dollars (recorded or registry prices); the dollars cover those models only. */
  priced: boolean;
  /** Billed models without dollars: free plans ($0 billed) or no price anywhere. Tokens only. */
  unpriced: string[];
  models: ModelView[];
  off: Split;
  on: Split;
  recorded?: Split;
  /** (simulated − recorded) / recorded, per field, guard off; dollars only when the session recorded a cost. */
  error?: { input: number; cacheRead: number; cacheWrite: number; dollars?: number };
  /**
   * What `recorded` and `error` cover: the billed requests whose recorded prompt held no guard edit (all of
   * them for a session recorded without the guard), the first that held one, and the guard-off arm over them.
   */
  fit?: { requests: number; of: number; firstEdited?: number; off: Split };
  /** Models whose fitted cache model still misses their recorded dollars by more than 10%. */
  misses?: string[];
  classifier: { dollars: number; source: string };
  /** off − on − classifier. */
  net: number;
  /** Cumulative dollars after each request (classifier cost included in `on` at its pass). */
  cumulative: Array<{ n: number; off: number; on: number }>;
  passes: PassMoney[];
}

/** What priceSession needs of every request before the first is priced: no prompt. */
export type RequestHead = Pick<MoneyRequest, "n" | "at" | "model" | "usage">;
