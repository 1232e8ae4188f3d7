// The pass worker's side of protocol.ts: one handler per message, and the state a pass keeps between
// its messages (its plan, its texts, the outcomes sent ahead, the parts of its output). The session's
// copy itself is session-store.ts. All of it lives on this thread only: PassWorker sends every message
// of a pass to the same thread.

import { type FinishOutput, finishPass } from "../../core/distill/finish.ts";
import { planCheckpoint, planRunEnd, type RunPlan } from "../../core/distill/plan.ts";
import { answeredPart, waitingItems, waitingPart } from "../../core/distill/split.ts";
import type { ClassifierOutcome, SnapEntry } from "../../core/shared/types.ts";
import { workerFailure } from "./failures.ts";
import { packValues } from "./packed-values.ts";
import {
  type MessageOf,
  PASS_KINDS,
  type PassKind,
  type PassMessage,
  type PassReply,
  type WorkerFailure,
} from "./protocol.ts";
import { changedOnDisk } from "./read-freshness.ts";
import { DEFAULT_CLIENT, dropStore, syncEntries } from "./session-store.ts";

interface HeldPass {
  plan: RunPlan;
  entries: SnapEntry[];
  texts: string[];
  /** Classifier outcomes sent ahead of `finish`. */
  outcomes: ClassifierOutcome[];
}

// A pass is planned and finished within one hook (a handed-over one, by its waiting part); keep a few
// in case passes (of several sessions) overlap.
const held = new Map<string, HeldPass>();
const heldParts = new Map<string, FinishOutput[]>();
const MAX_HELD = 8;

function keepFew<T>(map: Map<string, T>): void {
  while (map.size > MAX_HELD) map.delete(map.keys().next().value as string);
}

function plan(input: MessageOf<"plan">): PassReply<"plan"> {
  const synced = syncEntries(input.sync, input.client ?? DEFAULT_CLIENT);
  if ("missing" in synced) return synced;
  const cwd = input.cwd;
  const diskCheck =
    cwd === undefined ? undefined : (reads: Parameters<typeof changedOnDisk>[1]) => changedOnDisk(cwd, reads);
  const result =
    input.phase === "mid-run"
      ? planCheckpoint(synced.entries, input.config, input.cache ?? { family: "other" }, diskCheck)
      : planRunEnd(synced.entries, input.config, input.cache, diskCheck);
  if (result.status !== "run") return { storeId: synced.storeId, plan: result };
  const byId = new Map(synced.entries.map((e) => [e.id, e.text]));
  const texts = result.candidates.map((c) => byId.get(c.entryId) ?? "");
  held.set(input.passId, { plan: result, entries: synced.entries, texts, outcomes: [] });
  keepFew(held);
  const summary = {
    status: "run",
    requestCount: result.requests.length,
    kinds: result.kinds,
    images: result.images.length,
    staleReads: result.staleReads.length,
  } as const;
  return { storeId: synced.storeId, plan: summary };
}

function sync(input: MessageOf<"sync">): PassReply<"sync"> {
  const out = syncEntries(input.sync, input.client ?? DEFAULT_CLIENT);
  return "missing" in out ? out : { storeId: out.storeId };
}

// Request windows travel packed (packed-values.ts says why).
function requests(input: MessageOf<"requests">): PassReply<"requests"> {
  const pass = held.get(input.passId);
  if (!pass) return workerFailure("pass-lost");
  return packValues(pass.plan.requests.slice(input.from, input.to));
}

function outcomes(input: MessageOf<"outcomes">): PassReply<"outcomes"> {
  const pass = held.get(input.passId);
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

function finish(input: MessageOf<"finish">): PassReply<"finish"> {
  const pass = held.get(input.passId);
  if (!pass) return workerFailure("pass-lost");
  const { split } = input;
  const waiting = split ? waitingItems(pass.plan, split.pending) : undefined;
  // The first part of a handed-over pass keeps the plan for the second.
  if (split?.part !== "answered") held.delete(input.passId);
  const outcomes = input.outcomes ?? pass.outcomes;
  const output = finishPass({
    plan: pass.plan,
    entries: pass.entries,
    texts: pass.texts,
    outcomes: waiting && split?.part === "answered" ? answeredPart(outcomes, waiting) : outcomes,
    config: input.config,
    family: input.family,
  });
  const [first, ...rest] = splitOutput(waiting && split?.part === "waiting" ? waitingPart(output, waiting) : output);
  if (rest.length > 0) {
    heldParts.set(input.passId, rest);
    keepFew(heldParts);
  }
  return { ...(first as FinishOutput), parts: rest.length };
}

function finishPart(input: MessageOf<"finishPart">): PassReply<"finishPart"> {
  const rest = heldParts.get(input.passId);
  const part = rest?.shift();
  if (!rest || !part) return workerFailure("pass-lost");
  if (rest.length === 0) heldParts.delete(input.passId);
  return part;
}

type Handlers = { [K in PassKind]: (message: MessageOf<K>) => PassReply<K> };

const HANDLERS: Handlers = {
  ping: () => "pong",
  release: (input) => dropStore(input.client),
  sync,
  plan,
  requests,
  outcomes,
  finish,
  finishPart,
};

/** Answers one message of the protocol; anything else is a `bad-message` failure, not a throw. */
export function handlePass<K extends PassKind>(message: MessageOf<K>): PassReply<K>;
export function handlePass(message: PassMessage): PassReply<PassKind> | WorkerFailure {
  const kind = (message as { kind?: unknown } | null)?.kind;
  if (typeof kind !== "string" || !PASS_KINDS.includes(kind as PassKind)) return workerFailure("bad-message");
  return (HANDLERS[kind as PassKind] as (m: PassMessage) => PassReply<PassKind>)(message);
}

/** Passes the worker holds state for (tests). */
export function heldPasses(): number {
  return held.size + heldParts.size;
}
