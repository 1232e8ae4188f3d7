// SessionGuard, the one object per Pi session, driven as src/main/index.ts drives it: inline pools, a
// recorded HTTP bridge and exit watch, a scripted classifier, and a fake Pi context on a generated
// session. Checks the order of start and shutdown, that routing runs on the same lifecycle, and that a
// shutdown stops a pass in flight and closes the pools.
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { DEFAULT_CONFIG, type GuardConfig } from "../../../../src/core/shared/config.ts";
import type { ClassifierOutcome } from "../../../../src/core/shared/types.ts";
import type { ClassifyFn } from "../../../../src/main/pass/classify-queue.ts";
import { createTaskRunner, type TaskRunner } from "../../../../src/main/platform/pool.ts";
import { ROUTING_ENTRY, type RoutingSnapshot } from "../../../../src/main/routing/routing-shapes.ts";
import { settleBoundary } from "../../../../src/main/session/boundary-shape.ts";
import { runGuardCommand } from "../../../../src/main/session/guard-command.ts";
import { SessionGuard } from "../../../../src/main/session/session-guard.ts";
import { generateSession, toProjection } from "../../../kit/generate.ts";

/** What happened, in order, across the session's parts. */
let log: string[] = [];
afterEach(() => {
  log = [];
});

async function runner(name: string): Promise<TaskRunner> {
  const inner = await createTaskRunner({ backend: "inline" });
  return {
    backend: inner.backend,
    run: (task, input, options) => inner.run(task, input, options),
    destroy: async () => {
      log.push(`${name}-destroyed`);
      await inner.destroy();
    },
  };
}

const entries = generateSession({ entries: 120, seed: 3 });
const projection = toProjection(entries);

interface Fake {
  ctx: never;
  statuses: Array<[string, string | undefined]>;
  notices: string[];
  branch: unknown[];
}

function fakeCtx(branch: unknown[] = entries): Fake {
  const statuses: Array<[string, string | undefined]> = [];
  const notices: string[] = [];
  const ctx = {
    hasUI: true,
    mode: "tui",
    ui: {
      notify: (message: string) => notices.push(message),
      setStatus: (key: string, text: string | undefined) => statuses.push([key, text]),
      setWorkingMessage: () => {},
      theme: { fg: (_colour: string, text: string) => text },
    },
    model: undefined,
    modelRegistry: { findOfType: () => undefined, getProviderAuthStatus: () => ({ configured: false }) },
    sessionManager: {
      buildSessionProjection: () => ({ entries: projection }),
      getBranch: () => branch,
      getSessionId: () => "host-session-test",
      getLeafId: () => "leaf",
      getEntry: (id: string) => entries.find((e) => e.id === id),
      getLeafEntry: () => branch.at(-1),
    },
  };
  return { ctx: ctx as never, statuses, notices, branch };
}

/** Pi's tool API as routing uses it. */
function fakePi(tools: string[]) {
  let active = [...tools];
  const appended: Array<{ type: string; data: unknown }> = [];
  return {
    appended,
    active: () => active,
    api: {
      getAllTools: () => tools.map((name) => ({ name })),
      getActiveTools: () => active,
      setActiveTools: (names: string[]) => {
        active = names;
      },
      appendEntry: (type: string, data: unknown) => appended.push({ type, data }),
    } as never,
  };
}

async function open(
  options: { config?: Partial<GuardConfig>; classify?: ClassifyFn; tools?: string[]; settingsPath?: string } = {},
) {
  const pi = fakePi(options.tools ?? ["read", "bash"]);
  // The run end waits for its pass whole unless a test sets a budget.
  const config: GuardConfig = {
    ...DEFAULT_CONFIG,
    model: "local/lexical",
    telemetry: false,
    settleBudgetMs: 600_000,
    ...options.config,
  };
  const session = new SessionGuard({
    settings: { config, warnings: [], path: options.settingsPath ?? "/nowhere/context-guard.json" },
    passRunner: await runner("pass-pool"),
    recallRunner: await runner("recall-pool"),
    http: {
      fetch: globalThis.fetch,
      start: () => log.push("http-started"),
      close: async () => {
        log.push("http-closed");
      },
    },
    pi: pi.api,
    ...(options.classify ? { classify: () => options.classify as ClassifyFn } : {}),
    watchExit: () => {
      log.push("signals-watched");
      return () => log.push("signals-unwatched");
    },
  });
  return { session, pi };
}

/** A guard started on the default fake context, as Pi's session_start does. */
async function started(options: Parameters<typeof open>[0] = {}) {
  const opened = await open(options);
  const fake = fakeCtx();
  opened.session.start(fake.ctx);
  return { ...opened, fake };
}

const settle = { entries: [], context: { contextEntries: projection } };
const turn = { ...settle, toolResults: [{}] };
/** The guard's records among a boundary's drafts. */
const records = (out: { entries: unknown[] } | undefined) =>
  (out?.entries ?? []).filter((e) => (e as { customType?: string }).customType === "context-guard") as Array<{
    data: { phase: string; requests: number; results: Array<{ entryId: string; outcome: string; reason: string }> };
  }>;
const until = async (done: () => boolean) => {
  while (!done()) await new Promise((r) => setTimeout(r, 2));
};
const neutral: ClassifyFn = async () => ({ status: "stop", answers: {} }) satisfies ClassifierOutcome;
/** Says no to every question. */
const unlikely: ClassifyFn = async (request) => ({
  status: "stop",
  answers: Object.fromEntries(Object.keys(request.questions).map((id) => [id, { type: "bool", probability: 0.05 }])),
});

/**
 * Answers the first `atOnce` requests and holds the others until `release`; counts what it was asked and
 * which held requests were stopped.
 */
function held(atOnce = 0) {
  const asked: string[] = [];
  const stopped: string[] = [];
  let release!: () => void;
  const released = new Promise<void>((r) => {
    release = r;
  });
  const classify: ClassifyFn = async (request, { signal }) => {
    asked.push(JSON.stringify(request.state));
    if (asked.length > atOnce) {
      await Promise.race([released, new Promise((r) => signal.addEventListener("abort", r, { once: true }))]);
      if (signal.aborted) {
        stopped.push(JSON.stringify(request.state));
        return { status: "aborted" };
      }
    }
    return unlikely(request, { signal, timeoutMs: 1000 });
  };
  return { classify, asked, stopped, release: () => release() };
}

describe("SessionGuard: start and shutdown", () => {
  it("starts the exit watch, the footer and routing; shuts down stop first, then pools, thread and watch", async () => {
    const { session, fake } = await started({ classify: neutral });
    expect(log).toEqual(["signals-watched"]);
    // No skill or namespace has been seen yet: routing has no footer to draw.
    expect(fake.statuses.map(([key]) => key)).toEqual(["context-guard"]);
    expect(session.telemetry.session).toBe("host-session-test");
    await session.shutdown();
    expect(session.closed).toBe(true);
    expect(log.slice(1, 2)).toEqual(["signals-unwatched"]);
    expect(log.slice(2).sort()).toEqual(["http-closed", "pass-pool-destroyed", "recall-pool-destroyed"]);
    // Closed: nothing runs or draws any more.
    expect(await session.boundary.pass("run-end", settle, fake.ctx)).toBeUndefined();
    const drawn = fake.statuses.length;
    session.draw(fake.ctx);
    expect(fake.statuses).toHaveLength(drawn);
  });

  it("boots the HTTP thread at a run start only for a remote classifier", async () => {
    const { session, fake } = await started();
    // local/lexical needs no HTTP.
    session.runStarted(fake.ctx);
    expect(log).not.toContain("http-started");
    await session.shutdown();
  });
});

describe("SessionGuard: a pass pool whose threads do not start", () => {
  it("says so and why in the footer and /guard, and once on stderr in print mode", async () => {
    const { session } = await open();
    const failure = new Error("Initiated Worker with invalid execArgv flags: --no-such-flag");
    Object.defineProperty(session.pipeline.runner, "failure", { value: failure });
    const tui = fakeCtx();
    session.start(tui.ctx);
    expect(session.status(tui.ctx)).toEqual({ kind: "no-workers", error: failure.message });
    expect(tui.statuses.at(-1)?.[1]).toMatch(/^🛡 off: worker threads do not start \(Initiated Worker/);
    await runGuardCommand("", tui.ctx, session);
    const report = tui.notices.at(-1) ?? "";
    expect(report).toMatch(/^context-guard is on, but judges nothing/);
    expect(report).toContain("--no-such-flag");
    expect(report).toMatch(/restart\s+Pi/);
    const written: string[] = [];
    const write = process.stderr.write;
    process.stderr.write = ((chunk: string) => written.push(chunk)) as never;
    try {
      const print = fakeCtx();
      Object.assign(print.ctx, { hasUI: false, mode: "print" });
      session.start(print.ctx);
    } finally {
      process.stderr.write = write;
    }
    expect(written.filter((w) => w.includes("worker threads do not start"))).toHaveLength(1);
    await session.shutdown();
  });
});

describe("SessionGuard: routing on the session's lifecycle", () => {
  const snapshot: RoutingSnapshot = {
    v: 1,
    skillsRouted: false,
    toolsRouted: true,
    loaded: [],
    pinned: [],
    surfaced: [],
    hidden: ["browser_open"],
  };
  const routed = (s: RoutingSnapshot) => [...entries, { type: "custom", id: "r1", customType: ROUTING_ENTRY, data: s }];

  it("restores the branch's routing state at start and again when the tree changes", async () => {
    const { session } = await open();
    session.start(fakeCtx(routed(snapshot)).ctx);
    expect(session.routing.router.snapshot()).toMatchObject({ toolsRouted: true, hidden: ["browser_open"] });
    session.treeChanged(fakeCtx(entries).ctx);
    expect(session.routing.router.snapshot()).toMatchObject({ toolsRouted: false });
    await session.shutdown();
  });

  it("routes with the session's config and classifier, and notes a miss at message_end", async () => {
    const tools = ["read", "bash", "browser_open", "browser_click"];
    const { session, pi, fake } = await started({
      classify: unlikely,
      tools,
      config: { toolNamespaces: { browser: { prefix: "browser_" } } },
    });
    const event = {
      type: "before_agent_start",
      messageType: "user",
      prompt: "read the file",
      systemPrompt: "",
      systemPromptOptions: { skills: [], sections: {} },
    };
    await session.route(event as never, fake.ctx);
    // Scored low: the namespace is not surfaced, and its tools are hidden.
    expect(pi.active()).toEqual(["read", "bash"]);
    expect(pi.appended.map((e) => e.type)).toEqual([ROUTING_ENTRY]);
    session.messageEnd(
      {
        role: "toolResult",
        toolName: "browser_open",
        toolCallId: "c1",
        isError: true,
        content: [{ type: "text", text: "Tool browser_open not found" }],
      },
      fake.ctx,
    );
    expect([...session.routing.router.forced]).toEqual(["browser"]);
    await session.shutdown();
  });
  it("aborts routing requests still running past the deadline at shutdown", async () => {
    const hanging: ClassifyFn = (_request, { signal }) =>
      new Promise((resolve) => {
        signal.addEventListener("abort", () => {
          log.push("routing-request-aborted");
          resolve({ status: "error", error: "aborted" });
        });
      });
    const { session, fake } = await started({
      classify: hanging,
      tools: ["read", "browser_open"],
      config: { toolNamespaces: { browser: { prefix: "browser_" } }, routingTimeoutMs: 20, timeoutMs: 600_000 },
    });
    await session.route(
      {
        type: "before_agent_start",
        messageType: "user",
        prompt: "open the page",
        systemPrompt: "",
        systemPromptOptions: { skills: [], sections: {} },
      } as never,
      fake.ctx,
    );
    expect(log).not.toContain("routing-request-aborted");
    await session.shutdown();
    expect(log.indexOf("routing-request-aborted")).toBeLessThan(log.indexOf("pass-pool-destroyed"));
    expect(log).toContain("routing-request-aborted");
  });
});

describe("SessionGuard: a pass", () => {
  it("hands back Pi's drafts with the pass's edits and record", async () => {
    const { session, fake } = await started({ classify: neutral });
    const out = await session.boundary.pass(
      "run-end",
      { entries: [{ type: "custom", customType: "other" }] as never, context: settle.context },
      fake.ctx,
    );
    expect(out?.entries[0]).toEqual({ type: "custom", customType: "other" });
    expect(out?.entries.at(-1)).toMatchObject({ type: "custom", customType: "context-guard" });
    await session.shutdown();
  });

  it("stops at a shutdown while the classifier is being asked, writes nothing, and closes the pools", async () => {
    let asked!: () => void;
    const asking = new Promise<void>((resolve) => {
      asked = resolve;
    });
    // Answers only when the pass is stopped.
    const hanging: ClassifyFn = (_request, { signal }) => {
      asked();
      return new Promise((resolve) => {
        signal.addEventListener("abort", () => {
          log.push("classifier-aborted");
          resolve({ status: "error", error: "aborted" });
        });
      });
    };
    const { session, fake } = await started({ classify: hanging, config: { timeoutMs: 600_000 } });
    const pass = session.boundary.pass("run-end", settle, fake.ctx);
    await asking;
    expect(session.boundary.state.kind).toBe("asking");
    await session.shutdown();
    expect(await pass).toBeUndefined();
    expect(session.boundary.state.kind).toBe("closed");
    // The request was stopped before the pools went away.
    const aborted = log.indexOf("classifier-aborted");
    expect(aborted).toBeGreaterThanOrEqual(0);
    expect(aborted).toBeLessThan(log.indexOf("pass-pool-destroyed"));
    expect(log).toContain("recall-pool-destroyed");
  });
});

describe("SessionGuard: the routing footer follows /guard", () => {
  it("clears with /guard off and comes back with /guard on, in the same command", async () => {
    const settingsPath = join(await mkdtemp(join(tmpdir(), "cg-host-")), "context-guard.json");
    const { session, fake } = await started({ classify: neutral, settingsPath });
    const shown = (key: string) => fake.statuses.filter(([k]) => k === key).at(-1)?.[1];
    // As after a boundary that saw two skills and no answer yet.
    session.routing.router.routable = { skills: 2, namespaces: 0 };
    session.draw(fake.ctx);
    expect(shown("context-guard-routing")).toBe("🧭 all skills");
    await runGuardCommand("off", fake.ctx, session);
    expect(shown("context-guard")).toBe("🛡 guard off");
    expect(shown("context-guard-routing")).toBeUndefined();
    await runGuardCommand("on", fake.ctx, session);
    expect(shown("context-guard-routing")).toBe("🧭 all skills");
    await session.shutdown();
  });
});

describe("SessionGuard: a prompt during the run-end pass", () => {
  const config = { midRun: false, concurrency: 1, timeoutMs: 600_000, exchangeBreakEven: false };

  it("lands what was answered at once, and the rest at a later boundary, asking nothing twice", async () => {
    const slow = held(1);
    const { session, fake } = await started({ classify: slow.classify, config });
    const pass = session.boundary.pass("run-end", settle, fake.ctx);
    await until(() => slow.asked.length >= 2);
    session.input({ text: "next", streamingBehavior: "followUp" }, fake.ctx);
    const firstRecord = records(await pass)[0]?.data;
    const first = firstRecord?.results ?? [];
    const waiting = first.filter((r) => r.reason.includes("aborted"));
    expect(waiting.length).toBeGreaterThan(0);
    expect(first.length).toBeGreaterThan(waiting.length);
    expect(session.status(fake.ctx).kind).toBe("checkpoint");
    // Not finished yet: this boundary lands nothing.
    session.turnStarted(fake.ctx);
    expect(await session.turnEnd(turn, fake.ctx)).toBeUndefined();
    slow.release();
    await until(() => session.status(fake.ctx).kind !== "checkpoint");
    // Answered, not landed: the footer says a pass is pending, not "0 saved".
    expect(session.status(fake.ctx)).toMatchObject({ kind: "ready", pending: true });
    session.draw(fake.ctx);
    expect(fake.statuses.at(-1)?.[1]).toMatch(/pass pending/);
    const landed = await session.turnEnd(turn, fake.ctx);
    expect(session.status(fake.ctx)).toMatchObject({ kind: "ready", pending: false });
    const restRecord = records(landed)[0]?.data;
    const rest = restRecord?.results ?? [];
    expect(rest.map((r) => r.entryId).sort()).toEqual(waiting.map((r) => r.entryId).sort());
    for (const r of rest) expect(r.reason).not.toContain("aborted");
    expect(new Set(slow.asked).size).toBe(slow.asked.length);
    // Each request is counted by one record: the one in flight at the hand-over by the first.
    expect((firstRecord?.requests ?? 0) + (restRecord?.requests ?? 0)).toBe(slow.asked.length);
    // Landed once.
    expect(await session.turnEnd(turn, fake.ctx)).toBeUndefined();
    await session.shutdown();
  });

  it("a shutdown while the rest is asked stops its requests and lands nothing", async () => {
    const slow = held(1);
    const { session, fake } = await started({ classify: slow.classify, config });
    const pass = session.boundary.pass("run-end", settle, fake.ctx);
    await until(() => slow.asked.length >= 2);
    session.input({ text: "next", streamingBehavior: "steer" }, fake.ctx);
    expect(records(await pass)).toHaveLength(1);
    await session.shutdown();
    expect(slow.stopped).toHaveLength(1);
    expect(session.status(fake.ctx).kind).not.toBe("checkpoint");
    expect(await session.turnEnd(turn, fake.ctx)).toBeUndefined();
    expect(fake.notices.filter((n) => n.includes("failed"))).toEqual([]);
  });
});

describe("SessionGuard: nobody waits for a pass", () => {
  /** The run end hands its pass over after a short wait. */
  const handOver = { midRun: false, exchangeBreakEven: false, timeoutMs: 600_000, settleBudgetMs: 20 };
  const messages = () => projection.flatMap((p) => p.messages).filter((m) => m.role !== "system") as never[];

  it("returns from the run end within its budget; the whole pass lands at the next boundary", async () => {
    const slow = held();
    const { session, fake } = await started({ classify: slow.classify, config: handOver });
    // Awaited whole, this would wait for `release`, which comes only after it returns.
    expect(await session.settle(settle, fake.ctx)).toBeUndefined();
    await until(() => slow.asked.length > 0);
    expect(session.status(fake.ctx).kind).toBe("checkpoint");
    // Not finished yet: the next run's boundary lands nothing and starts nothing.
    expect(await session.turnEnd(turn, fake.ctx)).toBeUndefined();
    slow.release();
    await until(() => session.status(fake.ctx).kind !== "checkpoint");
    const [record] = records(await session.turnEnd(turn, fake.ctx));
    expect(record?.data.phase).toBe("run-end");
    expect(record?.data.results.length).toBeGreaterThan(0);
    for (const r of record?.data.results ?? []) expect(r.reason).not.toContain("aborted");
    expect(record?.data.results.some((r) => r.outcome !== "kept")).toBe(true);
    // Nothing asked twice, and the record counts every request.
    expect(new Set(slow.asked).size).toBe(slow.asked.length);
    expect((record?.data as { requests?: number } | undefined)?.requests).toBe(slow.asked.length);
    expect(await session.turnEnd(turn, fake.ctx)).toBeUndefined();
    await session.shutdown();
  });

  it("until a handed-over pass lands, every request carries its drafts as Pi will show them", async () => {
    const slow = held();
    const { session, fake } = await started({ classify: slow.classify, config: handOver });
    expect(await session.settle(settle, fake.ctx)).toBeUndefined();
    // Still asking: requests go as they are.
    expect(session.restoreContext(messages(), fake.ctx)).toBeUndefined();
    slow.release();
    await until(() => session.status(fake.ctx).kind !== "checkpoint");
    const carried = session.restoreContext(messages(), fake.ctx)?.messages as Array<{ content?: unknown }>;
    expect(carried).toBeDefined();
    const [record] = records(await session.turnEnd(turn, fake.ctx));
    const landed = record?.data.results.filter((r) => r.outcome !== "kept");
    expect(landed?.length).toBeGreaterThan(0);
    // What the requests carried is what the landed edits show: each edited target's content, or nothing.
    // (A file read twice the same way shows the same text in a second, unedited output: only unique
    // contents tell.)
    const texts = JSON.stringify(carried);
    const contentOf = (p: (typeof projection)[number]) =>
      JSON.stringify((p.messages[0] as { content?: unknown } | undefined)?.content);
    const unique = (c: string) => projection.filter((p) => contentOf(p) === c).length === 1;
    let checked = 0;
    for (const r of landed ?? []) {
      const original = projection.find((p) => p.sourceEntry.id === r.entryId);
      if (!original || !unique(contentOf(original))) continue;
      checked++;
      expect(texts.includes(contentOf(original))).toBe(false);
    }
    expect(checked).toBeGreaterThan(0);
    // Landed: requests go as they are again (Pi's projection shows the edits from now on).
    expect(session.restoreContext(messages(), fake.ctx)).toBeUndefined();
    await session.shutdown();
  });

  it("a handed-over pass's drafts never reach the requests of a branch the session moved to", async () => {
    const slow = held();
    const { session, fake } = await started({ classify: slow.classify, config: handOver });
    expect(await session.settle(settle, fake.ctx)).toBeUndefined();
    slow.release();
    await until(() => session.status(fake.ctx).kind !== "checkpoint");
    // On the branch it judged, the requests carry its drafts.
    expect(session.restoreContext(messages(), fake.ctx)).toBeDefined();
    // /tree to before the judged run's end: the branch no longer holds the context's last entry.
    const moved = fakeCtx(entries.filter((e) => e.id !== projection.at(-1)?.sourceEntry.id));
    expect(session.restoreContext(messages(), moved.ctx)).toBeUndefined();
    await session.shutdown();
  });

  it("the run's last turn_end does not wait for a checkpoint that asks; it lands later", async () => {
    const slow = held();
    const { session, fake } = await started({
      classify: slow.classify,
      config: {
        midRunMinAgeTurns: 1,
        midRunBatchChars: 0,
        midRunBatchCharsOpenAI: 0,
        midRunBreakEven: false,
        exchangeBreakEven: false,
        timeoutMs: 600_000,
        settleBudgetMs: 20,
      },
    });
    expect(await session.turnEnd(turn, fake.ctx)).toBeUndefined();
    await until(() => slow.asked.length > 0);
    expect(slow.asked.length).toBeGreaterThan(0);
    // The run's last turn and its run end: neither waits for the answers (they come after both).
    expect(await session.turnEnd({ ...settle, toolResults: [] }, fake.ctx)).toBeUndefined();
    expect(await session.settle(settle, fake.ctx)).toBeUndefined();
    slow.release();
    await until(() => session.status(fake.ctx).kind !== "checkpoint");
    const [record] = records(await session.turnEnd(turn, fake.ctx));
    expect(record?.data.phase).toBe("mid-run");
    expect(new Set(slow.asked).size).toBe(slow.asked.length);
    await session.shutdown();
  });
});

describe("SessionGuard: a run end that lands the last run's rest", () => {
  it("also judges its own run, asks nothing twice, edits no entry twice, and leaves nothing to repair", async () => {
    // Holds every request until `release` (or its stop): the first run end hands all of them over.
    const asked: string[] = [];
    let release!: () => void;
    const released = new Promise<void>((r) => {
      release = r;
    });
    const classify: ClassifyFn = async (request, { signal }) => {
      asked.push(JSON.stringify(request.state));
      await Promise.race([released, new Promise((r) => signal.addEventListener("abort", r, { once: true }))]);
      if (signal.aborted) return { status: "aborted" };
      return unlikely(request, { signal, timeoutMs: 1000 });
    };
    const config = { midRun: false, concurrency: 1, timeoutMs: 600_000, exchangeBreakEven: false };
    const { session } = await open({ classify, config });
    const fake = fakeCtx();
    session.start(fake.ctx);
    type Drafts = { entries: Array<{ type: string; customType?: string; targetId?: string; data?: unknown }> };
    const records = (out: Drafts | undefined) =>
      (out?.entries ?? [])
        .filter((e) => e.customType === "context-guard")
        .map((e) => e.data as { results: Array<{ entryId: string; reason: string; omitted?: string[] }> });
    // The generated session's runs end at entries 55 and 119; the second has outputs of its own.
    const firstRun = toProjection(entries.slice(0, 56));
    const pass = session.boundary.pass("run-end", { entries: [], context: { contextEntries: firstRun } }, fake.ctx);
    while (asked.length === 0) await new Promise((r) => setTimeout(r, 2));
    session.input({ text: "next", streamingBehavior: "followUp" }, fake.ctx);
    const waiting = (records((await pass) as Drafts)[0]?.results ?? [])
      .filter((r) => r.reason.includes("aborted"))
      .map((r) => r.entryId);
    expect(waiting.length).toBeGreaterThan(0);
    session.turnStarted(fake.ctx);
    release();
    for (let i = 0; i < 2000 && session.status(fake.ctx).kind === "checkpoint"; i++) {
      await new Promise((r) => setTimeout(r, 2));
    }
    const out = (await session.settle({ entries: [], context: { contextEntries: projection } }, fake.ctx)) as Drafts;
    const [rest, own] = records(out);
    expect(rest?.results.map((r) => r.entryId).sort()).toEqual([...waiting].sort());
    // The second run's outputs got their record here, and none of the landed pass's items.
    const landed = new Set(rest?.results.flatMap((r) => [r.entryId, ...(r.omitted ?? [])]));
    const secondRun = new Set(entries.slice(56).map((e) => e.id));
    expect(own?.results.some((r) => secondRun.has(r.entryId))).toBe(true);
    for (const r of own?.results ?? []) expect(landed.has(r.entryId), r.entryId).toBe(false);
    // Landed first, then the new pass's edits and record.
    const kinds = out.entries.map((e) => e.customType ?? e.type);
    expect(kinds.indexOf("context-guard")).toBeLessThan(kinds.lastIndexOf("context_edit"));
    expect(kinds.at(-1)).toBe("context-guard");
    const targets = out.entries.filter((e) => e.type === "context_edit").map((e) => e.targetId);
    expect(new Set(targets).size).toBe(targets.length);
    expect(new Set(asked).size).toBe(asked.length);
    const settled = settleBoundary({
      context: projection,
      theirs: [],
      judged: out.entries as never,
      restoring: [],
    });
    expect(settled.repairs).toEqual([]);
    expect(settled.dropped).toEqual([]);
    await session.shutdown();
  });
});
