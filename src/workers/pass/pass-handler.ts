// The pass worker's side of protocol.ts: one handler per message, over the thread's state (pass-thread.ts:
// the sessions' copies and the passes between their messages). PassWorker sends every message of a pass
// to the same thread.

import { type FinishOutput, finishPass } from "../../core/distill/finish.ts";
import { planCheckpoint, planRunEnd } from "../../core/distill/plan.ts";
import { answeredPart, waitingItems, waitingPart } from "../../core/distill/split.ts";
import { workerFailure } from "./failures.ts";
import { packValues } from "./packed-values.ts";
import { type PassThread, thisThread } from "./pass-thread.ts";
import {
  type MessageOf,
  PASS_KINDS,
  type PassKind,
  type PassMessage,
  type PassReply,
  type WorkerFailure,
} from "./protocol.ts";
import { changedOnDisk } from "./read-freshness.ts";
import { DEFAULT_CLIENT } from "./session-store.ts";

function plan(thread: PassThread, input: MessageOf<"plan">): PassReply<"plan"> {
  const client = input.client ?? DEFAULT_CLIENT;
  // Checked before the store changes, so the sender can resend the settings and the same sync.
  const config = thread.settingsOf(client, input.settings);
  if (!config) return workerFailure("settings-missing");
  const synced = thread.stores.sync(input.sync, client);
  if ("missing" in synced) return synced;
  const cwd = input.cwd;
  const diskCheck =
    cwd === undefined ? undefined : (reads: Parameters<typeof changedOnDisk>[1]) => changedOnDisk(cwd, reads);
  const result =
    input.phase === "mid-run"
      ? planCheckpoint(
          synced.entries,
          config,
          input.cache ?? { family: "other" },
          diskCheck,
          input.landing,
          synced.index,
        )
      : planRunEnd(synced.entries, config, input.cache, diskCheck, input.landing, synced.index);
  if (result.status !== "run") return { storeId: synced.storeId, plan: result };
  const byId = new Map(synced.entries.map((e) => [e.id, e.text]));
  const texts = result.candidates.map((c) => byId.get(c.entryId) ?? "");
  thread.holdPass(input.passId, { plan: result, entries: synced.entries, texts, outcomes: [], settings: config });
  const summary = {
    status: "run",
    requestCount: result.requests.length,
    kinds: result.kinds,
    images: result.images.length,
    staleReads: result.staleReads.length,
  } as const;
  return { storeId: synced.storeId, plan: summary };
}

function sync(thread: PassThread, input: MessageOf<"sync">): PassReply<"sync"> {
  const out = thread.stores.sync(input.sync, input.client ?? DEFAULT_CLIENT);
  return "missing" in out ? out : { storeId: out.storeId };
}

// Request windows travel packed (packed-values.ts says why).
function requests(thread: PassThread, input: MessageOf<"requests">): PassReply<"requests"> {
  const pass = thread.pass(input.passId);
  if (!pass) return workerFailure("pass-lost");
  return packValues(pass.plan.requests.slice(input.from, input.to));
}

function outcomes(thread: PassThread, input: MessageOf<"outcomes">): PassReply<"outcomes"> {
  const pass = thread.pass(input.passId);
  if (!pass) return workerFailure("pass-lost");
  input.list.forEach((o, i) => {
    pass.outcomes[input.from + i] = o;
  });
  return pass.outcomes.length;
}

/** Characters of drafts and results per message back to Pi's thread (about 1–2 ms to clone). */
export const FINISH_PART_CHARS = 500_000;

/** Splits drafts and results into parts of about FINISH_PART_CHARS. */
function splitOutput(out: FinishOutput): FinishOutput[] {
  const parts: FinishOutput[] = [];
  let part: FinishOutput = { drafts: [], results: [] };
  let chars = 0;
  const add = (n: number) => {
    chars += n;
    if (chars < FINISH_PART_CHARS) return;
    parts.push(part);
    part = { drafts: [], results: [] };
    chars = 0;
  };
  for (const d of out.drafts) {
    part.drafts.push(d);
    add(200 + (d.replacement?.content.reduce((n, b) => n + b.text.length, 0) ?? 0));
  }
  for (const r of out.results) {
    part.results.push(r);
    add(200 + r.label.length + r.reason.length + r.jev.reduce((n, j) => n + j.length, 0));
  }
  if (part.drafts.length > 0 || part.results.length > 0 || parts.length === 0) parts.push(part);
  return parts;
}

function finish(thread: PassThread, input: MessageOf<"finish">): PassReply<"finish"> {
  const pass = thread.pass(input.passId);
  if (!pass) return workerFailure("pass-lost");
  const { split } = input;
  const waiting = split ? waitingItems(pass.plan, split.pending) : undefined;
  // The first part of a handed-over pass keeps the plan for the second.
  if (split?.part !== "answered") thread.dropPass(input.passId);
  const outcomes = input.outcomes ?? pass.outcomes;
  const output = finishPass({
    plan: pass.plan,
    entries: pass.entries,
    texts: pass.texts,
    outcomes: waiting && split?.part === "answered" ? answeredPart(outcomes, waiting) : outcomes,
    config: pass.settings,
    family: input.family,
  });
  const [first, ...rest] = splitOutput(waiting && split?.part === "waiting" ? waitingPart(output, waiting) : output);
  if (rest.length > 0) thread.holdParts(input.passId, rest);
  return { ...(first as FinishOutput), parts: rest.length };
}

function finishPart(thread: PassThread, input: MessageOf<"finishPart">): PassReply<"finishPart"> {
  return thread.nextPart(input.passId) ?? workerFailure("pass-lost");
}

type Handlers = { [K in PassKind]: (thread: PassThread, message: MessageOf<K>) => PassReply<K> };

const HANDLERS: Handlers = {
  ping: () => "pong",
  release: (thread, input) => thread.release(input.client),
  settings: (thread, input) => {
    thread.setSettings(input.client ?? DEFAULT_CLIENT, input.version, input.settings);
    return true;
  },
  sync,
  plan,
  requests,
  outcomes,
  finish,
  finishPart,
};

/**
 * Answers one message of the protocol with the state of `thread` (by default this thread's); anything
 * else is a `bad-message` failure, not a throw.
 */
export function handlePass<K extends PassKind>(message: MessageOf<K>, thread?: PassThread): PassReply<K>;
export function handlePass(message: PassMessage, thread = thisThread): PassReply<PassKind> | WorkerFailure {
  const kind = (message as { kind?: unknown } | null)?.kind;
  if (typeof kind !== "string" || !PASS_KINDS.includes(kind as PassKind)) return workerFailure("bad-message");
  return (HANDLERS[kind as PassKind] as (t: PassThread, m: PassMessage) => PassReply<PassKind>)(thread, message);
}
