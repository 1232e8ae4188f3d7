// The dollars the guard has saved on the open branch so far, kept for the footer and `/guard`. Pi's thread
// turns each branch entry into a light ledger entry once (sizes, no text); pricing both arms runs on the
// pass pool's thread (core/replay/saved-so-far.ts), again only when the branch has grown since.
import {
  buildSessionProjection,
  type SessionEntry,
  sessionEntryToContextMessages,
} from "@earendil-works/pi-coding-agent";
import { type CacheProfile, type CheckedRequest, checkRequest, sameList } from "../../core/cache/cache-behaviour.ts";
import type { Prices } from "../../core/cache/prompt-cache.ts";
import { messageChars, sumMessages } from "../../core/replay/replay-metrics.ts";
import type { LedgerEntry, SavedSoFar } from "../../core/replay/saved-so-far.ts";
import { RECORD_TYPE } from "../../core/shared/types.ts";
import type { TaskRunner } from "../platform/pool.ts";
import { type AssistantLike, learnProfiles, type RecordedRequest } from "../replay/money-log.ts";
import type { PriceBook } from "../replay/prices.ts";
import { kindOf } from "../replay/prompt-pieces.ts";

type EntryLookup = (id: string) => SessionEntry | undefined;

const num = (x: unknown) => (typeof x === "number" && Number.isFinite(x) && x > 0 ? x : 0);

/** An assistant message of the branch: what learns its model's profile, and its check, kept per price list. */
interface Recorded {
  message: AssistantLike;
  entryTime: number;
  checked?: { list?: Prices; n: number; c: CheckedRequest };
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

/** The ledger entry of one branch entry (and, for an assistant message, the message its usage is read from). */
function toLedger(entry: SessionEntry, lookup: EntryLookup): { ledger: LedgerEntry; recorded?: Recorded } {
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
  const entryTime = Date.parse(entry.timestamp) || 0;
  // Time and usage come from the check (read): they depend on the registry's list price.
  ledger.request = { at: entryTime, model: `${m.provider ?? "?"}/${m.model ?? "?"}`, outputChars: messageChars(m) };
  return { ledger, recorded: { message: m, entryTime } };
}

/**
 * Each request's recorded usage checked and each model's profile learned as the replay does (money-log's
 * learnProfiles), and the ledger with the checked usage. A message's check is kept while its request
 * number and its model's list price stay the same.
 */
function profilesOf(
  ledger: readonly LedgerEntry[],
  recorded: ReadonlyMap<LedgerEntry, Recorded>,
  book: PriceBook,
): { ledger: LedgerEntry[]; profiles: Map<string, CacheProfile> } {
  const requests: Array<RecordedRequest & { rec: Recorded }> = [];
  for (const e of ledger) {
    const rec = recorded.get(e);
    if (rec) requests.push({ n: requests.length + 1, message: rec.message, entryTime: rec.entryTime, rec });
  }
  const { profiles, heads } = learnProfiles(requests, book, (r, list) => {
    const { rec } = r as RecordedRequest & { rec: Recorded };
    if (rec.checked && rec.checked.n === r.n && sameList(rec.checked.list, list)) return rec.checked.c;
    const c = checkRequest(r.n, r.message, r.entryTime, list);
    rec.checked = { ...(list ? { list: { ...list } } : {}), n: r.n, c };
    return c;
  });
  let i = 0;
  const out = ledger.map((e) => {
    if (!recorded.has(e) || !e.request) return e;
    const head = heads[i++];
    if (!head) return e;
    const { usage: _stale, ...request } = e.request;
    return { ...e, request: { ...request, at: head.at, ...(head.usage ? { usage: head.usage } : {}) } };
  });
  return { ledger: out, profiles };
}

/** The whole branch as a ledger with each model's profile, reusing what earlier calls converted. */
export class BranchLedger {
  readonly #cache = new Map<string, { ledger: LedgerEntry; recorded?: Recorded }>();

  read(branch: readonly SessionEntry[], book: PriceBook, lookup: EntryLookup) {
    const ledger: LedgerEntry[] = [];
    const recorded = new Map<LedgerEntry, Recorded>();
    const live = new Set<string>();
    for (const entry of branch) {
      let hit = this.#cache.get(entry.id);
      if (!hit) {
        hit = toLedger(entry, lookup);
        this.#cache.set(entry.id, hit);
      }
      live.add(entry.id);
      ledger.push(hit.ledger);
      if (hit.recorded) recorded.set(hit.ledger, hit.recorded);
    }
    // Another branch (/tree) keeps what it shares; the rest is dropped.
    if (this.#cache.size > live.size * 2)
      for (const id of this.#cache.keys()) if (!live.has(id)) this.#cache.delete(id);
    const priced = profilesOf(ledger, recorded, book);
    return { ledger: priced.ledger, profiles: [...priced.profiles] };
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
