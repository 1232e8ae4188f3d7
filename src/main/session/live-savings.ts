// The dollars the guard has saved on the open branch so far, kept for the footer and `/guard`. Pi's thread
// turns each branch entry into a light ledger entry once (sizes, no text); pricing both arms runs on the
// pass pool's thread (core/replay/saved-so-far.ts), again only when the branch has grown since.
import {
  buildSessionProjection,
  type SessionEntry,
  sessionEntryToContextMessages,
} from "@earendil-works/pi-coding-agent";
import type { ModelPricing } from "../../core/replay/money.ts";
import { messageChars, sumMessages } from "../../core/replay/replay-metrics.ts";
import type { LedgerEntry, SavedSoFar } from "../../core/replay/saved-so-far.ts";
import { RECORD_TYPE } from "../../core/shared/types.ts";
import type { TaskRunner } from "../platform/pool.ts";
import { type AssistantLike, num, usageOf } from "../replay/money-log.ts";
import { emptyRecordedCost, type PriceBook, type RecordedCost } from "../replay/prices.ts";
import { kindOf } from "../replay/prompt-pieces.ts";

type EntryLookup = (id: string) => SessionEntry | undefined;

interface Costed {
  model: AssistantLike;
  tokens: RecordedCost["tokens"];
  dollars: RecordedCost["dollars"];
}

/** What the target of a context edit shows with it, by Pi's own projection of the pair. */
function editedSize(target: SessionEntry, edit: SessionEntry): { chars: number; messages: number } {
  const pair = [
    { ...target, parentId: null },
    { ...edit, parentId: target.id },
  ] as SessionEntry[];
  const projected = buildSessionProjection(pair, edit.id).entries.find((p) => p.sourceEntry.id === target.id);
  const messages = projected?.messages ?? [];
  return { chars: sumMessages(messages), messages: messages.length };
}

/** The ledger entry of one branch entry (and, for an assistant message, what Pi recorded it cost). */
export function toLedger(entry: SessionEntry, lookup: EntryLookup): { ledger: LedgerEntry; costed?: Costed } {
  const messages = sessionEntryToContextMessages(entry);
  const ledger: LedgerEntry = {
    id: entry.id,
    type: entry.type,
    chars: sumMessages(messages),
    messages: messages.length,
    kind: kindOf(messages),
  };
  if (entry.type === "message" && (entry.message as { role?: string }).role === "system") ledger.system = true;
  if (entry.type === "compaction") ledger.firstKeptId = entry.firstKeptEntryId;
  if (entry.type === "context_edit") {
    const target = lookup(entry.targetId);
    ledger.edit = { targetId: entry.targetId, ...(target ? editedSize(target, entry) : { chars: 0, messages: 0 }) };
  }
  if (entry.type === "custom" && entry.customType === RECORD_TYPE && entry.data && typeof entry.data === "object") {
    ledger.record = { costUsd: num((entry.data as { costUsd?: unknown }).costUsd) };
  }
  if (entry.type !== "message" || (entry.message as { role?: string }).role !== "assistant") return { ledger };
  const m = entry.message as AssistantLike;
  const usage = usageOf(m);
  ledger.request = {
    // Pi stamps the message when the request starts; the entry when the answer is complete.
    at: num(m.timestamp) || Date.parse(entry.timestamp) || 0,
    model: `${m.provider ?? "?"}/${m.model ?? "?"}`,
    outputChars: messageChars(m),
    ...(usage ? { usage } : {}),
  };
  const c = m.usage?.cost;
  const costed: Costed = {
    model: m,
    tokens: {
      input: usage?.input ?? 0,
      output: usage?.output ?? 0,
      cacheRead: usage?.cacheRead ?? 0,
      cacheWrite: usage?.cacheWrite ?? 0,
    },
    dollars: {
      input: num(c?.input),
      output: num(c?.output),
      cacheRead: num(c?.cacheRead),
      cacheWrite: num(c?.cacheWrite),
    },
  };
  return { ledger, costed };
}

/** Each request's model priced as the replay prices it (Pi's registry, else what the branch recorded). */
export function pricingOf(costed: readonly Costed[], book: PriceBook): Map<string, ModelPricing> {
  const byModel = new Map<string, { model: AssistantLike; recorded: RecordedCost }>();
  for (const c of costed) {
    const key = `${c.model.provider ?? "?"}/${c.model.model ?? "?"}`;
    let known = byModel.get(key);
    if (!known) {
      known = { model: c.model, recorded: emptyRecordedCost() };
      byModel.set(key, known);
    }
    for (const k of ["input", "output", "cacheRead", "cacheWrite"] as const) {
      known.recorded.tokens[k] += c.tokens[k];
      known.recorded.dollars[k] += c.dollars[k];
    }
  }
  const pricing = new Map<string, ModelPricing>();
  for (const [key, { model, recorded }] of byModel) pricing.set(key, book.main(model, recorded));
  return pricing;
}

/** The whole branch as a ledger with its pricing, reusing what earlier calls converted. */
export class BranchLedger {
  readonly #cache = new Map<string, { ledger: LedgerEntry; costed?: Costed }>();

  read(branch: readonly SessionEntry[], book: PriceBook, lookup: EntryLookup) {
    const ledger: LedgerEntry[] = [];
    const costed: Costed[] = [];
    const live = new Set<string>();
    for (const entry of branch) {
      let hit = this.#cache.get(entry.id);
      if (!hit) {
        hit = toLedger(entry, lookup);
        this.#cache.set(entry.id, hit);
      }
      live.add(entry.id);
      ledger.push(hit.ledger);
      if (hit.costed) costed.push(hit.costed);
    }
    // Another branch (/tree) keeps what it shares; the rest is dropped.
    if (this.#cache.size > live.size * 2)
      for (const id of this.#cache.keys()) if (!live.has(id)) this.#cache.delete(id);
    return { ledger, pricing: [...pricingOf(costed, book)] };
  }
}

export interface LiveSavingsHost {
  branch(): readonly SessionEntry[];
  lookup: EntryLookup;
  book(): PriceBook;
  runner(): TaskRunner | undefined;
  /** Called when a new figure arrived. */
  changed(): void;
}

/** Keeps the latest figure; recomputes when the branch's last entry changed, one computation at a time. */
export class LiveSavings {
  readonly #ledger = new BranchLedger();
  #shownFor: string | undefined;
  #running = false;
  #latest: SavedSoFar | undefined;

  get latest(): SavedSoFar | undefined {
    return this.#latest;
  }

  /** Starts a computation when the branch changed since the last one; errors keep the last figure. */
  refresh(host: LiveSavingsHost): void {
    if (this.#running) return;
    const branch = host.branch();
    const leaf = branch.at(-1)?.id ?? "";
    if (leaf === this.#shownFor) return;
    const runner = host.runner();
    if (!runner) return;
    this.#shownFor = leaf;
    let input: ReturnType<BranchLedger["read"]>;
    try {
      input = this.#ledger.read(branch, host.book(), host.lookup);
    } catch {
      // A branch this cannot read (a registry without prices) shows tokens only.
      return;
    }
    this.#running = true;
    runner
      .run("saved", input)
      .then((saved) => {
        this.#latest = saved;
        host.changed();
      })
      .catch(() => {
        // A figure that cannot be computed is not shown; the footer keeps its tokens.
      })
      .finally(() => {
        this.#running = false;
      });
  }
}
