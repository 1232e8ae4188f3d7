// How the guard-off simulation fits what the session recorded, per model: the token splits, the requests
// where they part, and the share of its cache writes and reads a provider honours. Only requests whose
// recorded prompt held no guard edit are compared (the recording is then the guard-off prompt), so a
// session recorded with the guard on is fitted on its requests before the first edit landed.

import type { Prices } from "../cache/prompt-cache.ts";
import { dollars } from "../cache/prompt-cache.ts";

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

/** The share of the simulated cache writes (reads) the provider billed as such; the rest it billed uncached. */
export interface Honour {
  cacheWrite: number;
  cacheRead: number;
}

export interface ModelCalibration {
  sim: Split;
  recorded: Split;
  error: { input: number; cacheRead: number; cacheWrite: number; dollars?: number };
  /** The requests where simulation and recording part most, largest first (at most MAX_PARTINGS). */
  partings: Parting[];
  /** Requests the provider read less than the model expected: replayed as partial misses in both arms. */
  partialMisses: number;
  /** Requests compared with the recording, of the model's billed requests. */
  requests: number;
  of: number;
  /** The provider honours part of the cache the model simulates: both arms are priced with these shares. */
  honour?: Honour;
  /** The fitted model still misses the recorded dollars by more than MISS_SHARE: not one to gate with. */
  misses?: true;
}

/** A request's simulated and recorded cache tokens part when they differ by this share of its prompt. */
export const PART_SHARE = 0.1;
const MAX_PARTINGS = 20;
/** A provider that bills fewer than this share of the simulated cache tokens honours the cache in part. */
const HONOURED = 0.9;
/** A model that misses the recorded dollars by more than this share does not describe the provider. */
export const MISS_SHARE = 0.1;

export const zero = (): Split => ({ input: 0, cacheRead: 0, cacheWrite: 0, output: 0, dollars: 0 });

export function addTo(into: Split, c: Omit<Split, "dollars"> & { dollars?: number }): void {
  into.input += c.input;
  into.cacheRead += c.cacheRead;
  into.cacheWrite += c.cacheWrite;
  into.output += c.output;
  into.dollars += c.dollars ?? 0;
}

export const relative = (sim: number, rec: number) => (rec === 0 ? (sim === 0 ? 0 : 1) : (sim - rec) / rec);

export type Tokens = Omit<Split, "dollars">;

/** What one model's calibration requests gathered while the session was simulated. */
export interface ModelTally {
  /** The model's previous request: its recorded and simulated prompt tokens. */
  previous?: { recorded: number; sim: number };
  sim: Split;
  recorded: Split;
  partings: Parting[];
  partialMisses: number;
  requests: number;
  of: number;
}

export const newTally = (): ModelTally => ({
  sim: zero(),
  recorded: zero(),
  partings: [],
  partialMisses: 0,
  requests: 0,
  of: 0,
});

/** Tokens as the provider bills them: what it does not honour of the cache is billed as uncached input. */
export function honoured(t: Tokens, h: Honour | undefined): Tokens {
  if (!h) return t;
  const write = t.cacheWrite * h.cacheWrite;
  const read = t.cacheRead * h.cacheRead;
  return {
    input: t.input + (t.cacheWrite - write) + (t.cacheRead - read),
    cacheRead: read,
    cacheWrite: write,
    output: t.output,
  };
}

const shareOf = (rec: number, sim: number) => (sim > 0 && rec < HONOURED * sim ? rec / sim : 1);

/**
 * The shares of its simulated cache writes and reads a provider honours, when it bills clearly fewer
 * (MiniMax's Anthropic endpoint writes a fraction of what cache_control asks and bills the rest as input),
 * and only when they bring the simulated dollars nearer the recorded ones.
 */
export function learnHonour(t: ModelTally, prices: Prices): Honour | undefined {
  if (t.requests === 0 || t.recorded.dollars <= 0) return undefined;
  const h = {
    cacheWrite: shareOf(t.recorded.cacheWrite, t.sim.cacheWrite),
    cacheRead: shareOf(t.recorded.cacheRead, t.sim.cacheRead),
  };
  if (h.cacheWrite === 1 && h.cacheRead === 1) return undefined;
  const before = Math.abs(relative(dollars(t.sim, prices), t.recorded.dollars));
  const after = Math.abs(relative(dollars(honoured(t.sim, h), prices), t.recorded.dollars));
  return after < before ? h : undefined;
}

export function calibrationOf(t: ModelTally, honour: Honour | undefined): ModelCalibration {
  const partings = [...t.partings]
    .sort((a, b) => Math.abs(b.simRead - b.recRead) - Math.abs(a.simRead - a.recRead))
    .slice(0, MAX_PARTINGS);
  const error = {
    input: relative(t.sim.input, t.recorded.input),
    cacheRead: relative(t.sim.cacheRead, t.recorded.cacheRead),
    cacheWrite: relative(t.sim.cacheWrite, t.recorded.cacheWrite),
    ...(t.recorded.dollars > 0 ? { dollars: relative(t.sim.dollars, t.recorded.dollars) } : {}),
  };
  return {
    sim: t.sim,
    recorded: t.recorded,
    error,
    partings,
    partialMisses: t.partialMisses,
    requests: t.requests,
    of: t.of,
    ...(honour ? { honour } : {}),
    ...(error.dollars !== undefined && Math.abs(error.dollars) > MISS_SHARE ? { misses: true as const } : {}),
  };
}
