import { describe, expect, it } from "vitest";
import { sanitizeAnswers } from "../../../../src/core/classifier/answers.ts";
import { finishPass } from "../../../../src/core/distill/finish.ts";
import { type PassPlan, planRunEnd } from "../../../../src/core/distill/plan.ts";
import { currentSavings, savingsText } from "../../../../src/core/records/stats.ts";
import { DEFAULT_CONFIG } from "../../../../src/core/shared/config.ts";
import type { ClassifierOutcome, ClassifierRequest, SnapEntry } from "../../../../src/core/shared/types.ts";
import { statusText } from "../../../../src/main/session/status.ts";
import { assistantEntry, messageEntry, recordEntry, toolCall, toolResultEntry, userEntry } from "../../../kit/snap.ts";

const grep = (files: number, perFile: number, hot: number) =>
  Array.from({ length: files * perFile }, (_, i) => {
    const f = Math.floor(i / perFile);
    return `src/f${f}.ts:${i + 1}:${f === hot ? "hot_symbol()" : "cold()"} // ${"x".repeat(30)}`;
  }).join("\n");

function run(
  outputs: Array<Partial<SnapEntry> & { text: string }>,
  answer = "hot_symbol is in src/f3.ts",
): SnapEntry[] {
  const calls = outputs.map((_, i) => toolCall(`c${i}`, "bash", { command: `cmd ${i}` }));
  return [
    userEntry("u", "where is hot_symbol?"),
    assistantEntry("a", "", calls),
    ...outputs.map((o, i) => toolResultEntry(`t${i}`, `c${i}`, "bash", o.text, o)),
    assistantEntry("z", answer),
  ];
}

/** Answers like a classifier that needs only chunks mentioning `hot_symbol`. */
function keywordOutcome(request: ClassifierRequest): ClassifierOutcome {
  const chunks = request.state.chunks as Record<string, string>;
  const answers: NonNullable<ClassifierOutcome["answers"]> = { keep_whole: { type: "bool", probability: 0.05 } };
  const hot = Object.keys(chunks).filter((k) => chunks[k]?.includes("hot_symbol"));
  answers.focus = hot[0]
    ? { type: "choice", choice: hot[0], probabilities: { [hot[0]]: 0.7 } }
    : { type: "choice", choice: "none", probabilities: { none: 0.9 } };
  for (const k of Object.keys(chunks)) answers[k] = { type: "bool", probability: hot.includes(k) ? 0.9 : 0.05 };
  return { status: "stop", answers };
}

/** Distillation itself: the cache gates, which defer edits in a session this short, are tested in cache/. */
const UNGATED = { ...DEFAULT_CONFIG, exchangeBreakEven: false };

function runPass(
  entries: SnapEntry[],
  answer: (r: ClassifierRequest) => ClassifierOutcome = keywordOutcome,
  config = UNGATED,
) {
  const plan = planRunEnd(entries, config) as Extract<PassPlan, { status: "run" }>;
  if (plan.status !== "run") return { plan, out: undefined };
  const texts = plan.candidates.map((c) => entries.find((e) => e.id === c.entryId)?.text ?? "");
  return {
    plan,
    out: finishPass({ plan, entries, texts, outcomes: plan.requests.map(answer), config }),
  };
}

describe("a run-end pass", () => {
  it("distills a large grep output to the needed file, verbatim", () => {
    const text = grep(20, 15, 3);
    const { out } = runPass(run([{ text }]));
    const replacement = out?.drafts[0]?.replacement?.content[0]?.text ?? "";
    expect(replacement.startsWith("[context-guard] Distilled the output of bash `cmd 0`")).toBe(true);
    const kept = replacement.split("\n").filter((l) => l.startsWith("src/"));
    expect(kept).toEqual(text.split("\n").filter((l) => l.startsWith("src/f3.ts:")));
    expect(out?.results[0]).toMatchObject({ outcome: "distilled", reason: "chunks", kind: "large" });
    expect(out?.results[0]?.afterChars).toBe(replacement.length);
  });

  it("skips a run below minRunChars or without candidates, without any request", () => {
    expect(planRunEnd(run([{ text: grep(2, 50, 0).slice(0, 5000) }]), DEFAULT_CONFIG)).toEqual({
      status: "skip",
      reason: "nothing to judge",
    });
    expect(planRunEnd(run([{ text: "small" }]), DEFAULT_CONFIG)).toEqual({
      status: "skip",
      reason: "nothing to judge",
    });
  });

  it("sends a line longer than a request in pieces, every request within the limit", () => {
    // Before: the 40,000-char line was an oversize chunk, kept without asking.
    const line = `${"y".repeat(40_000)}`;
    const plan = planRunEnd(run([{ text: `${line}\n${grep(10, 10, 99)}` }]), DEFAULT_CONFIG);
    if (plan.status !== "run") throw new Error(plan.reason);
    expect(plan.candidates[0]?.segments.some((s) => s.oversize)).toBe(false);
    const sent = plan.requests.map((r) => Object.values(r.state.chunks as Record<string, string>));
    for (const chunks of sent) {
      expect(chunks.reduce((n, c) => n + c.length, 0)).toBeLessThanOrEqual(DEFAULT_CONFIG.maxSegmentChars);
    }
    expect(sent.flat().join("")).toBe(`${line}\n${grep(10, 10, 99)}`);
  });

  it("judges a 5 MB output: it is distilled when the answers come back", () => {
    // Before: every chunk of an output above ~3.84 MB was oversize, so the output was not even planned
    // and the pass left no record of it.
    const filler = "cold line of a huge build log, nothing to see here\n";
    const text = `${filler.repeat(50_000)}hot_symbol() is defined here\n${filler.repeat(50_000)}`;
    expect(text.length).toBeGreaterThan(5_000_000);
    const { plan, out } = runPass(run([{ text }]));
    expect(plan.status).toBe("run");
    expect(plan.candidates).toHaveLength(1);
    expect(plan.requests.length).toBeGreaterThan(100);
    expect(out?.results).toHaveLength(1);
    expect(out?.results[0]).toMatchObject({ kind: "large", entryId: "t0", outcome: "distilled" });
    const replacement = out?.drafts[0]?.replacement?.content[0]?.text ?? "";
    expect(replacement).toContain("hot_symbol() is defined here");
    expect(replacement.length).toBeLessThan(20_000);
  });

  it("records why a huge output was left alone when its requests did not finish in time", () => {
    const text = "q".repeat(5_000_000); // one 5 MB line
    const { plan, out } = runPass(run([{ text }]), () => ({ status: "timeout" }));
    expect(plan.status).toBe("run");
    expect(out?.drafts).toEqual([]);
    expect(out?.results).toHaveLength(1);
    const result = out?.results[0];
    expect(result).toMatchObject({ kind: "large", entryId: "t0", outcome: "kept", reason: "timeout" });
    expect(result?.beforeChars).toBe(5_000_000);
    // One trace stands for the run of identical ones, not one per segment.
    expect(result?.jev).toEqual([`timeout ×${plan.requests.length}`]);
  });

  it("keeps everything when the classifier fails, times out or lies", () => {
    const entries = run([{ text: grep(20, 15, 3) }]);
    for (const outcome of [
      { status: "error", error: "500" },
      { status: "timeout" },
      {
        status: "stop",
        answers: sanitizeAnswers({
          keep_whole: { type: "bool", probability: Number.NaN },
          focus: { type: "choice", choice: "none", probabilities: { none: 2 } },
        }),
      },
    ] as ClassifierOutcome[]) {
      const { out } = runPass(entries, () => outcome);
      expect(out?.drafts).toEqual([]);
      expect(out?.results[0]?.outcome).toBe("kept");
    }
  });

  it("makes no edit when the kept part is more than maxKeepRatio", () => {
    const { out } = runPass(run([{ text: grep(20, 15, 3) }]), keywordOutcome, {
      ...DEFAULT_CONFIG,
      maxKeepRatio: 0.01,
    });
    expect(out?.drafts).toEqual([]);
    expect(out?.results[0]).toMatchObject({ outcome: "kept", reason: "not-worth" });
  });

  it("leaves outputs another extension edited, and our own, alone", () => {
    const text = grep(20, 15, 3);
    const plan = planRunEnd(
      run([
        { text: `${text}\n// edited`, edited: true, rawText: text },
        { text: `[context-guard] Distilled ... ${text}`, edited: true, rawText: text },
      ]),
      DEFAULT_CONFIG,
    );
    expect(plan).toEqual({ status: "skip", reason: "nothing to judge" });
  });
});

describe("answers, stats and status texts", () => {
  it("drops malformed answers", () => {
    const clean = sanitizeAnswers({
      a: { type: "bool", probability: 0.4 },
      b: { type: "bool", probability: 1.7 },
      c: { type: "choice", choice: "x", probabilities: { x: Number.NaN } },
      d: { type: "score", score: 1 },
      e: "nope",
    });
    expect(Object.keys(clean)).toEqual(["a"]);
    expect(sanitizeAnswers(null)).toEqual({});
  });

  it("counts savings only for the guard's own replacements", () => {
    const entries: SnapEntry[] = [
      messageEntry("1", "toolResult", "[context-guard] x", { edited: true, rawText: "y".repeat(4001) }),
      messageEntry("2", "toolResult", "other ext", { edited: true, rawText: "y".repeat(9000) }),
      messageEntry("3", "toolResult", "plain"),
      // Another extension's edit that shows the marker, and a raw output that starts with it: neither is ours.
      messageEntry("4", "toolResult", "[context-guard] theirs", { edited: true, rawText: "y".repeat(9000) }),
      messageEntry("5", "toolResult", "[context-guard] Distilled (forged)"),
      recordEntry("r", { phase: "run-end", results: [{ kind: "large", entryId: "1", reason: "chunks" }] }),
    ];
    const savings = currentSavings(entries);
    expect(savings).toEqual({ chars: 4001 - 17, items: 1 });
    expect(savingsText(savings)).toBe("🛡 −996 · 1");
    expect(savingsText({ chars: 0, items: 0 })).toBe("🛡 0 saved");
  });

  it("names every footer state", () => {
    expect(statusText({ kind: "off" })).toBe("🛡 guard off");
    expect(statusText({ kind: "busy" })).toBe("🛡 distilling…");
    expect(
      statusText({ kind: "unavailable", lookup: { ok: false, problem: "no-key", ref: "x/y", provider: "openrouter" } }),
    ).toBe("🛡 no openrouter key");
    expect(statusText({ kind: "unavailable", lookup: { ok: false, problem: "not-found", ref: "x/y" } })).toBe(
      "🛡 model x/y not found",
    );
    expect(statusText({ kind: "unavailable", lookup: { ok: false, problem: "bad-model", ref: "jev" } })).toBe(
      '🛡 model "jev" is not provider/id',
    );
    expect(statusText({ kind: "ready", savings: { chars: 16_800, items: 3 } })).toBe("🛡 −4.2k · 3");
  });
});
