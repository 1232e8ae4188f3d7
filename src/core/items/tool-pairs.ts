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

/** The entries left on the context once `drafts` are appended, with what each shows. */
function project(entries: readonly PairEntry[], drafts: readonly ShapeDraft[]): { kept: PairEntry[]; state: State[] } {
  let kept: PairEntry[] = [...entries];
  let state: State[] = kept.map((e) => ({ visible: e.visible, calls: e.shownCalls ?? e.calls ?? [] }));
  let at = new Map(kept.map((e, i) => [e.id, i]));
  for (const d of drafts) {
    if (d.type === "compaction") {
      const first = d.firstKeptEntryId;
      const from = typeof first === "string" ? (at.get(first) ?? kept.length) : kept.length;
      kept = kept.slice(from);
      state = state.slice(from);
      at = new Map(kept.map((e, i) => [e.id, i]));
      continue;
    }
    if (d.type !== "context_edit" || typeof d.targetId !== "string") continue;
    const i = at.get(d.targetId);
    if (i === undefined) continue;
    const replacement = d.replacement ?? null;
    const entry = kept[i] as PairEntry;
    state[i] =
      replacement === null
        ? { visible: false, calls: [] }
        : { visible: true, calls: entry.role === "assistant" ? callIdsOf(replacement.content) : [] };
  }
  return { kept, state };
}

/** Roles that are sent as a user turn (and so end the results of the assistant before them). */
const TRANSPARENT = new Set(["toolResult", "system"]);

/** The breaks of the projection after `drafts`, walked the way pi-ai builds a request. */
export function shapeBreaks(entries: readonly PairEntry[], drafts: readonly ShapeDraft[] = []): ShapeBreak[] {
  const { kept, state } = project(entries, drafts);
  const resultOf = new Map<string, number>();
  const callerOf = new Map<string, string>();
  kept.forEach((e, i) => {
    if (e.role === "toolResult" && e.callId !== undefined && !resultOf.has(e.callId)) resultOf.set(e.callId, i);
    if (e.role === "assistant") for (const c of e.calls ?? []) callerOf.set(c, e.id);
  });
  const out: ShapeBreak[] = [];
  let pending: { id: string; calls: Set<string>; answered: Set<string> } | undefined;
  const close = () => {
    if (!pending) return;
    for (const c of pending.calls) {
      if (pending.answered.has(c)) continue;
      const r = resultOf.get(c);
      // A result that is on the context but hidden: the request would carry a made-up one instead.
      if (r !== undefined && !(state[r] as State).visible) {
        out.push({ kind: "unanswered-call", resultId: (kept[r] as PairEntry).id, callerId: pending.id });
      }
    }
    pending = undefined;
  };
  kept.forEach((e, i) => {
    const s = state[i] as State;
    if (!s.visible || e.role === undefined) return;
    if (e.role === "assistant") {
      close();
      if (!e.skipped && s.calls.length > 0) pending = { id: e.id, calls: new Set(s.calls), answered: new Set() };
      return;
    }
    if (e.role === "toolResult") {
      const id = e.callId ?? "";
      if (pending?.calls.has(id) && !pending.answered.has(id)) pending.answered.add(id);
      else {
        const caller = callerOf.get(id);
        out.push({ kind: "orphan-result", resultId: e.id, ...(caller !== undefined ? { callerId: caller } : {}) });
      }
      return;
    }
    if (!TRANSPARENT.has(e.role)) close();
  });
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
  const at = new Map(entries.map((e, i) => [e.id, i]));
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
  const caller = b.callerId === undefined ? undefined : entries.find((e) => e.id === b.callerId);
  if (!caller) return [b.resultId];
  const calls = new Set(caller.calls ?? []);
  return [caller.id, ...entries.filter((e) => e.role === "toolResult" && calls.has(e.callId ?? "")).map((e) => e.id)];
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
  const baseline = new Set(shapeBreaks(entries, [...theirs, ...restoring]).map(breakKey));
  const edited = new Map<string, number[]>();
  judged.forEach((d, i) => {
    if (d.type !== "context_edit") return;
    const list = edited.get(d.targetId as string) ?? [];
    list.push(i);
    edited.set(d.targetId as string, list);
  });
  // Each round drops at least one unit, so this ends.
  for (;;) {
    const kept = judged.filter((_, i) => live.has(i));
    const added = shapeBreaks(entries, [...theirs, ...kept, ...restoring]).filter((b) => !baseline.has(breakKey(b)));
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
  const base = [...theirs, ...keep.map((i) => judged[i] as ShapeDraft), ...restoring];
  const { repairs, left } = repair(entries, base);
  return { keep, dropped, repairs, left };
}

/** A repair as a draft for the check: a restore shows the raw calls (the caller writes the raw content). */
function asDraft(r: Repair, byId: ReadonlyMap<string, PairEntry>): ShapeDraft {
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
  const at = new Map(entries.map((e, i) => [e.id, i]));
  const byId = new Map(entries.map((e) => [e.id, e]));
  const withRepairs = () => [...drafts, ...repairs.map((r) => asDraft(r, byId))];
  for (let round = 0; round < 4; round++) {
    const all = withRepairs();
    const breaks = shapeBreaks(entries, all);
    if (breaks.length === 0) return { repairs, left: [] };
    const { state } = project(entries, all);
    const shown = (i: number) => (state[i] as State).visible;
    // Compaction drafts are left to Pi: with one in the list the state is indexed differently.
    if (state.length !== entries.length) return { repairs, left: breaks };
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
        const callsShown = e.role !== "assistant" || sameCalls((state[i] as State).calls, e.calls ?? []);
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
