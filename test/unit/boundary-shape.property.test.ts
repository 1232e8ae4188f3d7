// The whole draft list of one boundary, checked against Pi's own projection and the providers' shape rules:
// random sessions (some already broken, as an older version or another extension may leave them), random
// restores, pins, exchange omissions, distillations and other extensions' edits landing together. The list
// the guard returns is appended as Pi appends it, projected by Pi, converted as Pi and pi-ai convert it for
// OpenAI and Anthropic, and must carry no tool message a strict provider rejects, nor a made-up result.
import { convertMessages } from "@earendil-works/pi-ai/api/openai-completions";
import { transformMessages } from "@earendil-works/pi-ai/api/transform-messages";
import { convertToLlm, type SessionBoundaryDraft, type SessionManager } from "@earendil-works/pi-coding-agent";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { PIN_TYPE, pinData } from "../../src/core/records/pins.ts";
import { recordDraft } from "../../src/core/records/record.ts";
import type { GuardRecord } from "../../src/core/shared/types.ts";
import type { ProjectedLike } from "../../src/main/pass/snapshot.ts";
import { settleBoundary } from "../../src/main/session/boundary-shape.ts";
import { buildSession, type GenCall, type GenSession, propertyParams } from "../kit/arbitraries.ts";
import { anthropicShape, anthropicShapeProblems, openaiShapeProblems } from "../kit/strict-shapes.ts";

type Msg = { role: string; content?: unknown; toolCallId?: string; stopReason?: string };
type Entry = { id: string; type: string; message?: Msg };

const small = fc.string({ maxLength: 12, unit: "grapheme-ascii" });
const callArb = fc.record({
  tool: fc.constantFrom("bash", "read", "grep"),
  args: fc.constant<Record<string, unknown>>({ command: "x" }),
  output: small.map((s) => `out ${s}`),
  isError: fc.boolean(),
  images: fc.constant<GenCall["images"]>([]),
});
const sessionArb: fc.Arbitrary<GenSession> = fc.record({
  exchanges: fc.array(
    fc.record(
      {
        prompt: small.map((s) => `prompt ${s}`),
        turns: fc.array(
          fc.record({ text: fc.constantFrom("", "t"), calls: fc.array(callArb, { minLength: 1, maxLength: 3 }) }),
          { maxLength: 3 },
        ),
        answer: small.map((s) => `answer ${s}`),
        steering: small,
      },
      { requiredKeys: ["prompt", "turns", "answer"] },
    ),
    { minLength: 1, maxLength: 5 },
  ),
  running: fc.boolean(),
  unknownEntries: fc.constant(false),
});

/** What lands at one boundary, as picks into the session's message entries. */
const boundaryArb = fc.record({
  /** Edits already on the branch (an older version, another extension): may break the shape. */
  before: fc.array(fc.record({ at: fc.nat(), omit: fc.boolean() }), { maxLength: 3 }),
  theirs: fc.array(fc.record({ at: fc.nat(), kind: fc.constantFrom("omit", "text", "restore") }), { maxLength: 3 }),
  /** Exchanges the guard's pass omits (by exchange number) and results it distills. */
  exchanges: fc.array(fc.nat(), { maxLength: 3 }),
  distills: fc.array(fc.nat(), { maxLength: 4 }),
  restores: fc.array(fc.nat(), { maxLength: 3 }),
  pins: fc.array(fc.nat(), { maxLength: 2 }),
  pinFirst: fc.boolean(),
});

const textContent = (text: string) => [{ type: "text" as const, text }];
const edit = (targetId: string, replacement: { content: unknown } | null): SessionBoundaryDraft =>
  ({ type: "context_edit", targetId, replacement }) as SessionBoundaryDraft;

const MODEL = {
  id: "gpt-test",
  name: "gpt-test",
  api: "openai-completions",
  provider: "openai",
  baseUrl: "http://127.0.0.1:1",
  reasoning: false,
  input: ["text", "image"],
  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
  contextWindow: 128_000,
  maxTokens: 4096,
} as const;

function requestProblems(sm: SessionManager): { openai: string[]; anthropic: string[]; synthetic: number } {
  const llm = convertToLlm(sm.buildSessionProjection().messages as never);
  const openai = convertMessages(MODEL as never, { messages: llm } as never, {} as never) as unknown as Msg[];
  const transformed = transformMessages(llm, MODEL as never) as unknown as Msg[];
  const synthetic = transformed.filter(
    (m) => m.role === "toolResult" && JSON.stringify(m.content).includes("No result provided"),
  ).length;
  return {
    openai: openaiShapeProblems(openai),
    anthropic: anthropicShapeProblems(anthropicShape(transformed)),
    synthetic,
  };
}

/** One random boundary: the final list from settleBoundary, appended to Pi's SessionManager. */
type BoundaryPick = typeof boundaryArb extends fc.Arbitrary<infer T> ? T : never;

function land(gen: GenSession, b: BoundaryPick) {
  const sm = buildSession(gen);
  const messages = () => sm.getBranch().filter((e) => e.type === "message") as unknown as Entry[];
  const all = messages();
  const pick = (n: number) => all[n % all.length] as Entry;
  const prompts = all.filter(
    (e, i) => e.message?.role === "user" && (i === 0 || all[i - 1]?.message?.role !== "toolResult"),
  );
  for (const e of b.before) {
    const t = pick(e.at);
    sm.appendContextEdit(t.id, e.omit ? null : ({ content: textContent("[old] x") } as never));
  }
  const context = sm.buildSessionProjection().entries as unknown as ProjectedLike[];
  const theirs: SessionBoundaryDraft[] = b.theirs.map((e) => {
    const t = pick(e.at);
    if (e.kind === "omit") return edit(t.id, null);
    if (e.kind === "text") return edit(t.id, { content: textContent("[other] shorter") });
    return edit(t.id, { content: structuredClone(t.message?.content) });
  });
  const judged: SessionBoundaryDraft[] = [];
  const results: GuardRecord["results"] = [];
  const omittedSoFar = new Set<string>();
  for (const x of b.exchanges) {
    const prompt = prompts[x % Math.max(1, prompts.length)];
    if (!prompt || omittedSoFar.has(prompt.id)) continue;
    const start = all.indexOf(prompt);
    const next = prompts.find((p) => all.indexOf(p) > start);
    const inside = all.slice(start + 1, next ? all.indexOf(next) : all.length);
    judged.push(edit(prompt.id, { content: textContent(`[context-guard] exchange ${prompt.id} omitted`) }));
    for (const e of inside) judged.push(edit(e.id, null));
    omittedSoFar.add(prompt.id);
    const omitted = inside.map((e) => e.id);
    results.push({
      kind: "exchange",
      entryId: prompt.id,
      label: "x",
      outcome: "removed",
      reason: "r",
      beforeChars: 9,
      afterChars: 1,
      jev: [],
      omitted,
    });
  }
  const toolResults = all.filter((e) => e.message?.role === "toolResult");
  for (const d of b.distills) {
    const t = toolResults[d % Math.max(1, toolResults.length)];
    if (!t || judged.some((j) => (j as { targetId?: string }).targetId === t.id)) continue;
    judged.push(edit(t.id, { content: textContent("[context-guard] distilled") }));
    results.push({
      kind: "large",
      entryId: t.id,
      label: "x",
      outcome: "distilled",
      reason: "r",
      beforeChars: 9,
      afterChars: 1,
      jev: [],
    });
  }
  const record: GuardRecord = {
    v: 1,
    phase: "run-end",
    model: "t/t",
    savedChars: 0,
    requests: 0,
    inputTokens: 0,
    costUsd: 0,
    ms: 0,
    timedOut: false,
    results,
  };
  if (judged.length > 0) judged.push(recordDraft(record) as SessionBoundaryDraft);
  const restoring: SessionBoundaryDraft[] = [];
  const restoredIds = b.restores.map((n) => pick(n).id);
  if (restoredIds.length > 0) {
    const pin = { type: "custom", customType: PIN_TYPE, data: pinData("restore", restoredIds) } as SessionBoundaryDraft;
    const edits = restoredIds.map((id) =>
      edit(id, { content: structuredClone(all.find((e) => e.id === id)?.message?.content) }),
    );
    restoring.push(...(b.pinFirst ? [pin, ...edits] : [...edits, pin]));
  }
  if (b.pins.length > 0) {
    restoring.push({
      type: "custom",
      customType: PIN_TYPE,
      data: pinData(
        "pin",
        b.pins.map((n) => pick(n).id),
      ),
    } as SessionBoundaryDraft);
  }
  const settled = settleBoundary({ context, theirs, judged, restoring });
  // Pi accepts the list in order, as it appends boundary drafts.
  for (const d of settled.entries) {
    if (d.type === "context_edit") sm.appendContextEdit(d.targetId, d.replacement as never);
    else if (d.type === "custom") sm.appendCustomEntry(d.customType, d.data);
  }
  return { sm, settled, restoredIds, pinnedIds: b.pins.map((n) => pick(n).id), judged };
}

const PARAMS = propertyParams(300);

describe("one boundary's whole draft list keeps every tool call with its result", () => {
  // A long run (CG_PROPERTY_RUNS) gets a time limit that grows with it.
  it("no provider rejects the request that follows, no call loses its result, restores win", {
    timeout: Math.max(60_000, PARAMS.numRuns * 100),
  }, () => {
    let dropped = 0;
    let repaired = 0;
    let boundaries = 0;
    fc.assert(
      fc.property(sessionArb, boundaryArb, (gen, b) => {
        const { sm, settled, restoredIds, pinnedIds, judged } = land(gen, b);
        boundaries++;
        if (settled.dropped.length > 0) dropped++;
        if (settled.repairs.length > 0) repaired++;
        const problems = requestProblems(sm);
        expect(problems.openai).toEqual([]);
        expect(problems.anthropic).toEqual([]);
        // Every call's result is on the branch: none is made up by pi-ai.
        expect(problems.synthetic).toBe(0);
        const shown = new Map(
          sm.buildSessionProjection().entries.map((p) => [p.sourceEntry.id, p.messages.length > 0]),
        );
        // A restore wins: what was restored shows.
        for (const id of restoredIds) expect(shown.get(id)).toBe(true);
        // Nothing judged touches a pinned entry.
        const kept = settled.entries.filter((d) => judged.includes(d));
        for (const d of kept) if (d.type === "context_edit") expect(pinnedIds).not.toContain(d.targetId);
      }),
      PARAMS,
    );
    if (process.env.CG_DEBUG) console.log({ boundaries, dropped, repaired });
    expect(dropped).toBeGreaterThan(0);
    expect(repaired).toBeGreaterThan(0);
  });
});
