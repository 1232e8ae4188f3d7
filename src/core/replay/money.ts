// What the replayed session costs in dollars, guard off and on, with the main model's prompt cache. Both
// arms run the same cost model (PromptCache) over calibrated token counts; the guard-off arm is checked
// against what the session recorded. The guard-on arm carries the guard's own Anthropic pins: the last
// question, and after an edit a read point on the last live entry before the first changed piece and a
// write anchor on the tool-result batch holding it. Pure: the driver gathers the requests.

import {
  type CacheBehaviour,
  type CacheProfile,
  familyOfBehaviour,
  type ProfilePriceSource,
} from "../cache/cache-behaviour.ts";
import {
  type CacheFamily,
  dollars,
  type Prices,
  PromptCache,
  type PromptMark,
  PromptTrack,
  type PromptView,
  type RequestCost,
  ScaledPrompt,
} from "../cache/prompt-cache.ts";
import { type Piece, promptTokens, TokenCalibrator, type Usage } from "./calibrate.ts";
import { type PassCost, type PassMoney, passPayback } from "./payback.ts";

export type { PassCost, PassMoney };

import { anthropicPins, lastBlockWithin } from "./prompt-marks.ts";

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
  /** Characters of the answer (its output when no usage was recorded). */
  outputChars: number;
  /** Recorded tokens, and the cost when it is plausible (0 otherwise, see `aside`). */
  usage?: Usage;
  /** Why the request's usage or cost was set aside (cache-behaviour's checkRequest). */
  aside?: string;
}

/** Where a model's prices come from: its recorded costs, Pi's registry, or none ("free": it billed $0). */
export type PriceSource = ProfilePriceSource;

export interface Split {
  input: number;
  cacheRead: number;
  cacheWrite: number;
  output: number;
  dollars: number;
}

/** A request where the guard-off simulation and the recording part by more than PART_SHARE of its prompt. */
export interface Parting {
  n: number;
  /** Prompt tokens simulated and recorded: they differ when the host trimmed what the session file holds. */
  simPrompt: number;
  recPrompt: number;
  simRead: number;
  recRead: number;
  simWrite: number;
  recWrite: number;
  /** Tokens the provider had lost that the model still held (a cache that expired early), if any. */
  lost?: number;
}

export interface ModelCalibration {
  sim: Split;
  recorded: Split;
  error: { input: number; cacheRead: number; cacheWrite: number; dollars?: number };
  /** The requests where simulation and recording part most, largest first (at most MAX_PARTINGS). */
  partings: Parting[];
  /** Requests the provider read less than the model expected: replayed as partial misses in both arms. */
  partialMisses: number;
}

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
  classifier: { dollars: number; source: string };
  /** off − on − classifier. */
  net: number;
  /** Cumulative dollars after each request (classifier cost included in `on` at its pass). */
  cumulative: Array<{ n: number; off: number; on: number }>;
  passes: PassMoney[];
}

const OUTPUT_CHARS_PER_TOKEN = 4;
/** A request's simulated and recorded cache tokens part when they differ by this share of its prompt. */
const PART_SHARE = 0.1;
const MAX_PARTINGS = 20;
/** A recorded prompt this much smaller than the file's pieces was trimmed by the host. */
const TRIM_SLACK = 0.02;

const zero = (): Split => ({ input: 0, cacheRead: 0, cacheWrite: 0, output: 0, dollars: 0 });

function addTo(into: Split, c: Omit<Split, "dollars"> & { dollars?: number }): void {
  into.input += c.input;
  into.cacheRead += c.cacheRead;
  into.cacheWrite += c.cacheWrite;
  into.output += c.output;
  into.dollars += c.dollars ?? 0;
}

const relative = (sim: number, rec: number) => (rec === 0 ? (sim === 0 ? 0 : 1) : (sim - rec) / rec);

interface ModelTally {
  /** The model's previous request: its recorded and simulated prompt tokens. */
  previous?: { recorded: number; sim: number };
  sim: Split;
  recorded: Split;
  partings: Parting[];
  partialMisses: number;
}

function calibrationOf(t: ModelTally): ModelCalibration {
  const partings = [...t.partings]
    .sort((a, b) => Math.abs(b.simRead - b.recRead) - Math.abs(a.simRead - a.recRead))
    .slice(0, MAX_PARTINGS);
  return {
    sim: t.sim,
    recorded: t.recorded,
    error: {
      input: relative(t.sim.input, t.recorded.input),
      cacheRead: relative(t.sim.cacheRead, t.recorded.cacheRead),
      cacheWrite: relative(t.sim.cacheWrite, t.recorded.cacheWrite),
      ...(t.recorded.dollars > 0 ? { dollars: relative(t.sim.dollars, t.recorded.dollars) } : {}),
    },
    partings,
    partialMisses: t.partialMisses,
  };
}

const FREE: Prices = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
const hasDollars = (p: CacheProfile | undefined) => p?.priceSource === "recorded" || p?.priceSource === "registry";

/**
 * Prices both arms of a session with each model's learned profile (cache-behaviour): its behaviour, TTL
 * and the prices it pays. A free model ($0 billed) and an unpriced one cost $0 in both arms and are named.
 */
export function priceSession(
  requests: readonly MoneyRequest[],
  profiles: ReadonlyMap<string, CacheProfile>,
  passes: readonly PassCost[],
  classifierSource: string,
): SessionMoney {
  const simulator = new MoneySimulator(requests, profiles);
  for (const r of requests) simulator.request(r);
  return simulator.finish(passes, classifierSource);
}

/** What priceSession needs of every request before the first is priced: no prompt. */
export type RequestHead = Pick<MoneyRequest, "n" | "at" | "model" | "usage">;

/** Token counts of one request in one arm (its dollars come from the model's prices at the end). */
type Tokens = Omit<RequestCost, "dollars">;

const tokensOf = (c: RequestCost): Tokens => ({
  input: c.input,
  cacheRead: c.cacheRead,
  cacheWrite: c.cacheWrite,
  output: c.output,
});

/** What of a piece tells whether the next request's prompt still holds it as it was. */
type Seen = { key: string; chars: number };
const seen = (p: Piece): Seen => ({ key: p.key, chars: p.chars });

/** The first piece of `pieces` that differs from `before` (the previous request's), or its length. */
function changedFrom(before: readonly Seen[], pieces: readonly Piece[]): number {
  const n = Math.min(before.length, pieces.length);
  for (let i = 0; i < n; i++) {
    const b = before[i] as Seen;
    const p = pieces[i] as Piece;
    if (b.key !== p.key || b.chars !== p.chars) return i;
  }
  return n;
}

/** What of a profile the simulation itself depends on: a change of it means pricing again from the start. */
const shapeOf = (p: CacheProfile | undefined) => `${p?.behaviour ?? "none"}|${p?.ttlMs ?? 0}`;

/**
 * priceSession one request at a time, for a replay that cannot keep every request's prompt: the heads
 * of all requests are known up front (they decide calibration; the profiles were learned from them), each
 * prompt is priced as it comes and only the last one is kept. Requests are simulated in tokens; dollars
 * come from each model's prices when the figures are read, so a live branch whose learned prices move
 * (medians over more requests) is priced again without simulating again.
 */
export class MoneySimulator {
  #profiles: ReadonlyMap<string, CacheProfile>;
  #calibrated: boolean;
  #models = new Map<string, ModelView>();
  #tallies = new Map<string, ModelTally>();
  #caches = new Map<string, { off: PromptCache; on: PromptCache; previous?: PromptMark }>();
  #calibrator = new TokenCalibrator();
  /** Each arm's prompt as of the last billed request, in tokens. */
  readonly #off = new PromptTrack();
  readonly #on = new PromptTrack();
  /** The first piece of each arm changed since the last billed request. */
  #offPending = 0;
  #onPending = 0;
  /** The previous request's pieces, for a caller that does not say where its prompt changed. */
  #offSeen: Seen[] = [];
  #onSeen: Seen[] = [];
  #recorded = zero();
  /** Requests priced so far, in order, with their tokens in each arm when billed. */
  #done: Array<{ n: number; model: string; cost?: { off: Tokens; on: Tokens } }> = [];

  /** `heads`: every request's head (calibrated when one recorded a prompt), or whether it is calibrated. */
  constructor(heads: readonly RequestHead[] | boolean, profiles: ReadonlyMap<string, CacheProfile>) {
    this.#profiles = profiles;
    this.#calibrated =
      typeof heads === "boolean" ? heads : heads.some((r) => r.usage !== undefined && promptTokens(r.usage) > 0);
  }

  /** Whether the requests priced so far are calibrated on recorded usage. */
  get calibrated(): boolean {
    return this.#calibrated;
  }

  /**
   * Newer profiles for the figures read from now on. Returns false (and changes nothing) when a model
   * already simulated would now cache otherwise (behaviour or TTL): its requests must be simulated again.
   */
  useProfiles(profiles: ReadonlyMap<string, CacheProfile>): boolean {
    for (const model of this.#caches.keys()) {
      if (shapeOf(profiles.get(model)) !== shapeOf(this.#profiles.get(model))) return false;
    }
    this.#profiles = profiles;
    for (const [model, view] of this.#models) {
      const { prices: _old, ...rest } = view;
      this.#models.set(model, { ...rest, ...viewPrices(profiles.get(model)) });
    }
    return true;
  }

  request(r: MoneyRequest): void {
    const calibrated = this.#calibrated;
    const total = r.usage ? promptTokens(r.usage) : 0;
    // What changed since the previous request, gathered until a billed request prices it.
    this.#offPending = Math.min(this.#offPending, r.offFrom ?? changedFrom(this.#offSeen, r.off));
    this.#onPending = Math.min(this.#onPending, r.onFrom ?? changedFrom(this.#onSeen, r.on));
    if (r.offFrom === undefined) this.#offSeen = r.off.map(seen);
    if (r.onFrom === undefined) this.#onSeen = r.on.map(seen);
    // A request that recorded nothing (an error before the answer) was not billed; it stays in the history.
    const billed = !calibrated || total > 0;
    const profile = this.#profiles.get(r.model);
    let view = this.#models.get(r.model);
    if (!view) {
      const behaviour = profile?.behaviour ?? "none";
      view = {
        model: r.model,
        family: familyOfBehaviour(behaviour),
        behaviour,
        behaviourWhy: profile
          ? `${profile.why}${profile.behaviourSource === "pi" ? " (Pi's provider code)" : ""}`
          : "no profile",
        ...viewPrices(profile),
        ttlMs: profile?.ttlMs ?? 0,
        requests: 0,
        aside: profile?.aside ?? [],
      };
      this.#models.set(r.model, view);
    }
    if (!billed) {
      this.#done.push({ n: r.n, model: r.model });
      return;
    }
    // Each arm's prompt from its first changed piece on: the pieces before it kept their tokens.
    const offFrom = Math.min(this.#offPending, r.off.length, this.#off.length);
    const fresh = this.#calibrator.offFrom(
      r.off,
      offFrom,
      offFrom > 0 ? this.#off.sumAt(offFrom - 1) : 0,
      calibrated ? total : undefined,
    );
    this.#off.update(
      offFrom,
      r.off.length,
      (i) => (r.off[i] as Piece).key,
      (i) => fresh[i - offFrom] as number,
    );
    const onFrom = Math.min(this.#onPending, r.on.length, this.#on.length);
    this.#on.update(
      onFrom,
      r.on.length,
      (i) => (r.on[i] as Piece).key,
      (i) => this.#calibrator.onPiece(r.on[i] as Piece),
    );
    this.#offPending = Number.POSITIVE_INFINITY;
    this.#onPending = Number.POSITIVE_INFINITY;
    let offView: PromptView = this.#off;
    let onView: PromptView = this.#on;
    // A prompt smaller than the pieces the file still holds: the host trimmed it (OpenClaw prunes old
    // tool results). Both arms shrink alike, so the simulated prompt is the one the provider billed.
    const held = this.#off.total;
    if (calibrated && total > 0 && held > total * (1 + TRIM_SLACK)) {
      const k = total / held;
      offView = new ScaledPrompt(this.#off, k);
      onView = new ScaledPrompt(this.#on, k);
    }
    let arm = this.#caches.get(r.model);
    if (!arm) {
      // Tokens only: the dollars come from the model's prices when the figures are read.
      const options = { ttlMs: profile?.ttlMs ?? 0 };
      arm = { off: new PromptCache(view.family, FREE, options), on: new PromptCache(view.family, FREE, options) };
      this.#caches.set(r.model, arm);
    }
    let tally = this.#tallies.get(r.model);
    if (!tally) {
      tally = { sim: zero(), recorded: zero(), partings: [], partialMisses: 0 };
      this.#tallies.set(r.model, tally);
    }
    const output = r.usage ? r.usage.output : Math.round(r.outputChars / OUTPUT_CHARS_PER_TOKEN);
    // What the provider did not read was gone whatever the guard did: a miss (nothing read) is cold in
    // both arms, and a partial one forgets, in both, every prefix longer than what was read.
    // The share of the previous prompt the provider read is kept in the simulated one (the host may
    // have trimmed the real prompt, so the recorded token counts cannot be compared directly).
    let lost = 0;
    const offTotal = offView.total;
    if (calibrated && r.usage && view.family !== "none") {
      const prev = tally.previous;
      if (r.usage.cacheRead === 0) {
        arm.off.clear();
        arm.on.clear();
      } else if (prev && r.usage.cacheRead < (1 - PART_SHARE) * prev.recorded) {
        const last = lastBlockWithin(offView, (r.usage.cacheRead / prev.recorded) * prev.sim);
        lost = arm.off.forgetBeyond(last, r.at);
        arm.on.forgetBeyond(last, r.at);
        if (lost > 0) tally.partialMisses++;
      }
      tally.previous = { recorded: total, sim: offTotal };
    }
    // Where the guard-on prompt first changed since this model's previous request (an edit), if before its end.
    let changedAt: number | undefined;
    if (arm.previous) {
      const n = this.#on.shared(arm.previous);
      if (n < Math.min(arm.previous.length, this.#on.length)) changedAt = n;
      this.#on.release(arm.previous);
    }
    arm.previous = this.#on.mark();
    const offCost = tokensOf(arm.off.requestOn(offView, { at: r.at, breakpoints: [0, r.off.length - 1], output }));
    const onCost = tokensOf(
      arm.on.requestOn(onView, {
        at: r.at,
        breakpoints: view.family === "anthropic" ? anthropicPins(arm.on, r.on, onView, changedAt, r.at) : [],
        output,
      }),
    );
    view.requests++;
    addTo(tally.sim, offCost);
    if (r.usage) {
      const rec = { ...r.usage, dollars: hasDollars(profile) ? r.usage.cost : 0 };
      addTo(this.#recorded, rec);
      addTo(tally.recorded, rec);
      const part = PART_SHARE * total;
      if (
        lost > 0 ||
        Math.abs(offCost.cacheRead - r.usage.cacheRead) > part ||
        Math.abs(offCost.cacheWrite - r.usage.cacheWrite) > part
      ) {
        tally.partings.push({
          n: r.n,
          simPrompt: offTotal,
          recPrompt: total,
          simRead: offCost.cacheRead,
          recRead: r.usage.cacheRead,
          simWrite: offCost.cacheWrite,
          recWrite: r.usage.cacheWrite,
          ...(lost > 0 ? { lost } : {}),
        });
      }
    }
    this.#done.push({ n: r.n, model: r.model, cost: { off: offCost, on: onCost } });
  }

  /** The figures so far, priced with the current profiles; it can be called again as requests come. */
  finish(passes: readonly PassCost[], classifierSource: string): SessionMoney {
    const calibrated = this.#calibrated;
    const off = zero();
    const on = zero();
    const recorded = this.#recorded;
    const models = this.#models;
    const pricesOf = new Map<string, Prices>();
    for (const [model] of models) {
      const profile = this.#profiles.get(model);
      pricesOf.set(model, hasDollars(profile) ? (profile?.prices ?? FREE) : FREE);
    }
    const priced = (t: Tokens, model: string) => ({ ...t, dollars: dollars(t, pricesOf.get(model) ?? FREE) });
    const classifierAfter = new Map<number, number>();
    for (const p of passes)
      classifierAfter.set(p.afterRequest, (classifierAfter.get(p.afterRequest) ?? 0) + p.classifier);
    const cumulative: SessionMoney["cumulative"] = [];
    const perRequest = new Map<number, { off: number; on: number }>();
    let cumOff = 0;
    let cumOn = classifierAfter.get(0) ?? 0;
    for (const r of this.#done) {
      if (r.cost) {
        const o = priced(r.cost.off, r.model);
        const n = priced(r.cost.on, r.model);
        addTo(off, o);
        addTo(on, n);
        cumOff += o.dollars;
        cumOn += n.dollars;
        perRequest.set(r.n, { off: o.dollars, on: n.dollars });
      }
      cumOn += classifierAfter.get(r.n) ?? 0;
      cumulative.push({ n: r.n, off: cumOff, on: cumOn });
    }
    const views = [...models.values()].map((v) => ({ ...v }));
    if (calibrated) {
      for (const view of views) {
        const t = this.#tallies.get(view.model);
        if (t) view.calibration = calibrationOf({ ...t, sim: priced(t.sim, view.model) });
      }
    }
    const billedViews = views.filter((v) => v.requests > 0);
    const classifier = passes.reduce((a, p) => a + p.classifier, 0);
    const error = calibrated
      ? {
          input: relative(off.input, recorded.input),
          cacheRead: relative(off.cacheRead, recorded.cacheRead),
          cacheWrite: relative(off.cacheWrite, recorded.cacheWrite),
          ...(recorded.dollars > 0 ? { dollars: relative(off.dollars, recorded.dollars) } : {}),
        }
      : undefined;
    return {
      calibrated,
      priced: billedViews.some((v) => v.prices !== undefined),
      unpriced: billedViews.filter((v) => v.prices === undefined).map((v) => v.model),
      models: views,
      off,
      on,
      ...(calibrated ? { recorded: { ...recorded }, error } : {}),
      classifier: { dollars: classifier, source: classifierSource },
      net: off.dollars - on.dollars - classifier,
      cumulative,
      passes: passPayback(passes, perRequest, this.#done.at(-1)?.n ?? 0),
    };
  }
}

/** A model view's price fields from its profile: dollars only for a model the session pays. */
function viewPrices(profile: CacheProfile | undefined): Pick<ModelView, "priceSource" | "prices"> {
  return {
    priceSource: profile?.priceSource ?? "none",
    ...(profile?.prices && hasDollars(profile) ? { prices: profile.prices } : {}),
  };
}
