import { describe, expect, it } from "vitest";
import {
  batchHealth,
  boolScore,
  buildRoutingState,
  DIGEST_CHARS,
  decayDue,
  loadAndEvict as decide,
  errorClass,
  type Held,
  isRateLimit,
  namespaceRequest,
  parseSkillInvocation,
  renderLoadedSkills,
  skillRequest,
  stripFrontmatter,
} from "../../../../src/core/routing/routing.ts";
import type { ClassifierOutcome } from "../../../../src/core/shared/types.ts";

const cfg = { loadThreshold: 0.6, topK: 3, decayThreshold: 0.25 };
const scores = (o: Record<string, number | undefined>) => new Map(Object.entries(o));
const held = (names: string[], turn = 1): Map<string, Held> => new Map(names.map((n) => [n, { score: 0.9, turn }]));

describe("decide: threshold and top-K", () => {
  it("loads what reaches the threshold, at most topK, best first", () => {
    const d = decide({
      scores: scores({ a: 0.95, b: 0.61, c: 0.6, d: 0.59, e: 0.8 }),
      loaded: new Map(),
      pinned: new Set(),
      config: cfg,
    });
    expect(d.load.map((l) => l.name)).toEqual(["a", "e", "b"]);
    expect(d.crowded).toEqual(["c"]);
    expect(d.evict).toEqual([]);
  });

  it("breaks ties by name, the same way every time", () => {
    const input = {
      scores: scores({ zeta: 0.7, alpha: 0.7, mid: 0.7, beta: 0.7 }),
      loaded: new Map(),
      pinned: new Set<string>(),
    };
    const first = decide({ ...input, config: { ...cfg, topK: 2 } });
    expect(first.load.map((l) => l.name)).toEqual(["alpha", "beta"]);
    expect(first.crowded).toEqual(["mid", "zeta"]);
    const reversed = decide({
      ...input,
      scores: new Map([...input.scores].reverse()),
      config: { ...cfg, topK: 2 },
    });
    expect(reversed).toEqual(first);
  });

  it("never loads by score what is loaded or pinned, and topK 0 loads nothing", () => {
    const d = decide({
      scores: scores({ a: 0.99, b: 0.99, c: 0.99 }),
      loaded: held(["a"]),
      pinned: new Set(["b"]),
      config: cfg,
    });
    expect(d.load.map((l) => l.name)).toEqual(["c"]);
    expect(
      decide({ scores: scores({ a: 0.99 }), loaded: new Map(), pinned: new Set(), config: { ...cfg, topK: 0 } }).load,
    ).toEqual([]);
  });

  it("unknown scores neither load nor evict", () => {
    const d = decide({
      scores: scores({ a: undefined, b: Number.NaN }),
      decayScores: scores({ x: undefined, y: Number.NaN }),
      loaded: held(["x", "y"]),
      pinned: new Set(),
      config: cfg,
    });
    expect(d).toEqual({ load: [], evict: [], crowded: [] });
  });

  it("evicts loaded items below the decay threshold, never pins", () => {
    const d = decide({
      scores: new Map(),
      decayScores: scores({ x: 0.1, y: 0.25, z: 0.05, p: 0.0 }),
      loaded: held(["x", "y", "z", "p"]),
      pinned: new Set(["p"]),
      config: cfg,
    });
    expect(d.evict.map((e) => e.name)).toEqual(["z", "x"]);
  });

  it("a decay score for something no longer loaded changes nothing", () => {
    const d = decide({
      scores: new Map(),
      decayScores: scores({ gone: 0 }),
      loaded: new Map(),
      pinned: new Set(),
      config: cfg,
    });
    expect(d.evict).toEqual([]);
  });
});

describe("decay cadence", () => {
  it("is due on every interval-th user turn", () => {
    const due = Array.from({ length: 12 }, (_, i) => i + 1).filter((t) => decayDue(t, 5));
    expect(due).toEqual([5, 10]);
    expect(decayDue(3, 0)).toBe(false);
    expect(decayDue(0, 5)).toBe(false);
  });
});

describe("answers and failures", () => {
  it("reads a bool probability, and nothing from an error or a bad value", () => {
    const ok: ClassifierOutcome = { status: "stop", answers: { needed: { type: "bool", probability: 0.7 } } };
    expect(boolScore(ok, "needed")).toBe(0.7);
    expect(boolScore({ status: "stop", answers: { needed: { type: "bool", probability: 1.7 } } }, "needed")).toBe(
      undefined,
    );
    expect(boolScore({ status: "error", error: "x" }, "needed")).toBe(undefined);
    expect(boolScore(ok, "other")).toBe(undefined);
  });

  it("tells a rate limit from other failures", () => {
    expect(isRateLimit("System One API error (429): slow down")).toBe(true);
    expect(isRateLimit("System One API error (500): boom")).toBe(false);
    expect(batchHealth([])).toBe("empty");
    expect(
      batchHealth([{ status: "timeout" }, { status: "stop", answers: { q: { type: "bool", probability: 0.4 } } }]),
    ).toBe("ok");
    // A reply whose probabilities were all unusable (dropped as out of range) answered nothing.
    expect(batchHealth([{ status: "timeout" }, { status: "stop", answers: {} }])).toBe("failed");
    expect(batchHealth([{ status: "error", error: "System One API error (429): x" }, { status: "timeout" }])).toBe(
      "rate-limited",
    );
    expect(batchHealth([{ status: "error", error: "fetch failed" }, { status: "timeout" }])).toBe("failed");
    expect(errorClass("System One API error (500): <html>secret body</html>")).toBe("http 500");
    expect(errorClass("fetch failed")).toBe("unreachable");
  });
});

describe("routing state", () => {
  it("keeps the latest prompt verbatim in its own field and the digest newest first, capped", () => {
    const messages = Array.from({ length: 40 }, (_, i) => ({
      role: (i % 2 ? "assistant" : "user") as "user" | "assistant",
      text: `message ${i} ${"x".repeat(2000)}`,
    }));
    const r = buildRoutingState({ prompt: "  Fix the PDF export, keep   spacing ", messages });
    expect(r.state.latest_request).toBe("  Fix the PDF export, keep   spacing ");
    const conv = r.state.earlier_conversation_newest_first as Array<{ role: string; text: string }>;
    expect(conv[0]?.text.startsWith("message 0 ")).toBe(true);
    expect(conv[1]?.role).toBe("assistant");
    expect(r.digestChars).toBeLessThanOrEqual(DIGEST_CHARS + 200);
    expect(conv.length).toBeLessThan(40);
  });

  it("routes a /skill:name expansion by what the user asked besides it", () => {
    const prompt = `<skill name="pdf-tools" location="/s/pdf-tools/SKILL.md">\nReferences are relative to /s/pdf-tools.\n\n# PDF\nUse qpdf.\n</skill>\n\nsplit report.pdf`;
    expect(parseSkillInvocation(prompt)).toEqual({ skill: "pdf-tools", request: "split report.pdf" });
    const r = buildRoutingState({ prompt, messages: [{ role: "user", text: prompt }] });
    expect(r.invokedSkill).toBe("pdf-tools");
    expect(r.state.latest_request).toBe("split report.pdf");
    const conv = r.state.earlier_conversation_newest_first as Array<{ text: string }>;
    expect(conv[0]?.text).toBe("[invoked skill pdf-tools] split report.pdf");
    expect(parseSkillInvocation("plain words")).toEqual({ request: "plain words" });
  });

  it("asks one bool per skill with its full body, and one batched request for namespaces", () => {
    const state = { latest_request: "q", earlier_conversation_newest_first: [] };
    const req = skillRequest(state, { name: "docker", description: "Containers", body: "# Docker\nbody" });
    expect(req.state).toMatchObject({ latest_request: "q", skill: { name: "docker", instructions: "# Docker\nbody" } });
    expect(Object.keys(req.questions)).toEqual(["needed"]);
    expect(req.questions.needed?.type).toBe("bool");
    const batch = namespaceRequest(state, [
      { name: "browser", tools: ["browser_open", "browser_click"] },
      { name: "tavily", description: "Web search", tools: ["tavily_search"] },
    ]);
    expect(batch.ids).toEqual({ ns_0: "browser", ns_1: "tavily" });
    expect(Object.keys(batch.request.questions)).toEqual(["ns_0", "ns_1"]);
    expect(batch.request.questions.ns_1?.instructions).toContain("Web search");
    expect(batch.request.state.tool_groups).toEqual({
      browser: { tools: ["browser_open", "browser_click"] },
      tavily: { description: "Web search", tools: ["tavily_search"] },
    });
  });
});

describe("what the model sees", () => {
  it("renders the same bytes for the same set, whatever the load order", () => {
    const a = { name: "alpha", filePath: "/s/alpha/SKILL.md", baseDir: "/s/alpha", body: "A body" };
    const b = { name: "beta", filePath: "/s/beta/SKILL.md", baseDir: "/s/beta", body: "B body\n" };
    const one = renderLoadedSkills([a, b]);
    expect(renderLoadedSkills([b, a])).toBe(one);
    expect(one.indexOf('<skill name="alpha"')).toBeLessThan(one.indexOf('<skill name="beta"'));
    expect(one).toContain("References are relative to /s/beta.\n\nB body\n</skill>");
    expect(renderLoadedSkills([])).toBe("");
  });

  it("strips the frontmatter of SKILL.md", () => {
    expect(stripFrontmatter("---\nname: x\ndescription: y\n---\n\n# Body\ntext\n")).toBe("# Body\ntext");
    expect(stripFrontmatter("# No frontmatter\n")).toBe("# No frontmatter");
  });
});
