import { mkdtemp, readFile, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { aggregateTelemetry, formatTelemetryStats } from "../../../../src/core/records/telemetry-stats.ts";
import { DEFAULT_CONFIG, normalizeConfig } from "../../../../src/core/shared/config.ts";
import type { GuardRecord } from "../../../../src/core/shared/types.ts";
import {
  passEvent,
  recordPass,
  Telemetry,
  telemetryPath,
  telemetryStatsReport,
} from "../../../../src/main/platform/telemetry.ts";

const saved = process.env.PI_CODING_AGENT_DIR;
afterEach(() => {
  if (saved === undefined) delete process.env.PI_CODING_AGENT_DIR;
  else process.env.PI_CODING_AGENT_DIR = saved;
});

async function lines(path: string) {
  return (await readFile(path, "utf8"))
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

const record: GuardRecord = {
  v: 1,
  phase: "run-end",
  model: "openrouter/~typesafe/jev-latest",
  savedChars: 28_000,
  requests: 2,
  inputTokens: 9000,
  costUsd: 0.0004,
  ms: 812,
  timedOut: false,
  results: [
    {
      kind: "large",
      entryId: "3f9c2a1b",
      tool: "bash",
      label: "bash `cat secrets.txt`",
      outcome: "distilled",
      reason: "chunks",
      beforeChars: 30_000,
      afterChars: 2000,
      jev: ["kw.15"],
      omitted: ["SECRET LINE"],
    },
  ],
};

describe("Telemetry", () => {
  it("appends one JSON line per event, mode 0600, off the calling tick", async () => {
    const dir = await mkdtemp(join(tmpdir(), "cg-tel-"));
    const path = join(dir, "sub", "t.jsonl");
    const t = new Telemetry({ getConfig: () => ({ telemetry: true, telemetryPath: path }) });
    t.session = "s-1";
    t.record({ type: "pin", skill: "docker" });
    t.record({ type: "miss", tool: "browser_open", namespace: "browser" });
    await expect(stat(path)).rejects.toThrow(); // nothing written synchronously
    await t.flush();
    const got = await lines(path);
    expect(got).toHaveLength(2);
    expect(got[0]).toMatchObject({ v: 1, session: "s-1", type: "pin", skill: "docker" });
    expect(typeof got[0].ts).toBe("string");
    expect((await stat(path)).mode & 0o777).toBe(0o600);
  });

  it("tightens an existing file to 0600 and writes nothing when off", async () => {
    const dir = await mkdtemp(join(tmpdir(), "cg-tel-"));
    const path = join(dir, "t.jsonl");
    await writeFile(path, "", { mode: 0o644 });
    let on = true;
    const t = new Telemetry({ getConfig: () => ({ telemetry: on, telemetryPath: path }) });
    t.record({ type: "pin", skill: "a" });
    await t.flush();
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    on = false;
    t.record({ type: "pin", skill: "b" });
    await t.flush();
    expect(await lines(path)).toHaveLength(1);
  });

  it("reports a write error once and never throws", async () => {
    const errors: string[] = [];
    const dir = await mkdtemp(join(tmpdir(), "cg-tel-"));
    const blocker = join(dir, "file");
    await writeFile(blocker, "x");
    const t = new Telemetry({
      getConfig: () => ({ telemetry: true, telemetryPath: join(blocker, "t.jsonl") }),
      onError: (e) => errors.push(e.message),
    });
    t.record({ type: "pin", skill: "a" });
    t.record({ type: "pin", skill: "b" });
    await t.flush();
    t.record({ type: "pin", skill: "c" });
    await t.flush();
    expect(errors).toHaveLength(1);
  });

  it("defaults to <agentDir>/context-guard-telemetry.jsonl and expands ~/", () => {
    process.env.PI_CODING_AGENT_DIR = "/tmp/agent-x";
    expect(telemetryPath({ telemetryPath: "" })).toBe("/tmp/agent-x/context-guard-telemetry.jsonl");
    expect(telemetryPath({ telemetryPath: "logs/t.jsonl" })).toBe("/tmp/agent-x/logs/t.jsonl");
    expect(telemetryPath({ telemetryPath: "~/t.jsonl" }).endsWith("/t.jsonl")).toBe(true);
    expect(telemetryPath({ telemetryPath: "~/t.jsonl" }).startsWith("~")).toBe(false);
  });

  it("records a distill pass with sizes, ids and costs but no text", async () => {
    const event = passEvent(record);
    expect(event).toMatchObject({ type: "distill", savedChars: 28_000, requests: 2, inputTokens: 9000, ms: 812 });
    expect(event.results[0]).toEqual({
      entryId: "3f9c2a1b",
      kind: "large",
      tool: "bash",
      outcome: "distilled",
      reason: "chunks",
      beforeChars: 30_000,
      afterChars: 2000,
    });
    const json = JSON.stringify(event);
    expect(json).not.toContain("SECRET");
    expect(json).not.toContain("secrets.txt");
    const dir = await mkdtemp(join(tmpdir(), "cg-tel-"));
    const path = join(dir, "t.jsonl");
    const t = new Telemetry({ getConfig: () => ({ telemetry: true, telemetryPath: path }) });
    recordPass(t, record);
    recordPass(undefined, record);
    await t.flush();
    expect(await lines(path)).toHaveLength(1);
  });
});

describe("/guard stats", () => {
  const events = [
    {
      type: "route",
      session: "a",
      mode: "routed",
      source: "fresh",
      ms: 300,
      timedOut: false,
      scores: { docker: 0.9, pdf: 0.1 },
      decay: {},
      loaded: [{ name: "docker", score: 0.9 }],
      evicted: [],
      catalogCharsHidden: 400,
      bodyChars: 900,
      requests: 3,
      inputTokens: 3000,
      costUsd: 0.0001,
    },
    {
      type: "route",
      session: "a",
      mode: "routed",
      source: "late",
      ms: 1500,
      timedOut: true,
      scores: { pdf: 0.2 },
      decay: { docker: 0.1 },
      loaded: [],
      evicted: [{ name: "docker", score: 0.1 }],
      catalogCharsHidden: 600,
      bodyChars: 0,
      requests: 2,
      inputTokens: 2000,
      costUsd: 0.0001,
    },
    { type: "pin", session: "b", skill: "pdf" },
    {
      type: "surface",
      session: "a",
      scores: { browser: 0.1 },
      surfaced: [],
      hiddenNamespaces: ["browser"],
      schemaCharsHidden: 5000,
    },
    { type: "miss", session: "a", tool: "browser_open", namespace: "browser" },
    { type: "distill", session: "a", savedChars: 28000, requests: 2, inputTokens: 9000, costUsd: 0.0004 },
    { type: "degraded", session: "b", class: "failed", action: "static", detail: "http 500" },
  ].map((e) => JSON.stringify(e));

  it("aggregates loads, evictions, pins, scores, misses, savings and cost", () => {
    const s = aggregateTelemetry([...events, "not json", ""]);
    expect(s).toMatchObject({
      lines: 8,
      badLines: 1,
      sessions: 2,
      boundaries: 2,
      routed: 2,
      timedOut: 1,
      lateUsed: 1,
      catalogCharsHidden: 1000,
      schemaCharsHidden: 5000,
      distillSavedChars: 28000,
      requests: 7,
      inputTokens: 14000,
    });
    expect(s.costUsd).toBeCloseTo(0.0006);
    expect(s.skills.get("docker")).toMatchObject({ loads: 1, evictions: 1, scored: 2, maxScore: 0.9 });
    expect(s.skills.get("pdf")).toMatchObject({ pins: 1, scored: 2 });
    expect(s.namespaces.get("browser")).toMatchObject({ hidden: 1, misses: 1, scored: 1 });
    expect(s.misses.get("browser_open")).toBe(1);
    const text = formatTelemetryStats(s, "/x/t.jsonl").join("\n");
    expect(text).toContain("docker: 1 / 1 / 0");
    expect(text).toContain("browser: 0 / 1 · 1");
    expect(text).toContain("browser_open ×1");
    expect(text).toContain("failed (http 500) ×1");
    expect(text).toContain("$0.0006");
  });

  it("reads the file (after flushing what is queued)", async () => {
    const dir = await mkdtemp(join(tmpdir(), "cg-tel-"));
    const path = join(dir, "t.jsonl");
    const config = { ...DEFAULT_CONFIG, telemetryPath: path };
    const t = new Telemetry({ getConfig: () => config });
    expect(await telemetryStatsReport(t, config)).toContain("no telemetry yet");
    t.record({ type: "miss", tool: "browser_open", namespace: "browser" });
    const report = await telemetryStatsReport(t, config);
    expect(report).toContain("browser_open ×1");
    // Nothing routed, hidden or distilled: no line about features that did not run, and no "(s)".
    expect(report).not.toMatch(/skill catalog|tool schemas|distilled|classifier:|\(s\)/);
    expect(report).toContain("1 line, 0 sessions");
  });
});

describe("routing settings", () => {
  it("validates namespaces one by one: an empty one is dropped with a warning", () => {
    const { config, warnings } = normalizeConfig({
      toolNamespaces: {
        browser: { prefix: "browser_" },
        tavily: { prefix: "tavily_", description: "Web search" },
        empty: {},
        mixed: { tools: ["a", "b"] },
        typo: { prefx: "x_" },
      },
      loadThreshold: 0.7,
      topK: 2,
      routingTimeoutMs: 900,
      coreTools: ["my_tool"],
    });
    expect(Object.keys(config.toolNamespaces)).toEqual(["browser", "tavily", "mixed"]);
    expect(warnings.filter((w) => w.startsWith("toolNamespaces.empty:"))).toHaveLength(1);
    expect(warnings.filter((w) => w.startsWith("toolNamespaces.typo:"))).toHaveLength(1);
    expect(config).toMatchObject({ loadThreshold: 0.7, topK: 2, routingTimeoutMs: 900, coreTools: ["my_tool"] });
  });

  it("has the documented defaults", () => {
    expect(DEFAULT_CONFIG).toMatchObject({
      routeSkills: true,
      loadThreshold: 0.6,
      topK: 3,
      decayIntervalTurns: 5,
      decayThreshold: 0.25,
      routingTimeoutMs: 1500,
      toolNamespaces: {},
      telemetry: true,
      telemetryPath: "",
    });
    expect(DEFAULT_CONFIG.coreTools).toEqual(["read", "write", "edit", "bash", "grep", "find", "ls", "recall"]);
    expect(normalizeConfig({ toolNamespaces: "x" }).warnings[0]).toMatch(/^toolNamespaces:/);
  });
});
