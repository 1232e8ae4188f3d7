// The shape every provider demands of a request, checked on the whole draft list one boundary returns:
// every tool result answers a call of the assistant message just before it (only other results and
// system messages between), and every call whose result is on the context is answered. The check runs
// on the projection as Pi will build it once every draft is appended: the latest edit of a target wins,
// an omission hides it, a replacement shows it with that content (an assistant's calls are then the
// ones in the replacement), and a compaction drops what comes before its first kept entry.
//
// What breaks the shape is settled in this order: a unit of the guard's own judged edits (an exchange:
// its prompt's stub and every omission behind it; any other edit alone) that adds a break is dropped
// whole, so a restore in the same list wins; what stays broken (written earlier, or by someone else)
// is repaired with edits appended last: a hidden call or result is shown again, and a result whose call
// cannot be shown before it is omitted.

/** One context entry as the check needs it (raw message facts and what the projection shows now). */
export interface PairEntry {
  id: string;
  /** Role of the raw message (`custom` for custom messages); undefined for entries that show nothing. */
  role?: string;
  /** Assistant: the raw message's tool call ids. */
  calls?: readonly string[];
  /** Assistant: its stop reason is `error` or `aborted`, so pi-ai leaves it out of every request. */
  skipped?: boolean;
  /** Tool result: the call it answers. */
  callId?: string;
  /** The projection shows it now. */
  visible: boolean;
  /** Assistant: the call ids it shows now (an edit may have replaced its content). */
  shownCalls?: readonly string[];
}

/** The drafts of a boundary, as far as the check reads them. */
export interface ShapeDraft {
  type: string;
  /** context_edit: the entry it edits, and its new content (null: omitted). */
  targetId?: string;
  replacement?: { content: unknown } | null;
  /** compaction: the first entry it keeps. */
  firstKeptEntryId?: string | null;
}

/** A break of the shape: a result without its call before it, or a hidden result of a shown call. */
export interface ShapeBreak {
  kind: "orphan-result" | "unanswered-call";
  /** The tool result entry. */
  resultId: string;
  /** The assistant entry that made the call, when it is on the context. */
  callerId?: string;
}

interface State {
  visible: boolean;
  calls: readonly string[];
}

/** Tool call ids in a message content (a replacement's, or a raw one). */
export function callIdsOf(content: unknown): string[] {
  if (!Array.isArray(content)) return [];
  const out: string[] = [];
  for (const block of content as Array<{ type?: unknown; id?: unknown }>) {
    if (block && block.type === "toolCall" && typeof block.id === "string") out.push(block.id);
  }
  return out;
}

/** Where each entry sits, built once per entry list (a boundary checks the same list several times). */
const positions = new WeakMap<readonly PairEntry[], Map<string, number>>();
function positionsOf(entries: readonly PairEntry[]): Map<string, number> {
  let at = positions.get(entries);
  if (!at) {
    at = new Map(entries.map((e, i) => [e.id, i]));
    positions.set(entries, at);
  }
  return at;
}

/** What the projection shows after `drafts`: entries from `from` on, and the edited ones' new state. */
interface Projected {
  from: number;
  edited: Map<number, State>;
}

function project(entries: readonly PairEntry[], drafts: readonly ShapeDraft[]): Projected {
  const at = positionsOf(entries);
  let from = 0;
  const edited = new Map<number, State>();
  for (const d of drafts) {
    if (d.type === "compaction") {
      const first = d.firstKeptEntryId;
      const i = typeof first === "string" ? at.get(first) : undefined;
      from = i === undefined ? entries.length : Math.max(from, i);
      continue;
    }
    if (d.type !== "context_edit" || typeof d.targetId !== "string") continue;
    const i = at.get(d.targetId);
    if (i === undefined) continue;
    const replacement = d.replacement ?? null;
    const entry = entries[i] as PairEntry;
    edited.set(
      i,
      replacement === null
        ? { visible: false, calls: [] }
        : { visible: true, calls: entry.role === "assistant" ? callIdsOf(replacement.content) : [] },
    );
  }
  return { from, edited };
}

function stateAt(entries: readonly PairEntry[], p: Projected, i: number): State {
  const e = entries[i] as PairEntry;
  return p.edited.get(i) ?? { visible: e.visible, calls: e.shownCalls ?? e.calls ?? [] };
}

/** Roles that are sent as a user turn (and so end the results of the assistant before them). */
const TRANSPARENT = new Set(["toolResult", "system"]);

/** The breaks of the projection after `drafts`, walked the way pi-ai builds a request. */
export function shapeBreaks(entries: readonly PairEntry[], drafts: readonly ShapeDraft[] = []): ShapeBreak[] {
  const p = project(entries, drafts);
  const out: ShapeBreak[] = [];
  // Found only when a break needs them: the entry of each call's result, and of each call's caller.
  let resultOf: Map<string, number> | undefined;
  let callerOf: Map<string, string> | undefined;
  const index = () => {
    resultOf = new Map();
    callerOf = new Map();
    for (let i = p.from; i < entries.length; i++) {
      const e = entries[i] as PairEntry;
      if (e.role === "toolResult" && e.callId !== undefined && !resultOf.has(e.callId)) resultOf.set(e.callId, i);
      if (e.role === "assistant") for (const c of e.calls ?? []) callerOf.set(c, e.id);
    }
  };
  let caller = "";
  // The calls of the assistant before, each blanked once answered.
  let open: string[] = [];
  const close = () => {
    for (const c of open) {
      if (c === "") continue;
      if (!resultOf) index();
      const r = resultOf?.get(c);
      // A result that is on the context but hidden: the request would carry a made-up one instead.
      if (r !== undefined && !(p.edited.get(r)?.visible ?? (entries[r] as PairEntry).visible)) {
        out.push({ kind: "unanswered-call", resultId: (entries[r] as PairEntry).id, callerId: caller });
      }
    }
    open = [];
  };
  const edits = p.edited.size > 0;
  for (let i = p.from; i < entries.length; i++) {
    const e = entries[i] as PairEntry;
    const role = e.role;
    if (role === undefined) continue;
    const edit = edits ? p.edited.get(i) : undefined;
    if (!(edit ? edit.visible : e.visible)) continue;
    if (role === "assistant") {
      close();
      const calls = edit ? edit.calls : (e.shownCalls ?? e.calls ?? []);
      if (!e.skipped && calls.length > 0) {
        caller = e.id;
        open = [...calls];
      }
      continue;
    }
    if (role === "toolResult") {
      const k = open.indexOf(e.callId ?? "");
      if (k >= 0 && e.callId !== "") open[k] = "";
      else {
        if (!callerOf) index();
        const owner = callerOf?.get(e.callId ?? "");
        out.push({ kind: "orphan-result", resultId: e.id, ...(owner !== undefined ? { callerId: owner } : {}) });
      }
      continue;
    }
    if (!TRANSPARENT.has(role)) close();
  }
  close();
  return out;
}

const breakKey = (b: ShapeBreak) => `${b.kind}:${b.resultId}`;

/** A judged edit the check dropped, with why. */
export interface DroppedEdit {
  targetId: string;
  why: string;
}

/** An edit the check appends to mend the shape: `restore` puts the raw content back, `omit` hides it. */
export interface Repair {
  targetId: string;
  action: "restore" | "omit";
  /** The break it mends, for the notice. */
  cause: ShapeBreak["kind"];
}

export interface ShapeInput {
  entries: readonly PairEntry[];
  /** Other extensions' drafts (left as they are). */
  theirs: readonly ShapeDraft[];
  /** The guard's judged edits and record, in order: what may be dropped. */
  judged: readonly ShapeDraft[];
  /** Restores, pins and notes (appended after the judged ones: they win). */
  restoring: readonly ShapeDraft[];
  /** Entries no judged edit may touch (pinned on the branch or by a draft of this list). */
  pinned?: ReadonlySet<string>;
}

export interface ShapeResult {
  /** Indices into `judged` that stay. */
  keep: number[];
  dropped: DroppedEdit[];
  /** Edits to append after every draft. */
  repairs: Repair[];
  /** Breaks still there after the repairs (none unless the input is beyond mending). */
  left: ShapeBreak[];
}

/**
 * Units of the judged list: an exchange (a prompt's stub and the omissions after it, up to the next
 * prompt that stays) or a single edit. Returns, for each judged index, its unit number.
 */
function unitsOf(entries: readonly PairEntry[], judged: readonly ShapeDraft[]): number[] {
  const unit = judged.map((_, i) => i);
  const omittedAt = new Map<string, number>();
  judged.forEach((d, i) => {
    if (d.type === "context_edit" && d.replacement === null) {
      omittedAt.set(d.targetId as string, i);
    }
  });
  const at = positionsOf(entries);
  judged.forEach((d, i) => {
    if (d.type !== "context_edit" || d.replacement === null) return;
    const p = at.get(d.targetId as string);
    if (p === undefined || entries[p]?.role !== "user") return;
    for (let k = p + 1; k < entries.length; k++) {
      const e = entries[k] as PairEntry;
      const j = omittedAt.get(e.id);
      if (e.role === "user" && j === undefined) break;
      if (j !== undefined) unit[j] = i;
    }
  });
  return unit;
}

/** The members of a break's call: the caller and every result on the context that answers one of its calls. */
function membersOf(entries: readonly PairEntry[], b: ShapeBreak): string[] {
  const c = b.callerId === undefined ? undefined : positionsOf(entries).get(b.callerId);
  const caller = c === undefined ? undefined : entries[c];
  if (c === undefined || !caller) return [b.resultId];
  const calls = new Set(caller.calls ?? []);
  const out = [caller.id];
  // Results come after their call; the walk stops once every call's is found.
  for (let i = c + 1, found = 0; i < entries.length && found < calls.size; i++) {
    const e = entries[i] as PairEntry;
    if (e.role === "toolResult" && calls.has(e.callId ?? "")) {
      out.push(e.id);
      found++;
    }
  }
  return out;
}

/**
 * Settles a boundary's drafts: drops the judged units that touch a pinned entry or add a break, then
 * repairs what is still broken. Pure: the caller applies `keep`, appends `repairs` and records `dropped`.
 */
export function settleShape(input: ShapeInput): ShapeResult {
  const { entries, theirs, judged, restoring } = input;
  const unit = unitsOf(entries, judged);
  const live = new Set(judged.map((_, i) => i));
  const why = new Map<number, string>();
  const dropUnit = (u: number, reason: string) => {
    for (let i = 0; i < judged.length; i++) {
      if (unit[i] === u && live.has(i) && judged[i]?.type === "context_edit") {
        live.delete(i);
        why.set(i, reason);
      }
    }
  };
  if (input.pinned && input.pinned.size > 0) {
    judged.forEach((d, i) => {
      if (d.type === "context_edit" && input.pinned?.has(d.targetId as string)) {
        dropUnit(unit[i] as number, "pinned since it was judged");
      }
    });
  }
  const edited = new Map<string, number[]>();
  judged.forEach((d, i) => {
    if (d.type !== "context_edit") return;
    const list = edited.get(d.targetId as string) ?? [];
    list.push(i);
    edited.set(d.targetId as string, list);
  });
  // Breaks there would be without the judged edits: not theirs to answer for.
  let baseline: Set<string> | undefined;
  let clean = false;
  // Each round drops at least one unit, so this ends.
  for (;;) {
    const kept = judged.filter((_, i) => live.has(i));
    const breaks = shapeBreaks(entries, [...theirs, ...kept, ...restoring]);
    if (breaks.length === 0) {
      clean = true;
      break;
    }
    baseline ??= new Set(shapeBreaks(entries, [...theirs, ...restoring]).map(breakKey));
    const added = breaks.filter((b) => !(baseline as Set<string>).has(breakKey(b)));
    let dropped = false;
    for (const b of added) {
      for (const id of membersOf(entries, b)) {
        for (const i of edited.get(id) ?? []) {
          if (!live.has(i)) continue;
          dropUnit(unit[i] as number, "it would split a tool call from its result");
          dropped = true;
        }
      }
    }
    if (!dropped) break;
  }
  const keep = judged.map((_, i) => i).filter((i) => live.has(i));
  const dropped = [...why].map(([i, reason]) => ({ targetId: judged[i]?.targetId as string, why: reason }));
  if (clean) return { keep, dropped, repairs: [], left: [] };
  const base = [...theirs, ...keep.map((i) => judged[i] as ShapeDraft), ...restoring];
  const { repairs, left } = repair(entries, base);
  return { keep, dropped, repairs, left };
}

/** A repair as a draft for the check: a restore shows the raw calls (the caller writes the raw content). */
function asDraft(r: Repair, byId: { get(id: string): PairEntry | undefined }): ShapeDraft {
  if (r.action === "omit") return { type: "context_edit", targetId: r.targetId, replacement: null };
  const calls = byId.get(r.targetId)?.calls ?? [];
  return {
    type: "context_edit",
    targetId: r.targetId,
    replacement: { content: calls.map((id) => ({ type: "toolCall", id })) },
  };
}

/**
 * Repairs for what stays broken after `drafts`: a result whose caller is on the context shows with its
 * caller and the caller's other results (raw), when nothing but results lies between them; otherwise the
 * result is omitted. A shown call's hidden result shows again when it sits among that call's results.
 */
function repair(
  entries: readonly PairEntry[],
  drafts: readonly ShapeDraft[],
): { repairs: Repair[]; left: ShapeBreak[] } {
  const repairs: Repair[] = [];
  const at = positionsOf(entries);
  const byId = { get: (id: string) => entries[at.get(id) ?? -1] };
  const withRepairs = () => [...drafts, ...repairs.map((r) => asDraft(r, byId))];
  for (let round = 0; round < 4; round++) {
    const all = withRepairs();
    const breaks = shapeBreaks(entries, all);
    if (breaks.length === 0) return { repairs, left: [] };
    const p = project(entries, all);
    const shown = (i: number) => stateAt(entries, p, i).visible;
    const adding = new Map<string, Repair>();
    for (const b of breaks) {
      const r = at.get(b.resultId) as number;
      const c = b.callerId === undefined ? undefined : at.get(b.callerId);
      const caller = c === undefined ? undefined : (entries[c] as PairEntry);
      // Between the call and its result only results, system messages or hidden entries may lie.
      const reachable =
        c !== undefined &&
        c < r &&
        !caller?.skipped &&
        entries.slice(c + 1, r).every((e, k) => !shown(c + 1 + k) || e.role === undefined || TRANSPARENT.has(e.role));
      if (b.kind === "unanswered-call") {
        if (reachable) adding.set(b.resultId, { targetId: b.resultId, action: "restore", cause: b.kind });
        continue;
      }
      if (!reachable || !caller) {
        adding.set(b.resultId, { targetId: b.resultId, action: "omit", cause: b.kind });
        continue;
      }
      for (const id of membersOf(entries, b)) {
        const i = at.get(id) as number;
        const e = entries[i] as PairEntry;
        const callsShown = e.role !== "assistant" || sameCalls(stateAt(entries, p, i).calls, e.calls ?? []);
        if (!shown(i) || !callsShown) adding.set(id, { targetId: id, action: "restore", cause: b.kind });
      }
    }
    const fresh = [...adding.values()].filter(
      (a) => !repairs.some((r) => r.targetId === a.targetId && r.action === a.action),
    );
    if (fresh.length === 0) break;
    for (const a of fresh) {
      const old = repairs.findIndex((r) => r.targetId === a.targetId);
      if (old >= 0) repairs.splice(old, 1);
      repairs.push(a);
    }
  }
  // Beyond mending by restores: every orphaned result is omitted, which no provider rejects.
  for (const b of shapeBreaks(entries, withRepairs())) {
    if (b.kind !== "orphan-result") continue;
    const old = repairs.findIndex((r) => r.targetId === b.resultId);
    if (old >= 0) repairs.splice(old, 1);
    repairs.push({ targetId: b.resultId, action: "omit", cause: b.kind });
  }
  // A shown call whose result cannot follow it is left to pi-ai, which sends a made-up result for it.
  return { repairs, left: shapeBreaks(entries, withRepairs()).filter((b) => b.kind === "orphan-result") };
}

function sameCalls(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((c, i) => c === b[i]);
}
