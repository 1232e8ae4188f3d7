// Savings on the current branch, recomputed from the projection on every redraw, so they follow
// /tree, reloads and compaction without any state of our own.
import { isGuardEdit, readJudgments } from "../items/judged.ts";
import { imageChars } from "../shared/size.ts";
import { formatCount } from "../shared/text.ts";
import { type GuardRecord, type ImageHead, RECORD_TYPE, type SnapEntry } from "../shared/types.ts";
import { readPins } from "./pins.ts";

export interface Savings {
  /** Characters kept out of the model's context right now. */
  chars: number;
  /** Outputs, outputs without their images, and exchanges the guard currently replaces. */
  items: number;
}

function rawChars(e: SnapEntry): number {
  const heads: (ImageHead | undefined)[] = e.rawImageHeads ?? [];
  let chars = (e.rawText ?? "").length;
  for (let i = 0; i < (e.rawImages ?? 0); i++) chars += imageChars(heads[i]);
  return chars;
}

function shownChars(e: SnapEntry): number {
  const heads: (ImageHead | undefined)[] = e.imageHeads ?? [];
  let chars = e.text.length;
  for (let i = 0; i < e.images; i++) chars += imageChars(heads[i]);
  return chars;
}

/**
 * Tool results showing the guard's replacement, and prompts showing the exchange stub: those count their
 * raw exchange (the prompt and the omitted entries up to the next prompt) minus the stub. The guard's
 * replacements are the edits its records on the branch list (judged.ts): an output that merely starts
 * with the marker, or another extension's edit that does, saves nothing of ours. A restored entry saves
 * nothing from the moment it is asked for (its edit lands at the next boundary).
 */
export function currentSavings(entries: readonly SnapEntry[]): Savings {
  let chars = 0;
  let items = 0;
  const judged = readJudgments(entries);
  if (judged.edited.size === 0) return { chars, items };
  const { restored } = readPins(entries);
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i] as SnapEntry;
    if (e.rawText === undefined || !isGuardEdit(e, judged) || restored.has(e.id)) continue;
    if (e.role === "toolResult") {
      chars += Math.max(0, rawChars(e) - shownChars(e));
      items++;
    } else if (e.role === "user" && e.type === "message") {
      let raw = rawChars(e);
      for (let j = i + 1; j < entries.length; j++) {
        const next = entries[j] as SnapEntry;
        if (next.role === "user" && next.type === "message" && next.visible) break;
        if (!next.visible && next.edited) raw += rawChars(next);
      }
      chars += Math.max(0, raw - shownChars(e));
      items++;
    }
  }
  return { chars, items };
}

export interface Lifetime {
  /** Σ savedChars of the guard's records on the branch. */
  savedChars: number;
  /** A compaction came after a record that saved something. */
  compacted: boolean;
  /** Records on the branch, and how many were mid-run checkpoints. */
  passes: number;
  checkpoints: number;
  requests: number;
  inputTokens: number;
  costUsd: number;
}

export interface BranchEntryLike {
  type: string;
  customType?: string;
  data?: unknown;
}

const num = (v: unknown) => (typeof v === "number" && Number.isFinite(v) ? v : 0);

/** Totals from the records on the branch (raw branch entries: compaction does not hide them). */
export function lifetime(branch: readonly BranchEntryLike[]): Lifetime {
  const tally = new LifetimeTally();
  for (const e of branch) tally.add(e);
  return tally.value;
}

/** The same totals, kept as entries are appended to the branch in order. */
export class LifetimeTally {
  readonly value: Lifetime = {
    savedChars: 0,
    compacted: false,
    passes: 0,
    checkpoints: 0,
    requests: 0,
    inputTokens: 0,
    costUsd: 0,
  };
  #savedBefore = false;

  add(e: BranchEntryLike): void {
    const out = this.value;
    if (e.type === "compaction" && this.#savedBefore) out.compacted = true;
    if (e.type !== "custom" || e.customType !== RECORD_TYPE || !e.data || typeof e.data !== "object") return;
    const r = e.data as Partial<GuardRecord>;
    const saved = num(r.savedChars);
    out.savedChars += saved;
    if (saved > 0) this.#savedBefore = true;
    out.passes++;
    if (r.phase === "mid-run") out.checkpoints++;
    out.requests += num(r.requests);
    out.inputTokens += num(r.inputTokens);
    out.costUsd += num(r.costUsd);
  }
}

/** Footer text for the ready state: ≈ tokens kept out (chars ÷ 4) · items, plus Σ after a compaction. */
export function savingsText(savings: Savings, life?: Pick<Lifetime, "savedChars" | "compacted">): string {
  const sigma = life?.compacted && life.savedChars > savings.chars ? ` · Σ−${formatCount(life.savedChars / 4)}` : "";
  if (savings.items === 0) return sigma ? `🛡 0${sigma}` : "🛡 0 saved";
  return `${savedTokensText(savings)} · ${savings.items}${sigma}`;
}

/** The tokens saved, the head of savingsText when anything was. */
export function savedTokensText(savings: Savings): string {
  return `🛡 −${formatCount(savings.chars / 4)}`;
}
