// The dollars the guard has saved on the open branch so far, kept for the footer and `/guard`. Pi's thread
// turns each branch entry into a light ledger entry once (sizes, no text), as the branch grows; the pass
// pool's thread prices the ledger as it grows too (core/replay/saved-so-far.ts), a slice at a time and only
// when no pass is waiting for the thread, so the footer never holds a pass up.
import { randomUUID } from "node:crypto";
import {
  buildSessionProjection,
  type SessionEntry,
  sessionEntryToContextMessages,
} from "@earendil-works/pi-coding-agent";
import {
  type CacheProfile,
  type CheckedRequest,
  checkRequest,
  MAX_REQUEST_DOLLARS,
} from "../../core/cache/cache-behaviour.ts";
import { readPinData } from "../../core/records/pins.ts";
import { messageChars, sumMessages } from "../../core/replay/replay-metrics.ts";
import type { LedgerEntry, SavedSoFar } from "../../core/replay/saved-so-far.ts";
import { RECORD_TYPE } from "../../core/shared/types.ts";
import type { SavedInput } from "../../workers/saved/saved-task.ts";
import type { TaskRunner } from "../platform/pool.ts";
import { traceSwallowed } from "../platform/swallowed.ts";
import { type AssistantLike, learnProfiles, type RecordedRequest } from "../replay/money-log.ts";
import type { PriceBook } from "../replay/prices.ts";
import { kindOf } from "../replay/prompt-pieces.ts";

type EntryLookup = (id: string) => SessionEntry | undefined;

/** The guard's recall tool (recall-tool.ts): its results are the guard's doing, not the session's. */
const RECALL_TOOL = "recall";

/** A classifier cost as a record states it: a plausible number, else nothing. */
const cost = (x: unknown) => (typeof x === "number" && Number.isFinite(x) && x > 0 && x <= MAX_REQUEST_DOLLARS ? x : 0);

/** How long one pricing message may keep the pass thread; a pass waits at most about this long for it. */
export const SLICE_MS = 25;
/** A pricing message that runs longer than this is stopped (its thread replaced), as a pass message is. */
const SAVED_TASK_TIMEOUT_MS = 30_000;

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

/** The usage the money view prices: the checked tokens, and the cost only when it is plausible. */
function usageOf(c: CheckedRequest) {
  return c.tokens ? { ...c.tokens, cost: c.cost?.total ?? 0 } : undefined;
}

/** One request of the branch: its message and check, what learns its model's profile. */
type Recorded = RecordedRequest & { checked: CheckedRequest; index: number };

/**
 * The branch as a ledger, converted one entry at a time as the branch grows, with each request's recorded
 * usage checked once (against its model's list price) and each model's profile learned from them all.
 */
export class BranchLedger {
  readonly #ledger: LedgerEntry[] = [];
  readonly #ids: string[] = [];
  readonly #requests: Recorded[] = [];

  get entries(): readonly LedgerEntry[] {
    return this.#ledger;
  }

  /**
   * Brings the ledger to `branch` (the active branch, root first). Returns whether it had to start over
   * (the branch left the entries read before, /tree).
   */
  sync(branch: readonly SessionEntry[], book: PriceBook, lookup: EntryLookup): boolean {
    let same = 0;
    const n = Math.min(branch.length, this.#ids.length);
    // Usually the branch only grew: its entries before the new ones are the ones read before.
    if (n > 0 && branch[n - 1]?.id === this.#ids[n - 1]) same = n;
    else while (same < n && branch[same]?.id === this.#ids[same]) same++;
    const restart = same < this.#ids.length;
    if (restart) this.#truncate(same);
    for (let i = same; i < branch.length; i++) this.#add(branch[i] as SessionEntry, book, lookup);
    return restart;
  }

  /** The ledger of `branch` and the models' profiles, as the pass thread is given them. */
  read(branch: readonly SessionEntry[], book: PriceBook, lookup: EntryLookup) {
    this.sync(branch, book, lookup);
    return { ledger: [...this.#ledger], profiles: this.profiles(book) };
  }

  /** The models' profiles, learned from every request on the branch (their checks are kept). */
  profiles(book: PriceBook): Array<[string, CacheProfile]> {
    return [...learnProfiles(this.#requests, book, (r) => (r as Recorded).checked).profiles];
  }

  #truncate(length: number): void {
    this.#ledger.length = length;
    this.#ids.length = length;
    while ((this.#requests.at(-1)?.index ?? -1) >= length) this.#requests.pop();
  }

  #add(entry: SessionEntry, book: PriceBook, lookup: EntryLookup): void {
    const messages = sessionEntryToContextMessages(entry);
    const ledger: LedgerEntry = {
      id: entry.id,
      type: entry.type,
      chars: sumMessages(messages),
      messages: messages.length,
      kind: kindOf(messages),
    };
    const message = entry.type === "message" ? (entry.message as { role?: string; toolName?: string }) : undefined;
    if (message?.role === "system") ledger.system = true;
    if (message?.role === "toolResult" && message.toolName === RECALL_TOOL) ledger.recall = true;
    const pin = readPinData(entry);
    if (pin?.action === "restore") ledger.restore = pin.ids;
    if (entry.type === "compaction") ledger.firstKeptId = entry.firstKeptEntryId;
    if (entry.type === "context_edit") {
      const target = lookup(entry.targetId);
      ledger.edit = { targetId: entry.targetId, ...(target ? editedSize(target, entry) : { chars: 0, messages: 0 }) };
    }
    if (entry.type === "custom" && entry.customType === RECORD_TYPE && entry.data && typeof entry.data === "object") {
      ledger.record = { costUsd: cost((entry.data as { costUsd?: unknown }).costUsd) };
    }
    if (entry.type === "message" && (entry.message as { role?: string }).role === "assistant") {
      const message = entry.message as AssistantLike;
      const entryTime = Date.parse(entry.timestamp) || 0;
      const n = this.#requests.length + 1;
      const checked = checkRequest(n, message, entryTime, book.model(message.provider, message.model)?.list);
      const usage = usageOf(checked);
      this.#requests.push({ n, message, entryTime, checked, index: this.#ledger.length });
      // Pi stamps the message when the request starts; the entry when the answer is complete.
      ledger.request = {
        at: checked.at || entryTime,
        model: `${message.provider ?? "?"}/${message.model ?? "?"}`,
        outputChars: messageChars(message),
        ...(usage ? { usage } : {}),
      };
    }
    this.#ledger.push(ledger);
    this.#ids.push(entry.id);
  }
}

export interface LiveSavingsHost {
  /** The active branch, root first. */
  branch(): readonly SessionEntry[];
  lookup: EntryLookup;
  book(): PriceBook;
  runner(): TaskRunner | undefined;
  /** Called when a new figure arrived. */
  changed(): void;
}

/**
 * Keeps the latest figure. At each refresh the branch's new entries go to the pass thread, which prices
 * them a slice at a time behind any pass; a figure is kept after each slice, so a long branch shows its
 * dollars as they come.
 */
export class LiveSavings {
  readonly #client = randomUUID();
  readonly #ledger = new BranchLedger();
  /** Ledger entries the pass thread holds. */
  #sent = 0;
  #running = false;
  /** A refresh came while one ran: it runs again once that one is done. */
  #again = false;
  #latest: SavedSoFar | undefined;

  get latest(): SavedSoFar | undefined {
    return this.#latest;
  }

  /** A refresh is still pricing: the latest figure does not cover the whole branch yet. */
  get pricing(): boolean {
    return this.#running;
  }

  /** Prices what the branch gained since the last refresh; errors keep the last figure. */
  refresh(host: LiveSavingsHost): void {
    if (this.#running) {
      this.#again = true;
      return;
    }
    const runner = host.runner();
    if (!runner) return;
    let profiles: Array<[string, CacheProfile]>;
    let book: PriceBook;
    try {
      book = host.book();
      if (this.#ledger.sync(host.branch(), book, host.lookup)) this.#sent = 0;
      if (this.#sent === this.#ledger.entries.length && this.#latest) return;
      profiles = this.#ledger.profiles(book);
    } catch (error) {
      // A branch this cannot read (a registry without prices) shows tokens only.
      traceSwallowed("live-savings.sync", error);
      return;
    }
    this.#running = true;
    this.#again = false;
    this.#price(runner, profiles, host)
      // A figure that cannot be computed is not shown; the footer keeps its tokens.
      .catch((error: unknown) => traceSwallowed("live-savings.price", error))
      .finally(() => {
        this.#running = false;
        if (this.#again) this.refresh(host);
      });
  }

  /** Sends the new entries, then slices until everything is priced; each slice's figure is kept. */
  async #price(runner: TaskRunner, profiles: Array<[string, CacheProfile]>, host: LiveSavingsHost): Promise<void> {
    for (;;) {
      const entries = this.#ledger.entries;
      const input: SavedInput = {
        client: this.#client,
        from: this.#sent,
        entries: entries.slice(this.#sent),
        profiles,
        sliceMs: SLICE_MS,
      };
      const out = await runner.run("saved", input, { background: true, timeoutMs: SAVED_TASK_TIMEOUT_MS });
      if ("missing" in out) {
        // A new thread: the whole ledger once more (a message from the start is never missing).
        this.#sent = 0;
        continue;
      }
      this.#sent = out.length;
      this.#latest = out.saved;
      host.changed();
      if (out.done) return;
    }
  }
}
