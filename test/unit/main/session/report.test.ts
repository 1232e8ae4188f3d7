// `/guard`'s report: plain words within the width, the classifier problem named once, routing's line where
// the caller gives one, and the dollars (or plainly that the guard has cost more so far).
import { describe, expect, it } from "vitest";
import type { SavedSoFar } from "../../../../src/core/replay/saved-so-far.ts";
import { DEFAULT_CONFIG } from "../../../../src/core/shared/config.ts";
import { RECORD_TYPE } from "../../../../src/core/shared/types.ts";
import { passTime, statusReport, traceReport } from "../../../../src/main/session/report.ts";

const base = {
  config: { ...DEFAULT_CONFIG, model: "openrouter/no-such" },
  savings: { chars: 0, items: 0 },
  branch: [],
  paused: { kind: "closed" } as const,
};
const local = { ok: true, local: true, ref: "local/lexical" } as const;

const saved = (over: Partial<SavedSoFar>): SavedSoFar => ({
  requests: 20,
  priced: true,
  off: 1.2,
  on: 0.8,
  classifier: 0.02,
  net: 0.38,
  tokens: 120_000,
  last: { offTokens: 40_000, onTokens: 30_000, cacheRead: 0.3 },
  ...over,
});

const record = {
  type: "custom",
  customType: RECORD_TYPE,
  id: "r1",
  parentId: null,
  timestamp: new Date(1_000_000).toISOString(),
  data: {
    v: 1,
    phase: "run-end",
    model: "local/lexical",
    savedChars: 51_200,
    requests: 3,
    inputTokens: 9000,
    costUsd: 0.0123,
    ms: 2100,
    timedOut: false,
    results: [
      {
        kind: "large",
        entryId: "e5",
        label: `bash \`rg ${"x".repeat(150)}\``,
        outcome: "distilled",
        reason: "most lines off topic",
        beforeChars: 52_000,
        afterChars: 800,
        jev: ["kw.05 focus=none:.80 keep 0/7"],
      },
      {
        entryId: "e7",
        label: "read a.ts",
        outcome: "kept",
        reason: "needed",
        beforeChars: 9000,
        afterChars: 9000,
        jev: [],
      },
    ],
  },
};

describe("statusReport", () => {
  it("says that nothing is judged, what is missing and how to fix it", () => {
    const lines = statusReport({
      ...base,
      found: { ok: false, problem: "not-found", ref: "openrouter/no-such", provider: "openrouter" },
    }).split("\n");
    expect(lines[0]).toBe("context-guard is on, but judges nothing · classifier openrouter/no-such (not found)");
    const noKey = statusReport({
      ...base,
      found: { ok: false, problem: "no-key", ref: "openrouter/no-such", provider: "openrouter" },
    }).split("\n");
    expect(noKey[0]).toBe(
      "context-guard is on, but judges nothing · classifier openrouter/no-such (no openrouter key)",
    );
    // The TUI has no start notice: the fix is in /guard itself.
    expect(noKey[1]).toMatch(/^Not working: /);
    expect(noKey.join(" ")).toMatch(/Not working: .*no credential for openrouter .*\/login.*local\/lexical/);
    const off = statusReport({
      ...base,
      config: { ...base.config, enabled: false },
      found: { ok: false, problem: "no-key", ref: "openrouter/no-such", provider: "openrouter" },
    });
    expect(off).not.toMatch(/judges nothing|Not working/);
  });

  it("says that the worker threads do not start, and why", () => {
    const text = statusReport({ ...base, found: local, workers: "invalid execArgv flags: --no-such-flag" });
    expect(text.split("\n")[0]).toBe("context-guard is on, but judges nothing · classifier openrouter/no-such");
    expect(text.replace(/\s+/g, " ")).toContain(
      "Not working: its worker threads do not start (invalid execArgv flags: --no-such-flag), so nothing is judged.",
    );
  });

  it("gives a short pass its time in ms, not as 0.0 s", () => {
    expect([0, 0.4, 3, 49, 99.4, 100, 2100].map(passTime)).toEqual([
      "under 1 ms",
      "under 1 ms",
      "3 ms",
      "49 ms",
      "99 ms",
      "0.1 s",
      "2.1 s",
    ]);
    const quick = { ...record, data: { ...record.data, ms: 30 } };
    expect(statusReport({ ...base, found: local, branch: [quick] as never })).toMatch(/kept 1 in 30 ms\./);
  });

  it("says the dollars saved net of the classifier, the projection ahead, and the last pass in one line", () => {
    const text = statusReport({
      ...base,
      found: local,
      savings: { chars: 42_800, items: 1 },
      branch: [record] as never,
      dollars: saved({}),
      now: 1_000_000 + 5 * 60_000,
    });
    expect(text).toContain("Saved so far: $0.380, after the classifier's $0.020 (≈120k prompt tokens not sent).");
    expect(text).toContain("Now: 10.7k tokens kept out of the context (1 item).");
    expect(text).toContain("Ahead: each further request costs ≈$0.0030 less at today's context.");
    expect(text).toContain(
      "Last pass (5 min ago, end of a run): replaced 1 item (51.2k chars kept out), kept 1 in 2.1 s.",
    );
    // No trace jargon and no "(s)" plurals in the status; the traces are /guard trace's.
    expect(text).not.toMatch(/kw\.|focus=|\(s\)|\(ies\)/);
    for (const line of text.split("\n")) expect(line.length).toBeLessThanOrEqual(100);
  });

  it("says plainly when the guard has cost more than it saved so far", () => {
    const text = statusReport({ ...base, found: local, dollars: saved({ net: -0.031, on: 1.21 }) });
    expect(text).toMatch(/So far the guard has cost \$0\.031 more than it saved/);
  });

  it("says what the pass behind the agent does, read from the boundary state", () => {
    const behind = (asking: boolean) =>
      statusReport({
        ...base,
        found: local,
        boundary: { kind: "background", phase: "mid-run", asking, handingOver: false },
      });
    expect(behind(true)).toContain(
      "Waiting: a checkpoint going on behind the agent, asking the classifier, landing at a later boundary.",
    );
    expect(behind(false)).toContain("Waiting: a checkpoint going on behind the agent, landing at a later boundary.");
    expect(statusReport({ ...base, found: local, boundary: { kind: "idle", handingOver: false } })).not.toContain(
      "Waiting",
    );
  });

  it("fits a narrow terminal, and routing's line is kept", () => {
    const text = statusReport({
      ...base,
      found: local,
      dollars: saved({}),
      width: 60,
      routing: "classifier for routing: 2 requests this session, 200 input tokens, $0 · no skill loaded",
    });
    for (const line of text.split("\n")) expect(line.length).toBeLessThanOrEqual(60);
    expect(text.replace(/\n\s*/g, " ")).toContain("classifier for routing: 2 requests");
  });
});

describe("traceReport", () => {
  it("lists the last pass item by item with its traces", () => {
    const text = traceReport([record] as never, 100);
    expect(text).toMatch(/^Last pass \(run-end, 2100 ms\), 2 items:/);
    expect(text).toContain("kw.05 focus=none:.80 keep 0/7");
    expect(traceReport([] as never)).toBe("context-guard: no pass on this branch yet.");
  });
});
