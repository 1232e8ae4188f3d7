// The session teaches the guard: every removed item the agent recalled, or the user put back with
// `/guard restore`, is a measured miss. Misses are counted per kind of item (and per the reason it was
// removed) from the branch itself: the guard's records say what each pass removed, the recall calls and
// restore requests say what came back. Nothing is kept in memory, so the counts survive `/reload`, a
// restart and compaction alike, and follow `/tree` (a branch without the misses learns nothing).
//
// When a kind's misses pass a rate (MISS_RULE), that kind's thresholds move toward keeping for every later
// pass on the branch, by one step per miss past the first, up to a cap. A branch with no misses is judged
// with the settings as they are.

import type { GuardConfig } from "../shared/config.ts";
import { type GuardRecord, RECORD_TYPE, type RecordResult } from "../shared/types.ts";
import { PIN_TYPE, readPinData } from "./pins.ts";

/** The kinds misses are counted by: each has its own thresholds. */
export type MissKind = "output" | "small" | "exchange" | "image" | "stale";

/**
 * When a kind learns: at least `minMisses` items missed and at least `minRate` of that kind's removals;
 * then one step toward keeping per miss past the first, at most `maxLevel` steps. A step scales a
 * keep threshold down by `step` of its value (and the "nothing needed" threshold up by `step` of its
 * distance to 1), and keeps images `imageTurns` turns longer.
 */
export const MISS_RULE = { minMisses: 2, minRate: 0.1, maxLevel: 3, step: 0.15, imageTurns: 2 } as const;

export interface KindMisses {
  kind: MissKind;
  /** Distinct items of this kind the branch's passes removed (or distilled). */
  removals: number;
  /** Distinct removed items that were recalled or restored. */
  misses: number;
  /** Misses by the reason the item was removed for. */
  reasons: Record<string, number>;
  /** Steps toward keeping (0: the settings as they are). */
  level: number;
}

/** The parts of a branch entry (a snapshot entry or a raw one) read here. */
export interface MissEntryLike {
  type: string;
  customType?: string;
  data?: unknown;
  /** Snapshot entries: the assistant's tool calls. */
  toolCalls?: readonly { name: string; args: Record<string, unknown> }[];
  /** Raw entries: the message, whose content holds the tool calls. */
  message?: unknown;
}

const STALE_REASON = "changed-on-disk";

/** The kind a record result counts under. */
export function missKind(r: Pick<RecordResult, "kind" | "reason">): MissKind {
  if (r.reason === STALE_REASON) return "stale";
  if (r.kind === "small" || r.kind === "exchange" || r.kind === "image") return r.kind;
  return "output";
}

/** The entry ids an assistant entry recalled. */
function recalledIds(e: MissEntryLike): string[] {
  const out: string[] = [];
  const calls: Array<{ name?: unknown; args?: unknown }> = [...(e.toolCalls ?? [])];
  const content = (e.message as { role?: unknown; content?: unknown } | undefined)?.content;
  if (e.toolCalls === undefined && Array.isArray(content)) {
    for (const b of content as Array<{ type?: unknown; name?: unknown; arguments?: unknown }>) {
      if (b?.type === "toolCall") calls.push({ name: b.name, args: b.arguments });
    }
  }
  for (const c of calls) {
    const id = (c.args as { entryId?: unknown } | undefined)?.entryId;
    if (c.name === "recall" && typeof id === "string" && id.trim() !== "") out.push(id.trim());
  }
  return out;
}

function resultsOf(e: MissEntryLike): RecordResult[] {
  if (e.type !== "custom" || e.customType !== RECORD_TYPE) return [];
  const results = (e.data as Partial<GuardRecord> | undefined)?.results;
  if (!Array.isArray(results)) return [];
  return results.filter((r): r is RecordResult => typeof r === "object" && r !== null && typeof r.entryId === "string");
}

/**
 * A record's reason as the misses line names it: an output's reason lists its segments' reasons joined by
 * commas ("chunks,none-needed"), which would read as two entries of the line's own comma-separated list.
 */
function reasonWords(reason: unknown): string {
  const parts = String(reason)
    .split(",")
    .map((r) => r.trim())
    .filter((r) => r !== "");
  return [...new Set(parts)].join(" + ") || "unknown";
}

function levelOf(misses: number, removals: number): number {
  if (misses < MISS_RULE.minMisses || misses < MISS_RULE.minRate * removals) return 0;
  return Math.min(MISS_RULE.maxLevel, misses - 1);
}

/**
 * The misses of a branch, per kind that had any removal, in MissKind order. A recall or restore counts
 * only for an item a pass removed before it, once per item however often it came back.
 */
export function sessionMisses(entries: readonly MissEntryLike[]): KindMisses[] {
  const fold = new MissesFold();
  for (const e of entries) fold.add(e);
  return fold.misses();
}

/** sessionMisses entry by entry: `misses()` answers for the entries added so far. */
export class MissesFold {
  /** The latest removal of each entry: its kind and reason. */
  readonly #removed = new Map<string, { kind: MissKind; reason: string }>();
  readonly #removals = new Map<MissKind, Set<string>>();
  readonly #missed = new Map<string, { kind: MissKind; reason: string }>();

  #miss(id: string): void {
    const r = this.#removed.get(id);
    if (r && !this.#missed.has(id)) this.#missed.set(id, r);
  }

  add(e: MissEntryLike): void {
    for (const r of resultsOf(e)) {
      if (r.outcome === "kept") continue;
      const kind = missKind(r);
      this.#removed.set(r.entryId, { kind, reason: reasonWords(r.reason) });
      const set = this.#removals.get(kind) ?? new Set<string>();
      set.add(r.entryId);
      this.#removals.set(kind, set);
    }
    if (e.type === "custom" && e.customType === PIN_TYPE) {
      const pin = readPinData(e);
      if (pin?.action === "restore") this.#miss(pin.ids[0] as string);
    }
    for (const id of recalledIds(e)) this.#miss(id);
  }

  misses(): KindMisses[] {
    const out: KindMisses[] = [];
    for (const kind of ["output", "small", "exchange", "image", "stale"] as const) {
      const ids = this.#removals.get(kind);
      if (!ids) continue;
      const reasons: Record<string, number> = {};
      let misses = 0;
      for (const m of this.#missed.values()) {
        if (m.kind !== kind) continue;
        misses++;
        reasons[m.reason] = (reasons[m.reason] ?? 0) + 1;
      }
      out.push({ kind, removals: ids.size, misses, reasons, level: levelOf(misses, ids.size) });
    }
    return out;
  }
}

/** Whether putting `now` where `was` stood leaves every count of sessionMisses as it was. */
export function sameForMisses(was: MissEntryLike, now: MissEntryLike): boolean {
  if (was === now) return true;
  const counted = (e: MissEntryLike) =>
    e.type === "custom" && (e.customType === RECORD_TYPE || e.customType === PIN_TYPE);
  if (counted(was) || counted(now)) return false;
  const a = recalledIds(was);
  const b = recalledIds(now);
  return a.length === b.length && a.every((id, i) => id === b[i]);
}

/** The settings a kind's thresholds are read from. */
export type LearnedKeys = Pick<
  GuardConfig,
  | "keepWholeThreshold"
  | "focusWholeThreshold"
  | "chunkKeepThreshold"
  | "midRunChunkKeepThreshold"
  | "noneThreshold"
  | "smallKeepThreshold"
  | "exchangeOmitThreshold"
  | "imageKeepTurns"
>;

/** What a pass learned: the kinds that moved toward keeping (recorded in the pass's record). */
export interface Learned {
  kind: MissKind;
  misses: number;
  removals: number;
  level: number;
}

const round = (x: number) => Math.round(x * 1000) / 1000;

/**
 * `config` with the thresholds of each kind whose misses passed the rate moved toward keeping, and
 * which kinds those are. No kind passed: `config` itself and nothing learned. Stale reads have no
 * threshold (their file changed: the old text is wrong), so their misses are counted and shown only.
 */
export function taughtConfig<C extends LearnedKeys>(
  config: C,
  misses: readonly KindMisses[],
): { config: C; learned: Learned[] } {
  const learned: Learned[] = [];
  let out = config;
  for (const m of misses) {
    if (m.level === 0 || m.kind === "stale") continue;
    learned.push({ kind: m.kind, misses: m.misses, removals: m.removals, level: m.level });
    const down = (t: number) => round(t * (1 - MISS_RULE.step * m.level));
    if (m.kind === "output") {
      out = {
        ...out,
        keepWholeThreshold: down(out.keepWholeThreshold),
        focusWholeThreshold: down(out.focusWholeThreshold),
        chunkKeepThreshold: down(out.chunkKeepThreshold),
        midRunChunkKeepThreshold: down(out.midRunChunkKeepThreshold),
        noneThreshold: round(out.noneThreshold + (1 - out.noneThreshold) * MISS_RULE.step * m.level),
      };
    } else if (m.kind === "small") out = { ...out, smallKeepThreshold: down(out.smallKeepThreshold) };
    else if (m.kind === "exchange") out = { ...out, exchangeOmitThreshold: down(out.exchangeOmitThreshold) };
    else if (m.kind === "image") out = { ...out, imageKeepTurns: out.imageKeepTurns + MISS_RULE.imageTurns * m.level };
  }
  return { config: out, learned };
}

const KIND_WORDS: Record<MissKind, string> = {
  output: "outputs",
  small: "short outputs",
  exchange: "old exchanges",
  image: "images",
  stale: "stale reads",
};

/** `/guard`'s line on what the branch taught the guard, or undefined when nothing was missed. */
export function missesLine(misses: readonly KindMisses[]): string | undefined {
  const missedKinds = misses.filter((m) => m.misses > 0);
  if (missedKinds.length === 0) return undefined;
  const parts = missedKinds.map((m) => {
    const why = Object.entries(m.reasons)
      .sort((a, b) => b[1] - a[1])
      .map(([reason, n]) => `${reason} ${n}`)
      .join(", ");
    const moved = m.level > 0 && m.kind !== "stale" ? `; keeping more (step ${m.level} of ${MISS_RULE.maxLevel})` : "";
    return `${KIND_WORDS[m.kind]} ${m.misses} of ${m.removals} (${why})${moved}`;
  });
  return `Misses (recalled or restored): ${parts.join("; ")}.`;
}
