// decide() rule by rule: one routing turn from a state and its facts to the next state, the view and the
// events, with no classifier, no files and no Pi.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Held } from "../../../../src/core/routing/routing.ts";
import {
  type BatchResult,
  initialState,
  type RouterState,
  type SkillInfo,
  type TurnFacts,
  toSnapshot,
} from "../../../../src/core/routing/routing-state.ts";
import { decide, FAIL_STATIC_AFTER, toAsk } from "../../../../src/core/routing/turn-decision.ts";
import { DEFAULT_CONFIG } from "../../../../src/core/shared/config.ts";

const skill = (name: string, extra: Partial<SkillInfo> = {}): SkillInfo => ({
  name,
  description: `${name} things`,
  filePath: `/skills/${name}/SKILL.md`,
  baseDir: `/skills/${name}`,
  ...extra,
});
const SKILLS = [skill("pdf"), skill("docker"), skill("k8s"), skill("git")];
const TOOLS = ["read", "bash", "browser_open", "browser_click", "tavily_search", "other"].map((name) => ({ name }));
const CONFIG = {
  ...DEFAULT_CONFIG,
  toolNamespaces: { browser: { prefix: "browser_" }, tavily: { prefix: "tavily_" } },
};
const body = (name: string) => ({ body: `# ${name}\nsteps`, filePath: `/skills/${name}/SKILL.md`, baseDir: "/x" });

function batch(
  skillScores: Record<string, number | undefined>,
  nsScores: Record<string, number | undefined> = {},
  extra: Partial<BatchResult> = {},
): BatchResult {
  return {
    gen: 1,
    health: "ok",
    skillHealth: "ok",
    nsHealth: "ok",
    skillScores: new Map(Object.entries(skillScores)),
    decayScores: new Map(),
    nsScores: new Map(Object.entries(nsScores)),
    nsDecayScores: new Map(),
    bodies: new Map(Object.keys(skillScores).map((n) => [n, body(n)])),
    requests: 3,
    inputTokens: 300,
    costUsd: 0.0001,
    timedOut: false,
    promptChars: 10,
    digestChars: 0,
    ...extra,
  };
}
const failed = (error: string): BatchResult =>
  batch({}, {}, { health: "failed", skillHealth: "failed", nsHealth: "failed", error });

function facts(extra: Partial<TurnFacts> = {}): TurnFacts {
  return {
    kind: "user",
    config: CONFIG,
    prompt: "hello",
    skills: SKILLS,
    tools: TOOLS,
    active: TOOLS.map((t) => t.name),
    userTurn: 1,
    classifier: true,
    source: "fresh",
    bodies: new Map(SKILLS.map((x) => [x.name, body(x.name)])),
    ...extra,
  };
}

const records = (events: ReturnType<typeof decide>["events"]) =>
  events.flatMap((e) => (e.kind === "record" ? [e.record] : []));
const notices = (events: ReturnType<typeof decide>["events"]) =>
  events.flatMap((e) => (e.kind === "notice" ? [e.notice] : []));
const record = (events: ReturnType<typeof decide>["events"], type: string) =>
  records(events).find((r) => r.type === type) as Record<string, unknown> | undefined;

/** A state after one turn that loaded pdf and surfaced browser. */
function routed(): RouterState {
  return decide(initialState(), facts({ batch: batch({ pdf: 0.9, docker: 0.1 }, { browser: 0.9, tavily: 0.1 }) }))
    .state;
}

describe("decide: a batch that answered", () => {
  it("loads at or above loadThreshold, at most topK by score, and reports the crowded rest", () => {
    const { state, view, events } = decide(
      initialState(),
      facts({ config: { ...CONFIG, topK: 2 }, batch: batch({ pdf: 0.8, docker: 0.8, k8s: 0.9, git: 0.59 }) }),
    );
    expect([...state.loaded.keys()]).toEqual(["k8s", "docker"]);
    expect(state.skillsRouted).toBe(true);
    expect(view.catalog).toEqual([]);
    expect(view.section).toContain('<skill name="docker"');
    expect(view.section).toContain('<skill name="k8s"');
    expect(view.changed).toBe(true);
    expect(record(events, "route")).toMatchObject({ mode: "routed", source: "fresh", crowded: ["pdf"] });
  });

  it("ignores scores of skills Pi does not list now or the model may not invoke", () => {
    const skills = [skill("pdf", { disableModelInvocation: true }), skill("docker")];
    const { state } = decide(initialState(), facts({ skills, batch: batch({ pdf: 0.9, gone: 0.9, docker: 0.9 }) }));
    expect([...state.loaded.keys()]).toEqual(["docker"]);
  });

  it("surfaces every namespace at or above the threshold (no top-K) and hides the others' tools", () => {
    const { state, view } = decide(
      initialState(),
      facts({ config: { ...CONFIG, topK: 0 }, batch: batch({}, { browser: 0.9, tavily: 0.7 }) }),
    );
    expect([...state.surfaced.keys()].sort()).toEqual(["browser", "tavily"]);
    expect(view.activeTools).toBeUndefined(); // nothing hidden: Pi's list stands
    const low = decide(initialState(), facts({ batch: batch({}, { browser: 0.9, tavily: 0.1 }) }));
    expect(low.view.activeTools).toEqual(["read", "bash", "browser_open", "browser_click", "other"]);
    expect([...low.state.hidden]).toEqual(["tavily_search"]);
    expect(record(low.events, "surface")).toMatchObject({ surfaced: ["browser"], hiddenNamespaces: ["tavily"] });
  });

  it("a part whose own requests all failed keeps its previous state", () => {
    const before = routed();
    const { state } = decide(
      before,
      facts({ userTurn: 2, batch: batch({ docker: 0.9 }, {}, { nsHealth: "failed", nsScores: new Map() }) }),
    );
    expect([...state.loaded.keys()].sort()).toEqual(["docker", "pdf"]);
    expect([...state.surfaced.keys()]).toEqual(["browser"]);
    expect(state.toolsRouted).toBe(true);
    const first = decide(initialState(), facts({ batch: batch({ pdf: 0.9 }, {}, { nsHealth: "failed" }) }));
    expect(first.state.toolsRouted).toBe(false);
    expect(first.state.skillsRouted).toBe(true);
  });

  it("an answer clears the failure count, the freeze and the static reason", () => {
    const start: RouterState = { ...initialState(), failures: 1, frozen: true, staticReason: "failed" };
    const { state } = decide(start, facts({ batch: batch({ pdf: 0.9 }) }));
    expect(state).toMatchObject({ failures: 0, frozen: false, staticReason: undefined });
  });

  it("an empty batch (nothing was asked) changes nothing", () => {
    const start: RouterState = { ...routed(), failures: 1 };
    const { state, view } = decide(start, facts({ userTurn: 2, batch: batch({}, {}, { health: "empty" }) }));
    expect(toSnapshot(state)).toEqual(toSnapshot(start));
    expect(state.failures).toBe(1);
    expect(view.changed).toBe(false);
  });
});

describe("decide: decay", () => {
  const decay = (warm: boolean) =>
    decide(
      routed(),
      facts({
        userTurn: 5,
        cacheWarm: warm,
        bodies: new Map([["pdf", body("pdf")]]),
        batch: batch(
          {},
          {},
          {
            decayScores: new Map([["pdf", 0.1]]),
            nsDecayScores: new Map([["browser", 0.1]]),
          },
        ),
      }),
    );

  it("evicts what scores below decayThreshold at a cold prompt", () => {
    const { state, events } = decay(false);
    expect([...state.loaded.keys()]).toEqual([]);
    expect([...state.surfaced.keys()]).toEqual([]);
    expect(record(events, "route")?.evicted).toEqual([{ name: "pdf", score: 0.1 }]);
  });

  it("evicts nothing while the main model's cache is warm", () => {
    const { state, view } = decay(true);
    expect([...state.loaded.keys()]).toEqual(["pdf"]);
    expect([...state.surfaced.keys()]).toEqual(["browser"]);
    expect(view.changed).toBe(false);
  });

  it("an unknown decay score never evicts", () => {
    const { state } = decide(
      routed(),
      facts({
        bodies: new Map([["pdf", body("pdf")]]),
        batch: batch({}, {}, { decayScores: new Map([["pdf", undefined]]) }),
      }),
    );
    expect([...state.loaded.keys()]).toEqual(["pdf"]);
  });
});

describe("decide: fail-static", () => {
  it("without a classifier: one notice naming the class, a degraded record once, Pi's default", () => {
    const unavailable = { class: "no-key", message: "no openrouter key" };
    const active = ["read", "bash", "browser_open", "browser_click", "other"];
    const first = decide(routed(), facts({ classifier: false, unavailable, active }));
    expect(notices(first.events)).toEqual([{ class: "no-key", message: "no openrouter key", level: "warning" }]);
    expect(record(first.events, "degraded")).toMatchObject({ class: "no-key", action: "static" });
    expect(first.events.some((e) => e.kind === "static")).toBe(true);
    expect(first.state).toMatchObject({ skillsRouted: false, toolsRouted: false, staticReason: "no-key" });
    expect(first.view.catalog).toBeUndefined();
    expect(first.view.section).toBeUndefined();
    expect([...(first.view.activeTools ?? [])].sort()).toEqual(TOOLS.map((t) => t.name).sort());
    const second = decide(first.state, facts({ classifier: false, unavailable }));
    expect(record(second.events, "degraded")).toBeUndefined();
  });

  it("a rate limit freezes the current set", () => {
    const before = routed();
    const limited = { ...failed("API error (429): slow"), health: "rate-limited" as const };
    const { state, view, events } = decide(before, facts({ batch: limited }));
    expect(state.frozen).toBe(true);
    expect(toSnapshot(state)).toEqual(toSnapshot(before));
    expect(view.changed).toBe(false);
    expect(notices(events).map((n) => n.class)).toEqual(["rate-limited"]);
    expect(record(events, "degraded")).toMatchObject({ class: "rate-limited", action: "freeze" });
  });

  it(`${FAIL_STATIC_AFTER} failed batches in a row go back to Pi's default, with one degraded record`, () => {
    const once = decide(routed(), facts({ batch: failed("API error (500): boom") }));
    expect(once.state.failures).toBe(1);
    expect(once.state.skillsRouted).toBe(true);
    expect(
      once.events.filter((e) => e.kind !== "record" || (e.record.type !== "route" && e.record.type !== "surface")),
    ).toEqual([]);
    const twice = decide(once.state, facts({ batch: failed("API error (500): boom") }));
    expect(twice.state).toMatchObject({ skillsRouted: false, toolsRouted: false, staticReason: "failed" });
    expect(twice.state.loaded.size + twice.state.surfaced.size).toBe(0);
    expect(notices(twice.events)[0]?.message).toContain("failed 2 times in a row (http 500)");
    expect(record(twice.events, "degraded")).toMatchObject({ class: "failed", action: "static", detail: "http 500" });
    const thrice = decide(twice.state, facts({ batch: failed("API error (500): boom") }));
    expect(record(thrice.events, "degraded")).toBeUndefined();
  });

  it("the guard off: static, no record, and every tool surfacing hid comes back", () => {
    const before = routed();
    const active = ["read", "bash", "browser_open", "browser_click", "other"];
    const { state, view, events } = decide(before, facts({ config: { ...CONFIG, enabled: false }, active }));
    expect(state).toMatchObject({ skillsRouted: false, toolsRouted: false, staticReason: "off" });
    expect(records(events)).toEqual([]);
    expect(view.activeTools).toEqual([...active, "tavily_search"]);
    expect(state.hidden.size).toBe(0);
  });
});

describe("decide: pins and misses", () => {
  it("a /skill:name prompt pins the skill: in the catalog, out of the loaded set, recorded once", () => {
    const prompt = '<skill name="pdf" location="/skills/pdf/SKILL.md">\nbody\n</skill>\n\nsplit it';
    const { state, view, events } = decide(routed(), facts({ prompt, bodies: new Map([["pdf", body("pdf")]]) }));
    expect([...state.pinned]).toEqual(["pdf"]);
    expect(state.loaded.has("pdf")).toBe(false);
    expect(view.catalog).toEqual([SKILLS[0]]);
    expect(view.catalog?.[0]).toBe(SKILLS[0]); // Pi's own object, so the hook can filter by identity
    expect(records(events).filter((r) => r.type === "pin")).toEqual([{ type: "pin", skill: "pdf" }]);
    const again = decide(state, facts({ prompt }));
    expect(records(again.events).filter((r) => r.type === "pin")).toEqual([]);
  });

  it("pins typed during a run apply without a classifier; a name Pi does not list is not pinned", () => {
    const { state } = decide(
      initialState(),
      facts({ classifier: false, pendingPins: ["docker", "nope"], unavailable: { class: "no-key", message: "x" } }),
    );
    expect([...state.pinned]).toEqual(["docker"]);
  });

  it("a missed namespace is surfaced now, even when the classifier fails", () => {
    const { state, view, events } = decide(
      routed(),
      facts({
        missed: ["tavily", "empty-ns"],
        batch: failed("fetch failed"),
        active: ["read", "bash", "browser_open", "browser_click", "other"],
        bodies: new Map([["pdf", body("pdf")]]),
      }),
    );
    expect(state.surfaced.get("tavily")).toEqual({ score: null, turn: 1 });
    expect(view.activeTools).toContain("tavily_search");
    expect(record(events, "surface")?.forced).toEqual(["tavily"]);
  });
});

describe("decide: the view", () => {
  it("a run started by a custom message re-applies the state: no pins, no records", () => {
    const before = routed();
    const prompt = '<skill name="docker" location="/x">\nb\n</skill>';
    const { state, view, events } = decide(
      before,
      facts({ kind: "custom", prompt, pendingPins: ["git"], bodies: new Map([["pdf", body("pdf")]]) }),
    );
    expect(state.pinned.size).toBe(0);
    expect(events).toEqual([]);
    expect(view.section).toContain('<skill name="pdf"');
    expect(view.changed).toBe(false);
  });

  it("a loaded skill without a body, or no longer listed by Pi, is dropped", () => {
    const before = routed();
    const unread = decide(before, facts({ kind: "custom", bodies: new Map() }));
    expect(unread.state.loaded.size).toBe(0);
    expect(unread.view.section).toBe("");
    expect(unread.view.changed).toBe(true);
    const gone = decide(
      before,
      facts({ kind: "custom", skills: SKILLS.slice(1), bodies: new Map([["pdf", body("pdf")]]) }),
    );
    expect(gone.state.loaded.size).toBe(0);
  });

  it("the section is the same bytes for the same set, whatever order it was loaded in", () => {
    const a = decide(initialState(), facts({ batch: batch({ pdf: 0.9, docker: 0.8 }) }));
    const b = decide(initialState(), facts({ batch: batch({ docker: 0.9, pdf: 0.8 }) }));
    expect(a.view.section).toBe(b.view.section);
  });

  it("nothing to route (no skill, no namespace with tools): no classifier notice, nothing changes", () => {
    const { state, view, events } = decide(
      initialState(),
      facts({ skills: [], tools: [{ name: "read" }], active: ["read"], classifier: false }),
    );
    expect(events).toEqual([]);
    expect(view).toEqual({ changed: false });
    expect(state.routable).toEqual({ skills: 0, namespaces: 0 });
  });

  it("no answer in time: the previous set stands and the record says so", () => {
    const before = routed();
    const { state, view, events } = decide(
      before,
      facts({ source: "none", deadlinePassed: true, bodies: new Map([["pdf", body("pdf")]]) }),
    );
    expect(toSnapshot(state)).toEqual(toSnapshot(before));
    expect(view.changed).toBe(false);
    expect(record(events, "route")).toMatchObject({ source: "none", timedOut: true, mode: "routed" });
  });
});

describe("decide is a function of its arguments", () => {
  it("leaves the state it was given as it was, and gives the same result for the same input", () => {
    const before = routed();
    const copy = { ...toSnapshot(before), failures: before.failures, routable: before.routable };
    const input = facts({
      userTurn: 5,
      batch: batch({ docker: 0.9 }, { tavily: 0.9 }, { decayScores: new Map([["pdf", 0.1]]) }),
    });
    const one = decide(before, input);
    const two = decide(before, input);
    expect({ ...toSnapshot(before), failures: before.failures, routable: before.routable }).toEqual(copy);
    expect(toSnapshot(one.state)).toEqual(toSnapshot(two.state));
    expect(one.view).toEqual(two.view);
    expect(one.events).toEqual(two.events);
  });
});

describe("toAsk", () => {
  it("asks nothing when off, for a custom run, without a classifier, or with nothing to route", () => {
    expect(toAsk(initialState(), facts({ config: { ...CONFIG, enabled: false } }))).toBeUndefined();
    expect(toAsk(initialState(), facts({ kind: "custom" }))).toBeUndefined();
    expect(toAsk(initialState(), facts({ classifier: false }))).toBeUndefined();
    expect(toAsk(initialState(), facts({ skills: [], tools: [] }))).toBeUndefined();
  });

  it("leaves out the skills pinned at this turn and asks surfaced namespaces only when decay is due", () => {
    const ask = toAsk(routed(), facts({ pendingPins: ["docker"], missed: ["tavily"], userTurn: 2 }));
    expect([...(ask?.pinned ?? [])]).toEqual(["docker"]);
    expect(ask?.namespaces.map((n) => n.name)).toEqual([]);
    expect(ask?.surfacedNs.map((n) => n.name)).toEqual(["browser", "tavily"]);
    expect(ask?.due).toBe(false);
    expect(toAsk(routed(), facts({ userTurn: CONFIG.decayIntervalTurns }))?.due).toBe(true);
  });
});

describe("decide over random states and facts", () => {
  const NAMES = SKILLS.map((x) => x.name);
  const TOOL_NAMES = TOOLS.map((t) => t.name);
  const held = fc.record({
    score: fc.option(fc.double({ min: 0, max: 1, noNaN: true }), { nil: null }),
    turn: fc.nat(9),
  });
  const heldMap = (names: readonly string[]) =>
    fc
      .uniqueArray(fc.constantFrom(...names), { maxLength: names.length })
      .chain((keys) => fc.tuple(...keys.map(() => held)).map((hs) => new Map(keys.map((k, i) => [k, hs[i] as Held]))));
  const subset = (names: readonly string[]) => fc.uniqueArray(fc.constantFrom(...names), { maxLength: names.length });
  const scores = (names: readonly string[]) =>
    subset(names).chain((keys) =>
      fc
        .tuple(...keys.map(() => fc.option(fc.double({ min: 0, max: 1, noNaN: true }), { nil: undefined })))
        .map((vs) => new Map(keys.map((k, i) => [k, vs[i]]))),
    );
  const health = fc.constantFrom("ok", "empty", "rate-limited", "failed") as fc.Arbitrary<BatchResult["health"]>;
  // A pinned skill is never also loaded: pins take it out of the loaded set.
  const stateArb: fc.Arbitrary<RouterState> = fc
    .record({
      skillsRouted: fc.boolean(),
      toolsRouted: fc.boolean(),
      loaded: heldMap(NAMES),
      pinned: subset(NAMES).map((xs) => new Set(xs)),
      surfaced: heldMap(["browser", "tavily"]),
      hidden: subset(TOOL_NAMES).map((xs) => new Set(xs)),
      staticReason: fc.option(fc.constantFrom("off", "failed", "no-key"), { nil: undefined }),
      frozen: fc.boolean(),
      failures: fc.nat(3),
      routable: fc.constant(undefined),
    })
    .map((st) => ({ ...st, loaded: new Map([...st.loaded].filter(([n]) => !st.pinned.has(n))) }));
  const batchArb: fc.Arbitrary<BatchResult> = fc
    .record({
      health,
      skillHealth: health,
      nsHealth: health,
      skillScores: scores(NAMES),
      decayScores: scores(NAMES),
      nsScores: scores(["browser", "tavily"]),
      nsDecayScores: scores(["browser", "tavily"]),
    })
    .map((b) => batch({}, {}, { ...b, bodies: new Map(NAMES.map((n) => [n, body(n)])) }));
  const factsArb: fc.Arbitrary<TurnFacts> = fc
    .record({
      kind: fc.constantFrom("user", "custom") as fc.Arbitrary<"user" | "custom">,
      enabled: fc.boolean(),
      topK: fc.nat(4),
      classifier: fc.boolean(),
      batch: fc.option(batchArb, { nil: undefined }),
      cacheWarm: fc.boolean(),
      pendingPins: subset([...NAMES, "unknown"]),
      missed: subset(["browser", "tavily"]),
      active: subset(TOOL_NAMES),
      userTurn: fc.integer({ min: 1, max: 12 }),
    })
    .map(({ enabled, topK, ...f }) => facts({ ...f, config: { ...CONFIG, enabled, topK } }));

  it("never changes its input, is deterministic, and keeps its invariants", () => {
    fc.assert(
      fc.property(stateArb, factsArb, (state, f) => {
        const before = JSON.stringify([toSnapshot(state), state.failures, state.frozen, state.staticReason]);
        const out = decide(state, f);
        expect(JSON.stringify([toSnapshot(state), state.failures, state.frozen, state.staticReason])).toBe(before);
        expect(decide(state, f)).toEqual(out);
        const next = out.state;
        expect(out.view.changed).toBe(JSON.stringify(toSnapshot(next)) !== JSON.stringify(toSnapshot(state)));
        for (const p of next.pinned) expect(next.loaded.has(p)).toBe(false);
        for (const p of state.pinned) if (f.config.enabled) expect(next.pinned.has(p)).toBe(true);
        const added = [...next.loaded.keys()].filter((n) => !state.loaded.has(n));
        expect(added.length).toBeLessThanOrEqual(f.config.topK);
        for (const n of added) expect(f.batch?.skillScores.get(n) ?? 0).toBeGreaterThanOrEqual(CONFIG.loadThreshold);
        if (out.view.activeTools) for (const t of out.view.activeTools) expect(next.hidden.has(t)).toBe(false);
        if (!f.config.enabled) {
          expect(next.skillsRouted || next.toolsRouted).toBe(false);
          expect(records(out.events)).toEqual([]);
        }
        if (f.kind === "custom" && f.config.enabled) expect(out.events).toEqual([]);
      }),
      { numRuns: 500 },
    );
  });
});
