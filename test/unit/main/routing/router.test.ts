// The turn logic of skill routing and tool surfacing, without Pi: a fake classifier, skill files in a
// temp dir, and Pi's tool list as plain data.
import { mkdir, mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CONFIG, type GuardConfig } from "../../../../src/core/shared/config.ts";
import type { ClassifierOutcome, ClassifierRequest } from "../../../../src/core/shared/types.ts";
import type { ClassifyFn } from "../../../../src/main/pass/classify-queue.ts";
import { type CallbackSite, setCallbackReporter } from "../../../../src/main/platform/callbacks.ts";
import { Telemetry } from "../../../../src/main/platform/telemetry.ts";
import { FAIL_STATIC_AFTER, Router } from "../../../../src/main/routing/router.ts";
import type { SkillLike, TurnInput } from "../../../../src/main/routing/routing-shapes.ts";

const SKILLS: Record<string, { description: string; body: string; keyword: RegExp }> = {
  "pdf-tools": { description: "Work with PDF files.", body: "# PDF\nUse qpdf to split.", keyword: /pdf/i },
  docker: { description: "Build and run containers.", body: "# Docker\nUse buildx.", keyword: /docker|container/i },
  kubernetes: { description: "Deploy to clusters.", body: "# K8s\nUse kubectl.", keyword: /kube|cluster/i },
  "git-flow": { description: "Branching conventions.", body: "# Git\nRebase first.", keyword: /git|branch/i },
};
const NS_KEYWORDS: Record<string, RegExp> = { browser: /browser|web page|click/i, tavily: /search the web|tavily/i };

let dir: string;
let skills: SkillLike[];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "cg-router-"));
  skills = [];
  for (const [name, s] of Object.entries(SKILLS)) {
    const base = join(dir, "skills", name);
    await mkdir(base, { recursive: true });
    const filePath = join(base, "SKILL.md");
    await writeFile(filePath, `---\nname: ${name}\ndescription: ${s.description}\n---\n\n${s.body}\n`);
    skills.push({ name, description: s.description, filePath, baseDir: base });
  }
});

interface FakeOptions {
  delayMs?: number;
  fail?: (req: ClassifierRequest) => string | undefined;
  override?: Record<string, number>;
}

/** Keyword classifier over the routing state's latest request. */
function fake(calls: ClassifierRequest[], opts: FakeOptions = {}): ClassifyFn {
  return async (req) => {
    calls.push(req);
    if (opts.delayMs) await new Promise((r) => setTimeout(r, opts.delayMs));
    const error = opts.fail?.(req);
    if (error) return { status: "error", error } satisfies ClassifierOutcome;
    const state = req.state as { latest_request: string; skill?: { name: string }; tool_groups?: object };
    const answers: Record<string, { type: "bool"; probability: number }> = {};
    for (const [id, q] of Object.entries(req.questions)) {
      let name: string;
      let hit: boolean;
      if (state.skill) {
        name = state.skill.name;
        hit = SKILLS[name]?.keyword.test(state.latest_request) ?? false;
      } else {
        name = /"([^"]+)"/.exec(q.instructions)?.[1] ?? "";
        hit = NS_KEYWORDS[name]?.test(state.latest_request) ?? false;
      }
      answers[id] = { type: "bool", probability: opts.override?.[name] ?? (hit ? 0.9 : 0.05) };
    }
    return { status: "stop", answers, inputTokens: 100, costUsd: 0.000004 };
  };
}

/** Tracks a classifier's calls: `idle()` resolves once every call made so far has answered and been handled. */
function tracked(classify: ClassifyFn): { classify: ClassifyFn; idle(): Promise<void> } {
  const inflight = new Set<Promise<unknown>>();
  return {
    classify: (...args: Parameters<ClassifyFn>) => {
      const p = classify(...args);
      inflight.add(p);
      return p;
    },
    async idle() {
      while (inflight.size > 0) {
        const all = [...inflight];
        inflight.clear();
        await Promise.allSettled(all);
      }
      // The router keeps late answers in its own continuations: let them run.
      await new Promise((r) => setImmediate(r));
    },
  };
}

const TOOLS = ["read", "bash", "edit", "write", "browser_open", "browser_click", "tavily_search", "other_tool"];

async function setup(overrides: Partial<GuardConfig> = {}) {
  const config: GuardConfig = {
    ...DEFAULT_CONFIG,
    routingTimeoutMs: 500,
    timeoutMs: 3000,
    toolNamespaces: { browser: { prefix: "browser_" }, tavily: { prefix: "tavily_", description: "Web search" } },
    telemetryPath: join(dir, `telemetry-${Math.random().toString(36).slice(2)}.jsonl`),
    ...overrides,
  };
  const telemetry = new Telemetry({ getConfig: () => config });
  const router = new Router({ getConfig: () => config, telemetry });
  let active = [...TOOLS];
  let tools = TOOLS.map((name) => ({ name }));
  let turn = 0;
  const run = async (prompt: string, classify: ClassifyFn | undefined, extra: Partial<TurnInput> = {}) => {
    turn++;
    const out = await router.turn({
      kind: "user",
      prompt,
      skills,
      tools,
      active,
      history: () => [],
      userTurn: turn,
      ...(classify ? { classify } : { unavailable: { class: "no-key", message: "no openrouter key" } }),
      ...extra,
    });
    if (out.activeTools) active = out.activeTools;
    return out;
  };
  const events = async () => {
    await telemetry.flush();
    const text = await readFile(config.telemetryPath, "utf8").catch(() => "");
    return text
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l));
  };
  return {
    config,
    router,
    run,
    events,
    active: () => active,
    register: (name: string) => {
      tools = [...tools, { name }];
      active = [...active, name];
    },
  };
}

const names = (list: SkillLike[] | undefined) => list?.map((s) => s.name);

describe("skill routing at the turn", () => {
  it("loads the skill the prompt is about; the catalog loses the others; the body is injected", async () => {
    const t = await setup();
    const calls: ClassifierRequest[] = [];
    const out = await t.run("The PDF export is broken, split report.pdf", fake(calls));
    expect(names(out.catalog)).toEqual([]);
    expect(out.section).toContain('<skill name="pdf-tools"');
    expect(out.section).toContain("Use qpdf to split.");
    expect(out.section).not.toContain("kubectl");
    expect(out.changed).toBe(true);
    // one request per skill with its full body, plus one batched namespace request
    const skillCalls = calls.filter((c) => "skill" in c.state);
    expect(skillCalls.map((c) => (c.state.skill as { name: string }).name).sort()).toEqual(Object.keys(SKILLS).sort());
    expect((skillCalls[0]?.state.skill as { instructions?: string } | undefined)?.instructions).toMatch(/^# /);
    expect(calls.filter((c) => "tool_groups" in c.state)).toHaveLength(1);
    // namespaces scored low are hidden
    expect(t.active()).toEqual(["read", "bash", "edit", "write", "other_tool"]);
  });

  it("is byte-stable between turns when nothing changes, and loaded skills are not re-scored", async () => {
    const t = await setup();
    const calls: ClassifierRequest[] = [];
    const first = await t.run("Split report.pdf please", fake(calls));
    calls.length = 0;
    const second = await t.run("and also the appendix pdf", fake(calls));
    const third = await t.run("thanks, more pdf pages", fake(calls));
    expect(second.section).toBe(first.section);
    expect(third.section).toBe(first.section);
    expect(second.catalog).toEqual(first.catalog);
    expect(second.changed).toBe(false);
    expect(third.changed).toBe(false);
    expect(second.activeTools).toBeUndefined();
    const asked = calls.filter((c) => "skill" in c.state).map((c) => (c.state.skill as { name: string }).name);
    expect(asked).not.toContain("pdf-tools");
  });

  it("re-checks loaded skills every decayIntervalTurns turns and evicts below decayThreshold", async () => {
    const t = await setup({ decayIntervalTurns: 3 });
    const calls: ClassifierRequest[] = [];
    await t.run("pdf work", fake(calls)); // turn 1: loads pdf-tools
    calls.length = 0;
    const t2 = await t.run("now something about docker", fake(calls)); // turn 2: no decay check
    expect(calls.some((c) => (c.state.skill as { name?: string } | undefined)?.name === "pdf-tools")).toBe(false);
    expect(t2.section).toContain('name="pdf-tools"');
    expect(t2.section).toContain('name="docker"');
    calls.length = 0;
    const t3 = await t.run("only docker now", fake(calls)); // turn 3: decay check evicts pdf-tools
    expect(calls.some((c) => (c.state.skill as { name?: string } | undefined)?.name === "pdf-tools")).toBe(true);
    expect(t3.section).not.toContain('name="pdf-tools"');
    expect(t3.section).toContain('name="docker"');
    const route = (await t.events()).filter((e) => e.type === "route");
    expect(route[2].evicted).toEqual([{ name: "pdf-tools", score: 0.05 }]);
    expect(route[2].decay).toMatchObject({ "pdf-tools": 0.05, docker: 0.9 });
  });

  it("while the main model's cache is warm a decay check evicts nothing; at a cold prompt it does", async () => {
    const t = await setup({ decayIntervalTurns: 1 });
    const calls: ClassifierRequest[] = [];
    await t.run("pdf work", fake(calls), { cacheWarm: false });
    const warm = await t.run("only docker now", fake(calls), { cacheWarm: true });
    expect(warm.section).toContain('name="pdf-tools"');
    expect(warm.section).toContain('name="docker"');
    const cold = await t.run("only docker now", fake(calls), { cacheWarm: false });
    expect(cold.section).not.toContain('name="pdf-tools"');
    expect(cold.section).toContain('name="docker"');
  });

  it("an unknown decay score never evicts", async () => {
    const t = await setup({ decayIntervalTurns: 2 });
    await t.run("pdf work", fake([]));
    const out = await t.run("unrelated", fake([], { fail: (r) => ("skill" in r.state ? "fetch failed" : undefined) }));
    expect(out.section).toContain('name="pdf-tools"');
  });

  it("loads at most topK, ties by name", async () => {
    const t = await setup({ topK: 2 });
    const out = await t.run(
      "anything",
      fake([], { override: { "pdf-tools": 0.8, docker: 0.8, kubernetes: 0.8, "git-flow": 0.7 } }),
    );
    expect(out.section).toContain('name="docker"');
    expect(out.section).toContain('name="kubernetes"');
    expect(out.section).not.toContain('name="pdf-tools"');
    const [route] = (await t.events()).filter((e) => e.type === "route");
    expect(route.crowded).toEqual(["pdf-tools", "git-flow"]);
  });

  it("pins a /skill:name skill: kept in the catalog, never scored, never evicted, works without a classifier", async () => {
    const t = await setup({ decayIntervalTurns: 1 });
    const calls: ClassifierRequest[] = [];
    const skill = skills.find((s) => s.name === "kubernetes") as SkillLike;
    const prompt = `<skill name="kubernetes" location="${skill.filePath}">\nReferences are relative to ${skill.baseDir}.\n\n# K8s\nUse kubectl.\n</skill>\n\nroll out the pdf service`;
    const out = await t.run(prompt, fake(calls));
    expect(t.router.pinned.has("kubernetes")).toBe(true);
    expect(names(out.catalog)).toEqual(["kubernetes"]);
    expect(out.section).toContain('name="pdf-tools"');
    expect(out.section).not.toContain('name="kubernetes"');
    const asked = calls.filter((c) => "skill" in c.state).map((c) => (c.state.skill as { name: string }).name);
    expect(asked).not.toContain("kubernetes");
    const again = await t.run("unrelated words", fake(calls));
    expect(names(again.catalog)).toEqual(["kubernetes"]);
    // pins without a key: recorded, and everything stays Pi's default
    const u = await setup();
    u.router.pinLater("docker");
    const none = await u.run("hello", undefined);
    expect(u.router.pinned.has("docker")).toBe(true);
    expect(none.catalog).toBeUndefined();
    expect(none.section).toBeUndefined();
  });
});

describe("fail-static, rate limits and the deadline", () => {
  it("without a classifier nothing changes and one notice names the class", async () => {
    const t = await setup();
    const out = await t.run("pdf", undefined);
    expect(out).toEqual({ changed: false });
    expect(t.router.takeNotices()).toEqual([{ class: "no-key", message: "no openrouter key", level: "warning" }]);
    expect(t.router.statusText(t.config)).toBe("🧭 static (no classifier)");
    const degraded = (await t.events()).filter((e) => e.type === "degraded");
    expect(degraded[0]).toMatchObject({ class: "no-key", action: "static" });
  });

  it("a rate limit freezes the current set", async () => {
    const t = await setup();
    const first = await t.run("pdf and a browser click", fake([]));
    const active = t.active();
    expect(active).toContain("browser_open");
    const limited = await t.run(
      "docker and tavily, search the web",
      fake([], { fail: () => "System One API error (429): slow" }),
    );
    expect(limited.section).toBe(first.section);
    expect(limited.activeTools).toBeUndefined();
    expect(t.router.frozen).toBe(true);
    expect(t.router.takeNotices().map((n) => n.class)).toEqual(["rate-limited"]);
    expect(t.router.statusText(t.config)).toMatch(/rate limited/);
  });

  it(`repeated failure (${FAIL_STATIC_AFTER} in a row) goes back to Pi's default and surfaces everything`, async () => {
    const t = await setup();
    await t.run("pdf", fake([]));
    expect(t.active()).not.toContain("browser_open");
    const failing = fake([], { fail: () => "System One API error (500): boom" });
    const once = await t.run("docker", failing);
    expect(once.section).toContain('name="pdf-tools"'); // one failure: the previous set stands
    const twice = await t.run("docker", failing);
    expect(twice.catalog).toBeUndefined();
    expect(twice.section).toBeUndefined();
    expect([...t.active()].sort()).toEqual([...TOOLS].sort()); // Pi appends re-activated tools
    expect(t.router.hidden.size).toBe(0);
    expect(t.router.mode).toBe("static");
    const notices = t.router.takeNotices();
    expect(notices.map((n) => n.class)).toEqual(["failed"]);
    expect(notices[0]?.message).toContain("http 500");
    // It answers again: routed again.
    const back = await t.run("docker", fake([]));
    expect(back.section).toContain('name="docker"');
  });

  it("a part whose own requests all fail keeps its previous state (here: Pi's default tools)", async () => {
    const t = await setup();
    const out = await t.run(
      "pdf",
      fake([], { fail: (r) => ("tool_groups" in r.state ? "System One API error (500): x" : undefined) }),
    );
    expect(out.section).toContain('name="pdf-tools"');
    expect(out.activeTools).toBeUndefined();
    expect(t.router.skillsRouted).toBe(true);
    expect(t.router.toolsRouted).toBe(false);
  });

  it("past routingTimeoutMs the previous set stands; the late answers are used at the next turn", async () => {
    // The classifier deadline is far: only routingTimeoutMs may expire, however loaded the machine.
    const t = await setup({ routingTimeoutMs: 60, timeoutMs: 60_000 });
    const slow = tracked(fake([], { delayMs: 250 }));
    // The turn did not wait for the answers: nothing yet, Pi's default.
    const first = await t.run("pdf please", slow.classify);
    expect(first).toEqual({ changed: false });
    await slow.idle();
    const second = await t.run("something else entirely", slow.classify);
    expect(second.section).toContain('name="pdf-tools"'); // turn 1's late answers
    const route = (await t.events()).filter((e) => e.type === "route");
    expect(route[0]).toMatchObject({ source: "none", timedOut: true, mode: "static" });
    expect(route[1]).toMatchObject({ source: "late", mode: "routed", loaded: [{ name: "pdf-tools", score: 0.9 }] });
  });
});

describe("routing's timers under a fault", () => {
  const reported: string[] = [];
  /** Runs `work` with a throw armed at `site`, as the fault-injection test does. */
  async function armed<T>(site: CallbackSite, work: () => Promise<T>): Promise<T> {
    setCallbackReporter((message) => reported.push(message));
    process.env.CONTEXT_GUARD_INJECT_FAULT = site;
    try {
      return await work();
    } finally {
      delete process.env.CONTEXT_GUARD_INJECT_FAULT;
    }
  }

  it("a throw in the deadline timer is reported, and the turn waits for its batch instead", async () => {
    // The classifier deadline is far: only routingTimeoutMs may expire, however loaded the machine.
    const t = await setup({ routingTimeoutMs: 60, timeoutMs: 60_000 });
    const first = await armed("routing-deadline", () => t.run("pdf please", fake([], { delayMs: 250 })));
    expect(first.section).toContain('name="pdf-tools"');
    expect(reported.some((m) => m.includes("internal error in routing-deadline"))).toBe(true);
    const [route] = (await t.events()).filter((e) => e.type === "route");
    expect(route).toMatchObject({ source: "fresh", mode: "routed" });
  });

  it("a throw while keeping a late batch is reported, and the next turn has no late batch", async () => {
    // The classifier deadline is far: only routingTimeoutMs may expire, however loaded the machine.
    const t = await setup({ routingTimeoutMs: 60, timeoutMs: 60_000 });
    const slow = tracked(fake([], { delayMs: 250 }));
    await armed("routing-late", () => t.run("pdf please", slow.classify));
    await slow.idle();
    expect(reported.some((m) => m.includes("internal error in routing-late"))).toBe(true);
    const second = await t.run("something else entirely", slow.classify);
    expect(second).toEqual({ changed: false });
    const route = (await t.events()).filter((e) => e.type === "route");
    expect(route[1]).toMatchObject({ source: "none", mode: "static" });
  });
});

describe("tool-namespace surfacing", () => {
  it("surfaces by score, hides the rest, calls setActiveTools only when the set changes", async () => {
    const t = await setup();
    const first = await t.run("click the login button in the browser", fake([]));
    expect(first.activeTools).toEqual(["read", "bash", "edit", "write", "browser_open", "browser_click", "other_tool"]);
    const same = await t.run("click it again in the browser", fake([]));
    expect(same.activeTools).toBeUndefined();
    const surface = (await t.events()).filter((e) => e.type === "surface");
    expect(surface[0]).toMatchObject({ surfaced: ["browser"], hiddenNamespaces: ["tavily"], changed: true });
    expect(surface[1]).toMatchObject({ changed: false });
  });

  it("matches tools registered later by prefix", async () => {
    const t = await setup();
    await t.run("pdf", fake([]));
    t.register("browser_screenshot");
    expect(t.active()).toContain("browser_screenshot");
    const out = await t.run("pdf again", fake([]));
    expect(out.activeTools).not.toContain("browser_screenshot");
    expect(t.router.hidden.has("browser_screenshot")).toBe(true);
  });

  it("a miss surfaces the namespace at the next turn and is recorded", async () => {
    const t = await setup();
    await t.run("pdf", fake([]));
    const ns = t.router.noteToolResult(
      {
        role: "toolResult",
        toolName: "browser_open",
        isError: true,
        content: [{ type: "text", text: "Tool browser_open not found" }],
      },
      t.config,
      "call_1",
    );
    expect(ns).toBe("browser");
    // even when the classifier is down at that turn
    const out = await t.run("go on", fake([], { fail: () => "fetch failed" }));
    expect(out.activeTools).toContain("browser_open");
    expect(out.activeTools).toContain("browser_click");
    const events = await t.events();
    expect(events.find((e) => e.type === "miss")).toMatchObject({
      tool: "browser_open",
      namespace: "browser",
      toolCallId: "call_1",
    });
    expect(events.filter((e) => e.type === "surface").at(-1)).toMatchObject({ forced: ["browser"] });
  });
});

describe("the routing state", () => {
  it("asks about the latest prompt in its own field, with the earlier conversation beside it", async () => {
    const config: GuardConfig = { ...DEFAULT_CONFIG, telemetry: false };
    const telemetry = new Telemetry({ getConfig: () => config });
    const router = new Router({ getConfig: () => config, telemetry });
    const calls: ClassifierRequest[] = [];
    const out = await router.turn({
      kind: "user",
      prompt: "docker build please",
      skills,
      tools: [],
      active: [],
      history: () => [{ role: "user", text: "hello" }],
      userTurn: 1,
      classify: fake(calls),
    });
    expect(out.section).toContain('name="docker"');
    expect(calls[0]?.state.latest_request).toBe("docker build please");
    expect(calls[0]?.state.earlier_conversation_newest_first).toEqual([{ role: "user", text: "hello" }]);
  });
});

describe("custom-message runs and persistence", () => {
  it("re-applies the same view for a run started by a custom message, and restores from a snapshot", async () => {
    const t = await setup();
    const first = await t.run("pdf", fake([]));
    // A run started by a custom message, with the tools active after the first run.
    const customRun = (router: typeof t.router) =>
      router.turn({
        kind: "custom",
        skills,
        tools: TOOLS.map((name) => ({ name })),
        active: t.active(),
        history: () => [],
        userTurn: 1,
      });
    const custom = await customRun(t.router);
    expect(custom.section).toBe(first.section);
    expect(custom.changed).toBe(false);
    const snap = t.router.snapshot();
    const t2 = await setup();
    t2.router.restore(snap);
    const restored = await customRun(t2.router);
    expect(restored.section).toBe(first.section);
    expect(restored.catalog).toEqual(first.catalog);
  });
});

describe("the routing footer", () => {
  it("shows nothing when no skill is installed and no namespace has tools", async () => {
    const t = await setup({ toolNamespaces: {} });
    await t.run("pdf", fake([]), { skills: [] });
    expect(t.router.statusText(t.config)).toBeUndefined();
  });

  it("shows only the namespaces when no skill is installed", async () => {
    const t = await setup();
    await t.run("a browser click", fake([]), { skills: [] });
    expect(t.router.statusText(t.config)).toBe("🧭 1/2 ns");
  });

  it("shows nothing while the guard is off, and no stale `static` once it is back on", async () => {
    const t = await setup();
    await t.run("pdf work", fake([]));
    expect(t.router.statusText(t.config)).toMatch(/^🧭 \d+ skills? · \d\/2 ns$/);
    const settings = t.config as { enabled: boolean };
    settings.enabled = false;
    await t.run("anything", fake([]));
    expect(t.router.statusText(t.config)).toBeUndefined();
    settings.enabled = true;
    expect(t.router.statusText(t.config)).toBe("🧭 all skills");
    await t.run("pdf again", fake([]));
    expect(t.router.statusText(t.config)).toMatch(/^🧭 \d+ skills? · \d\/2 ns$/);
  });

  it("says why it is static, in the words README lists", async () => {
    const t = await setup();
    await t.run("pdf", undefined);
    expect(t.router.statusText(t.config)).toBe("🧭 static (no classifier)");
  });
});

describe("routing in /guard", () => {
  it("counts every batch's classifier requests", async () => {
    const t = await setup();
    await t.run("split report.pdf", fake([]));
    expect(t.router.usage.requests).toBeGreaterThan(0);
    expect(t.router.usage.inputTokens).toBe(t.router.usage.requests * 100);
    expect([...t.router.loaded.keys()]).toEqual(["pdf-tools"]);
  });
});
