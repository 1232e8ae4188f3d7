// Property-based tests (fast-check) of the guarantees the whole extension rests on: chunking is lossless,
// replacements copy kept text verbatim and in order, and every draft set a pass returns is accepted by the
// real Pi session manager without breaking the conversation. Fixed seed and bounded runs here; for a long
// run: CG_PROPERTY_RUNS=2000 npm exec -- vitest run test/integration/properties.test.ts (CG_PROPERTY_SEED picks a seed).
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { chunkOutput, isGrepStyle, segmentChunks } from "../../src/core/distill/chunk.ts";
import { renderReplacement } from "../../src/core/distill/render.ts";
import { DEFAULT_CONFIG, type GuardConfig } from "../../src/core/shared/config.ts";
import { imageChars } from "../../src/core/shared/size.ts";
import { countLines, formatCount, oneLine } from "../../src/core/shared/text.ts";
import type { ClassifierOutcome, ContextEditDraft, GuardRecord } from "../../src/core/shared/types.ts";
import type { ClassifyFn } from "../../src/main/pass/classify-queue.ts";
import { runPass } from "../../src/main/pass/library-run-pass.ts";
import { type ProjectedLike, readContent, SnapshotBuilder } from "../../src/main/pass/snapshot.ts";
import { validateEdits } from "../../src/main/pass/validate.ts";
import { createTaskRunner } from "../../src/main/platform/pool.ts";
import { buildSession, outputArb, propertyParams, randomAnswers, sessionArb } from "../kit/arbitraries.ts";

describe("chunking", () => {
  it("chunks concatenate to the original, fit a request, cut at line ends unless a line is too long", () => {
    fc.assert(
      fc.property(outputArb, fc.boolean(), fc.constantFrom(32_000, 4000, 300), (text, forceGrep, max) => {
        const grep = forceGrep || isGrepStyle(text);
        const chunks = chunkOutput(text, grep, max);
        expect(chunks.map((c) => c.text).join("")).toBe(text);
        const lengths = text.split("\n").map((l) => (l.endsWith("\r") ? l.length - 1 : l.length));
        // Problems are collected (one expect per chunk would dominate the run time on piece-heavy cases).
        const bad: string[] = [];
        let at = 0;
        let line = 1;
        chunks.forEach((c, i) => {
          if (c.n !== i + 1 || c.start !== at || c.text !== text.slice(c.start, c.end)) bad.push(`${i}: range`);
          if (c.text.length > max) bad.push(`${i}: ${c.text.length} chars`);
          const endsLine = c.text.endsWith("\n");
          const last = c.firstLine + c.text.split("\n").length - 1 - (endsLine ? 1 : 0);
          if (c.firstLine !== line || c.lastLine !== last) bad.push(`${i}: lines ${c.firstLine}-${c.lastLine}`);
          // A cut inside a line only in a line longer than a request carries; the next piece goes on.
          const inside = i < chunks.length - 1 && !endsLine;
          if (inside && (lengths[c.lastLine - 1] ?? 0) <= max) bad.push(`${i}: cut inside a short line`);
          at = c.end;
          line = inside ? c.lastLine : c.lastLine + 1;
        });
        expect(bad).toEqual([]);
        expect(at).toBe(text.length);
        expect(chunks.at(-1)?.lastLine ?? 0).toBe(countLines(text));
      }),
      propertyParams(150),
    );
  });

  it("segments keep every chunk once, in order, within the request limits", () => {
    fc.assert(
      fc.property(
        outputArb,
        fc.integer({ min: 1000, max: 40_000 }),
        fc.integer({ min: 1, max: 50 }),
        (text, max, n) => {
          const chunks = chunkOutput(text);
          const segments = segmentChunks(chunks, max, n);
          expect(segments.flatMap((s) => s.chunks)).toEqual(chunks);
          for (const s of segments) {
            const size = s.chunks.reduce((k, c) => k + c.text.length, 0);
            if (s.oversize) expect(s.chunks.length === 1 && size > max).toBe(true);
            else expect(size <= max && s.chunks.length <= n).toBe(true);
          }
        },
      ),
      propertyParams(100),
    );
  });
});

describe("labels", () => {
  it("oneLine flattens whitespace and cuts at max, as replace-then-trim would", () => {
    const text = fc.stringMatching(/^[ \t\n\r\u00a0\u2028a-z…]{0,60}$/);
    fc.assert(
      fc.property(text, fc.integer({ min: 0, max: 30 }), (t, max) => {
        const flat = t.replace(/\s+/g, " ").trim();
        const expected = flat.length <= max ? flat : `${flat.slice(0, Math.max(0, max - 1))}…`;
        expect(oneLine(t, max)).toBe(expected);
      }),
      { numRuns: 2000 },
    );
  });
});

describe("replacements", () => {
  it("copy the kept chunks verbatim and in order, one omission line per removed run", () => {
    // Small request limits too, so long lines are cut into pieces and kept pieces meet.
    const withKeep = fc
      .tuple(outputArb, fc.constantFrom(32_000, 4000, 300))
      .map(([text, max]) => ({ text, chunks: chunkOutput(text, undefined, max) }))
      .filter(({ chunks }) => chunks.length >= 2)
      .chain(({ text, chunks }) =>
        fc.subarray(chunks.map((c) => c.n)).map((kept) => ({ text, chunks, keep: new Set(kept) })),
      );
    fc.assert(
      fc.property(withKeep, fc.boolean(), ({ text, chunks, keep }, grep) => {
        const out = renderReplacement({ entryId: "e1", label: "bash `x`", text, chunks, keep, grep });
        const header = out.indexOf("\n") === -1 ? out.length : out.indexOf("\n");
        // The header states the sizes before and after, the after being the replacement's own length.
        const sizes = `(${formatCount(text.length)} → ${formatCount(out.length)} chars)`;
        expect(
          out.slice(0, header).startsWith(`[context-guard] Distilled the output of bash \`x\` ${sizes}: kept `),
        ).toBe(true);
        // Walk the body: each kept chunk (without its final newline) verbatim, each removed run one line.
        let pos = header + 1;
        let inRemoved = false;
        for (const [i, c] of chunks.entries()) {
          if (keep.has(c.n)) {
            const body = c.text.endsWith("\n") ? c.text.slice(0, -1) : c.text;
            expect(out.startsWith(body, pos)).toBe(true);
            // A kept piece of a long line runs straight into the next piece when that one is kept too.
            const next = chunks[i + 1];
            const glued = next !== undefined && !c.text.endsWith("\n") && keep.has(next.n);
            pos += body.length + (glued ? 0 : 1);
            inRemoved = false;
          } else if (!inRemoved) {
            expect(out.startsWith("[… ", pos)).toBe(true);
            const end = out.indexOf("\n", pos);
            pos = end === -1 ? out.length + 1 : end + 1;
            inRemoved = true;
          }
        }
        expect(pos).toBe(out.length + 1);
      }),
      propertyParams(150),
    );
  });
});

// ------------------------------------------------------------------------------------------------------------
// Whole passes on generated sessions, applied to a real Pi SessionManager

interface Msg {
  role: string;
  content?: unknown;
  toolCallId?: string;
}

/** Tool call ids without a visible result, and results without a visible call, in the model's messages. */
function orphans(messages: readonly Msg[]): { calls: string[]; results: string[] } {
  const calls = new Set<string>();
  const results = new Set<string>();
  for (const m of messages) {
    if (m.role === "assistant") for (const c of readContent(m.content).toolCalls) calls.add(c.id);
    if (m.role === "toolResult" && m.toolCallId) results.add(m.toolCallId);
  }
  return { calls: [...calls].filter((id) => !results.has(id)), results: [...results].filter((id) => !calls.has(id)) };
}

const sizeOf = (content: unknown) => {
  const c = readContent(content);
  return c.text.length + c.imageHeads.reduce((n, h) => n + imageChars(h), 0);
};

const configArb: fc.Arbitrary<GuardConfig> = fc
  .record({
    minResultChars: fc.constantFrom(1500, 4000),
    smallResultMinChars: fc.constantFrom(0, 100, 400),
    keepRecentExchanges: fc.constantFrom(0, 2),
    exchangeBreakEven: fc.boolean(),
    imageKeepTurns: fc.constantFrom(1, 3),
    keepCitedFiles: fc.boolean(),
    maxSegmentChars: fc.constantFrom(2000, 32_000),
    distillErrors: fc.boolean(),
  })
  .map((c) => ({
    ...DEFAULT_CONFIG,
    ...c,
    minRunChars: 0,
    midRunBatchChars: 0,
    midRunMinAgeTurns: 1,
    midRunBreakEven: false,
    timeoutMs: 60_000,
  }));

describe("passes on generated sessions, applied to Pi's SessionManager", async () => {
  const runner = await createTaskRunner({ backend: "inline" });

  it("every returned draft set is accepted, breaks no tool call, shortens what it edits", async () => {
    let passes = 0;
    let edited = 0;
    await fc.assert(
      fc.asyncProperty(sessionArb, configArb, fc.nat(), async (gen, config, seed) => {
        const sm = buildSession(gen);
        const context = sm.buildSessionProjection().entries as unknown as ProjectedLike[];
        const before = orphans(sm.buildSessionProjection().messages as Msg[]);
        const answer = randomAnswers(seed);
        const classify: ClassifyFn = async (request) => answer(request as never) as ClassifierOutcome;
        const result = await runPass(
          new SnapshotBuilder().entries(context),
          {
            runner,
            classify,
            config,
            modelRef: "t/t",
            validate: (edits) => validateEdits(edits, context),
          },
          { phase: gen.running ? "mid-run" : "run-end", cache: { family: "other" } },
        );
        if (result.status !== "done") return;
        passes++;
        // The core never proposes what the safety net would reject.
        const rejected = result.record.results.filter((r) => r.reason.startsWith("rejected"));
        expect(rejected).toEqual([]);
        const drafts: ContextEditDraft[] = result.edits;
        // A wrong position hint changes nothing: each hint is checked, and a miss falls back to an index.
        const hinted = validateEdits(drafts, context, (id) => (id.length * 7) % (context.length + 2));
        expect(hinted).toEqual({ valid: drafts, dropped: [] });
        const branchIds = new Set(sm.getBranch().map((e) => e.id));
        const omitted = new Set(drafts.filter((d) => d.replacement === null).map((d) => d.targetId));
        for (const d of drafts) {
          expect(branchIds.has(d.targetId)).toBe(true);
          const entry = sm.getEntry(d.targetId) as { type: string; message?: Msg };
          const role = entry.type === "message" ? entry.message?.role : entry.type;
          // Assistant content is never replaced (it would drop thinking and tool calls); only omitted.
          if (d.replacement !== null) expect(role).not.toBe("assistant");
          // Whole-output omission is only ever part of an exchange: a call and its results go together.
          if (d.replacement === null && role === "assistant") {
            for (const c of readContent(entry.message?.content).toolCalls) {
              const res = sm.getBranch().find((e) => e.type === "message" && (e.message as Msg).toolCallId === c.id);
              if (res) expect(omitted.has(res.id)).toBe(true);
            }
          }
          if (d.replacement === null && role === "toolResult") {
            const callId = (entry.message as Msg).toolCallId;
            const owner = sm
              .getBranch()
              .find(
                (e) =>
                  e.type === "message" &&
                  (e.message as Msg).role === "assistant" &&
                  readContent((e.message as Msg).content).toolCalls.some((c) => c.id === callId),
              );
            expect(owner && omitted.has(owner.id)).toBe(true);
          }
          // Shorter than what it replaces (a prompt's stub stands for its whole omitted exchange).
          if (d.replacement !== null) {
            const text = d.replacement.content.reduce((n, b) => n + b.text.length, 0);
            let original = sizeOf(entry.message?.content);
            if (role === "user") {
              for (const id of omitted) original += sizeOf((sm.getEntry(id) as { message?: Msg }).message?.content);
            }
            expect(text).toBeLessThan(original);
          }
        }
        // Pi accepts the list in order, as it appends boundary drafts.
        for (const d of drafts) sm.appendContextEdit(d.targetId, d.replacement as never);
        sm.appendCustomEntry(result.recordDraft.customType, result.recordDraft.data);
        if (drafts.length > 0) edited++;
        const after = orphans(sm.buildSessionProjection().messages as Msg[]);
        expect(after).toEqual(before);
        // Distilled outputs keep their lines verbatim (omission lines aside).
        for (const r of (result.record as GuardRecord).results.filter((x) => x.outcome === "distilled")) {
          const raw = readContent((sm.getEntry(r.entryId) as { message?: Msg }).message?.content).text;
          const shown = drafts.find((d) => d.targetId === r.entryId)?.replacement?.content[0]?.text ?? "";
          const lines = shown.split("\n").slice(1);
          for (const l of lines) if (!l.startsWith("[… ")) expect(raw.includes(l)).toBe(true);
        }
      }),
      propertyParams(60),
    );
    // The generator must actually exercise edits, not only skips.
    if (process.env.CG_DEBUG) console.log({ passes, edited });
    expect(passes).toBeGreaterThan(10);
    expect(edited).toBeGreaterThan(5);
  });
});

// ------------------------------------------------------------------------------------------------------------
// Counterexamples the properties found, kept as plain tests.

describe("found by the properties", () => {
  function exchangeWithSteering() {
    const sm = buildSession({
      exchanges: [
        {
          prompt: "old work",
          turns: [
            {
              text: "",
              calls: [{ tool: "bash", args: { command: "a" }, output: "x".repeat(3000), isError: false, images: [] }],
            },
            {
              text: "",
              calls: [{ tool: "bash", args: { command: "b" }, output: "y".repeat(3000), isError: false, images: [] }],
            },
          ],
          answer: "done",
          steering: "also check b",
        },
        { prompt: "new work", turns: [], answer: "ok" },
      ],
      running: false,
      unknownEntries: false,
    });
    const context = sm.buildSessionProjection().entries as unknown as ProjectedLike[];
    const branch = sm.getBranch().filter((e) => e.type === "message");
    const prompt = branch[0]?.id as string;
    // prompt, call a, result a, steering (3), call b, result b, answer, next prompt (7), answer
    expect((branch[3] as { message: Msg }).message.role).toBe("user");
    const inside = branch.slice(1, 7).map((e) => e.id);
    return { context, prompt, inside };
  }

  it("a steering message inside an omitted exchange does not cut its size short", () => {
    const { context, prompt, inside } = exchangeWithSteering();
    const drafts: ContextEditDraft[] = [
      { type: "context_edit", targetId: prompt, replacement: { content: [{ type: "text", text: "s".repeat(4000) }] } },
      ...inside.map((id): ContextEditDraft => ({ type: "context_edit", targetId: id, replacement: null })),
    ];
    // 4,000 characters stand for 6,000+ of outputs: shorter only if the part after the steering counts.
    const { valid, dropped } = validateEdits(drafts, context);
    expect(dropped).toEqual([]);
    expect(valid).toHaveLength(drafts.length);
  });

  it("an exchange goes as a whole or not at all", () => {
    const { context, prompt, inside } = exchangeWithSteering();
    const drafts: ContextEditDraft[] = [
      {
        type: "context_edit",
        targetId: prompt,
        replacement: { content: [{ type: "text", text: "s".repeat(20_000) }] },
      },
      ...inside.map((id): ContextEditDraft => ({ type: "context_edit", targetId: id, replacement: null })),
    ];
    const { valid, dropped } = validateEdits(drafts, context);
    expect(valid).toEqual([]);
    expect(dropped.map((d) => d.draft.targetId).sort()).toEqual([prompt, ...inside].sort());
  });
});
