// Routing's dollars on a real session are pruning's: with nothing to route, routing's guard-off arm is the
// money view's guard-off arm to the cent (the same learned prices, cache behaviour and calibration); with a
// catalog the guard-off arm is that plus the catalog, and the headline (terminal, JSON, HTML) carries
// routing's dollars beside pruning's.
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LOCAL_MODEL_REF } from "../../../../src/core/classifier/lexical.ts";
import type { SessionMetrics } from "../../../../src/core/replay/replay-metrics.ts";
import { DEFAULT_CONFIG } from "../../../../src/core/shared/config.ts";
import { localClassify } from "../../../../src/main/pass/classifier.ts";
import { createTaskRunner, type TaskRunner } from "../../../../src/main/platform/pool.ts";
import { LOCAL_NOTE, replayFiles } from "../../../../src/main/replay/command.ts";
import { loadPriceBook, type PriceBook } from "../../../../src/main/replay/prices.ts";
import { readSessionFile } from "../../../../src/main/replay/reader.ts";
import { renderHtml } from "../../../../src/main/replay/report-html.ts";
import { loadRoutingCatalog, type RoutingCatalog } from "../../../../src/main/replay/routing-catalog.ts";
import { replayRouting } from "../../../../src/main/replay/routing-replay.ts";
import { formatSummary } from "../../../../src/main/replay/summary.ts";

const REPO_ROOT = join(import.meta.dirname, "../../../..");
const SESSION = join(REPO_ROOT, "test", "fixtures", "sessions", "badlogic__pi-mono__large-session.jsonl");
const classifier = { ref: LOCAL_MODEL_REF, note: LOCAL_NOTE, classify: localClassify() };
const EMPTY: RoutingCatalog = { skills: [], tools: [], namespaces: {}, source: "test", rejected: [] };

let runner: TaskRunner;
let prices: PriceBook;
let session: SessionMetrics;
let report: Awaited<ReturnType<typeof replayFiles>>["report"];
beforeAll(async () => {
  runner = await createTaskRunner({ backend: "piscina", minThreads: 1, maxThreads: 1 });
  prices = await loadPriceBook();
  const result = await replayFiles([SESSION], { classifier, config: DEFAULT_CONFIG, runner, prices, routing: EMPTY });
  report = result.report;
  session = report.sessions[0] as SessionMetrics;
}, 300_000);
afterAll(async () => runner?.destroy());

describe("routing priced as pruning", () => {
  it("with nothing to route, routing's guard-off arm is pruning's guard-off arm", () => {
    const m = session.money;
    const r = session.routing?.money;
    expect(m?.priced).toBe(true);
    expect(m?.off.dollars).toBeGreaterThan(1);
    expect(r?.off).toBeCloseTo(m?.off.dollars ?? 0, 9);
    expect(r?.on).toBeCloseTo(r?.off ?? 1, 9);
    expect(session.dollars?.routing).toMatchObject({ off: r?.off, on: r?.on });
  });

  it("a catalog is priced on top, and the headline shows routing's dollars beside pruning's", async () => {
    const catalog = await loadRoutingCatalog({
      skillsDir: join(REPO_ROOT, "bench", "skills"),
      toolsFile: join(REPO_ROOT, "bench", "routing-tools.json"),
      agentDir: await mkdtemp(join(tmpdir(), "cg-routing-money-")),
      cwd: REPO_ROOT,
      config: DEFAULT_CONFIG,
    });
    const file = await readSessionFile(SESSION);
    const routed = await replayRouting(file, {
      catalog: catalog as RoutingCatalog,
      classify: classifier.classify,
      config: DEFAULT_CONFIG,
      prices,
      ...(session.money ? { money: session.money } : {}),
    });
    const off = session.money?.off.dollars ?? 0;
    // The catalog and the tool schemas ride on every request: more than the session alone, never less.
    expect(routed.money.off).toBeGreaterThan(off);
    expect(routed.money.off - routed.money.on).toBeCloseTo(routed.money.net, 9);
    const m = routed.money;
    const withCatalog: SessionMetrics = {
      ...session,
      routing: routed,
      ...(session.dollars
        ? {
            dollars: {
              ...session.dollars,
              routing: { off: m.off, on: m.on, classifier: m.classifier, net: m.netAfterClassifier },
            },
          }
        : {}),
    };
    const text = formatSummary({ ...report, sessions: [withCatalog] });
    expect(text).toMatch(/^ {2}dollars .*\n {2}routing dollars {3}\$[\d.]+ → \$[\d.]+ main model \(skill routing/m);
    expect(renderHtml({ report: { ...report, sessions: [withCatalog] }, lines: [] })).toContain("Routing: $");
  });
});
