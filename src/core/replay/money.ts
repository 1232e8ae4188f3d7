// What the replayed session costs in dollars, guard off and on, with the main model's prompt cache. Both
// arms run the same cost model (PromptCache) over calibrated token counts; the guard-off arm is checked
// against the requests the session recorded without a guard edit in their prompt (money-fit.ts). The
// guard-off arm is the session without any context edit, whatever was recorded: a session recorded with
// the guard on says what its guarded prompts held (`rec`), which fits the token counts but is no
// guard-off bill. The guard-on arm carries the guard's own Anthropic pins: the last question, and after
// an edit a read point on the last live entry before the first changed piece and a write anchor on the
// tool-result batch holding it. Pure: the driver gathers the requests.

import { type CacheProfile, familyOfBehaviour } from "../cache/cache-behaviour.ts";
import {
  dollars,
  type Prices,
  PromptCache,
  type PromptMark,
  PromptTrack,
  type PromptView,
  type RequestCost,
  ScaledPrompt,
} from "../cache/prompt-cache.ts";
import { type Piece, promptTokens, TokenCalibrator } from "./calibrate.ts";
import {
  addTo,
  calibrationOf,
  type Honour,
  honoured,
  learnHonour,
  type ModelCalibration,
  type ModelTally,
  newTally,
  PART_SHARE,
  type Parting,
  relative,
  type Split,
  type Tokens,
  zero,
} from "./money-fit.ts";
import { type PassCost, type PassMoney, passPayback } from "./payback.ts";

export type { Honour, ModelCalibration, Parting, PassCost, PassMoney, Split };

import type { ModelView, MoneyRequest, RequestHead, SessionMoney } from "./money-types.ts";
import { anthropicPins, lastBlockWithin } from "./prompt-marks.ts";

export type { ModelView, MoneyRequest, PriceSource, RequestHead, SessionMoney } from "./money-types.ts";

const OUTPUT_CHARS_PER_TOKEN = 4;
/** A recorded prompt this much smaller than the file's pieces was trimmed by the host. */
const TRIM_SLACK = 0.02;

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
  /** The recorded prompt, when the caller gives one apart from the guard-off prompt. */
  readonly #rec = new PromptTrack();
  #recPending = 0;
  #recSeen: Seen[] = [];
  /** The first request whose recorded prompt held a guard edit. */
  #firstEdited: number | undefined;
  /** Requests priced so far, in order, with their tokens in each arm when billed; `clean`: fitted on. */
  #done: Array<{ n: number; model: string; clean?: boolean; cost?: { off: Tokens; on: Tokens } }> = [];

  /** A fit made elsewhere on the same recording (a priced arm with a lead cannot fit it): its honour. */
  readonly #honour: ReadonlyMap<string, Honour | undefined> | undefined;

  /**
   * `heads`: every request's head (calibrated when one recorded a prompt), or whether it is calibrated.
   * `honour`: each model's honoured shares as fitted elsewhere, used instead of learning them here.
   */
  constructor(
    heads: readonly RequestHead[] | boolean,
    profiles: ReadonlyMap<string, CacheProfile>,
    honour?: ReadonlyMap<string, Honour | undefined>,
  ) {
    this.#profiles = profiles;
    this.#honour = honour;
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
    if (r.rec) {
      this.#recPending = Math.min(this.#recPending, r.recFrom ?? changedFrom(this.#recSeen, r.rec));
      if (r.recFrom === undefined) this.#recSeen = r.rec.map(seen);
    }
    // A request that recorded nothing (an error before the answer) was not billed; it stays in the history.
    const billed = !calibrated || total > 0;
    const profile = this.#profiles.get(r.model);
    const view = this.#viewOf(r.model, profile);
    if (!billed) {
      this.#done.push({ n: r.n, model: r.model });
      return;
    }
    const recorded = calibrated ? total : undefined;
    // The recorded prompt first: its new pieces share what the recording says it holds. Without a
    // separate one it is the guard-off prompt.
    let recTrack = this.#off;
    let recChanged = false;
    if (r.rec) {
      recTrack = this.#rec;
      const recFrom = Math.min(this.#recPending, r.rec.length, this.#rec.length);
      recChanged = recFrom < this.#rec.length;
      this.#fill(this.#rec, r.rec, recFrom, recorded);
      this.#recPending = Number.POSITIVE_INFINITY;
    }
    this.#fill(
      this.#off,
      r.off,
      Math.min(this.#offPending, r.off.length, this.#off.length),
      r.rec ? undefined : recorded,
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
    // Tokens ahead of the recorded prompt (a caller's prefix, calibrate.ts): not the recording's.
    const lead = r.off[0]?.lead ?? 0;
    // The recording describes the guard-off prompt unless a guard edit stood in it.
    const clean = !r.rec || (this.#rec.length === this.#off.length && this.#rec.total === this.#off.total - lead);
    if (!clean) this.#firstEdited ??= r.n;
    let offView: PromptView = this.#off;
    let onView: PromptView = this.#on;
    // A prompt smaller than the pieces the file still holds: the host trimmed it (OpenClaw prunes old
    // tool results). Both arms shrink alike, so the simulated prompt is the one the provider billed.
    const held = recTrack.total - (r.rec ? 0 : lead);
    let k = 1;
    if (calibrated && total > 0 && held > total * (1 + TRIM_SLACK)) {
      k = total / held;
      offView = new ScaledPrompt(this.#off, k, lead);
      onView = new ScaledPrompt(this.#on, k, r.on[0]?.lead ?? 0);
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
      tally = newTally();
      this.#tallies.set(r.model, tally);
    }
    const output = r.usage ? r.usage.output : Math.round(r.outputChars / OUTPUT_CHARS_PER_TOKEN);
    // What the provider did not read was gone whatever the guard did: a miss (nothing read) is cold in
    // both arms, and a partial one forgets, in both, every prefix longer than what was read.
    // The share of the previous prompt the provider read is kept in the simulated one (the host may
    // have trimmed the real prompt, so the recorded token counts cannot be compared directly). Where a
    // guard edit changed the recorded prompt, a read that stops short is the guard's own rewrite: no miss.
    let lost = 0;
    const offTotal = offView.total;
    if (calibrated && r.usage && view.family !== "none") {
      const prev = tally.previous;
      if (r.usage.cacheRead === 0) {
        if (clean || !recChanged) {
          arm.off.clear();
          arm.on.clear();
        }
      } else if (clean && prev && r.usage.cacheRead < (1 - PART_SHARE) * prev.recorded) {
        const last = lastBlockWithin(offView, lead + (r.usage.cacheRead / prev.recorded) * prev.sim);
        lost = arm.off.forgetBeyond(last, r.at);
        arm.on.forgetBeyond(last, r.at);
        if (lost > 0) tally.partialMisses++;
      }
      tally.previous = { recorded: total, sim: r.rec ? held * k : offTotal - lead };
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
    tally.of++;
    if (r.usage && clean) {
      tally.requests++;
      addTo(tally.sim, offCost);
      addTo(tally.recorded, { ...r.usage, dollars: hasDollars(profile) ? r.usage.cost : 0 });
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
    this.#done.push({
      n: r.n,
      model: r.model,
      clean: clean && r.usage !== undefined,
      cost: { off: offCost, on: onCost },
    });
  }

  /** Tokens of `pieces` from `from` on into `track`, fitted to the recorded prompt when one is given. */
  #fill(track: PromptTrack, pieces: readonly Piece[], from: number, recorded: number | undefined): void {
    const before = from > 0 ? track.sumAt(from - 1) - (pieces[0]?.lead ?? 0) : 0;
    const fresh = this.#calibrator.offFrom(pieces, from, before, recorded);
    track.update(
      from,
      pieces.length,
      (i) => (pieces[i] as Piece).key,
      (i) => fresh[i - from] as number,
    );
  }

  #viewOf(model: string, profile: CacheProfile | undefined): ModelView {
    let view = this.#models.get(model);
    if (!view) {
      const behaviour = profile?.behaviour ?? "none";
      view = {
        model,
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
      this.#models.set(model, view);
    }
    return view;
  }

  /** The figures so far, priced with the current profiles; it can be called again as requests come. */
  finish(passes: readonly PassCost[], classifierSource: string): SessionMoney {
    const calibrated = this.#calibrated;
    const off = zero();
    const on = zero();
    const fitOff = zero();
    const recorded = zero();
    const models = this.#models;
    const pricesOf = new Map<string, Prices>();
    const honourOf = new Map<string, Honour | undefined>();
    for (const [model] of models) {
      const profile = this.#profiles.get(model);
      const prices = hasDollars(profile) ? (profile?.prices ?? FREE) : FREE;
      pricesOf.set(model, prices);
      const t = this.#tallies.get(model);
      // A provider that honours part of the cache bills the rest uncached, in both arms.
      if (calibrated && t) {
        honourOf.set(model, this.#honour ? this.#honour.get(model) : learnHonour(t, prices));
        addTo(recorded, t.recorded);
      }
    }
    const priced = (t: Tokens, model: string) => {
      const billed = honoured(t, honourOf.get(model));
      return { ...billed, dollars: dollars(billed, pricesOf.get(model) ?? FREE) };
    };
    const classifierAfter = new Map<number, number>();
    for (const p of passes)
      classifierAfter.set(p.afterRequest, (classifierAfter.get(p.afterRequest) ?? 0) + p.classifier);
    const cumulative: SessionMoney["cumulative"] = [];
    const perRequest = new Map<number, { off: number; on: number }>();
    let cumOff = 0;
    let cumOn = classifierAfter.get(0) ?? 0;
    let billedRequests = 0;
    for (const r of this.#done) {
      if (r.cost) {
        const o = priced(r.cost.off, r.model);
        const n = priced(r.cost.on, r.model);
        addTo(off, o);
        addTo(on, n);
        if (r.clean) addTo(fitOff, o);
        billedRequests++;
        cumOff += o.dollars;
        cumOn += n.dollars;
        perRequest.set(r.n, { off: o.dollars, on: n.dollars });
      }
      cumOn += classifierAfter.get(r.n) ?? 0;
      cumulative.push({ n: r.n, off: cumOff, on: cumOn });
    }
    const views = [...models.values()].map((v) => ({ ...v }));
    const misses: string[] = [];
    if (calibrated) {
      for (const view of views) {
        const t = this.#tallies.get(view.model);
        if (!t) continue;
        const honour = honourOf.get(view.model);
        view.calibration = calibrationOf({ ...t, sim: priced(t.sim, view.model) }, honour);
        if (view.calibration.misses) misses.push(view.model);
      }
    }
    const billedViews = views.filter((v) => v.requests > 0);
    const classifier = passes.reduce((a, p) => a + p.classifier, 0);
    const fitRequests = [...this.#tallies.values()].reduce((a, t) => a + t.requests, 0);
    const error = calibrated
      ? {
          input: relative(fitOff.input, recorded.input),
          cacheRead: relative(fitOff.cacheRead, recorded.cacheRead),
          cacheWrite: relative(fitOff.cacheWrite, recorded.cacheWrite),
          ...(recorded.dollars > 0 ? { dollars: relative(fitOff.dollars, recorded.dollars) } : {}),
        }
      : undefined;
    return {
      calibrated,
      priced: billedViews.some((v) => v.prices !== undefined),
      unpriced: billedViews.filter((v) => v.prices === undefined).map((v) => v.model),
      models: views,
      off,
      on,
      ...(calibrated
        ? {
            recorded,
            error,
            fit: {
              requests: fitRequests,
              of: billedRequests,
              ...(this.#firstEdited !== undefined ? { firstEdited: this.#firstEdited } : {}),
              off: fitOff,
            },
            ...(misses.length ? { misses } : {}),
          }
        : {}),
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
