// The quality gate: the real sessions in test/fixtures/sessions replayed with local/lexical and the
// default settings, compared with test/fixtures/quality-baseline.json. It fails, with the numbers, when
// the likely-needed rate rises by more than the recorded margin (the guard removes more of what the
// agent still uses), or falls by more (an improvement to record); and likewise when the money saving with
// the prompt cache (main model and classifier, guard off → on, over the sessions) falls or rises.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { combineProxy, type ProxyRate } from "../../../../src/core/replay/proxy.ts";
import type { ReplayReport } from "../../../../src/core/replay/replay-metrics.ts";
import { DEFAULT_CONFIG, type GuardConfig } from "../../../../src/core/shared/config.ts";
import { localClassify } from "../../../../src/main/pass/classifier.ts";
import { createTaskRunner, type TaskRunner } from "../../../../src/main/platform/pool.ts";
import { LOCAL_NOTE, replayFiles } from "../../../../src/main/replay/command.ts";
import { FIXTURES } from "../../../kit/labelled-removals.ts";

interface Baseline {
  model: string;
  sessions: string[];
  likelyNeeded: { items: number; removed: number; rate: number; margin: number };
  money: { off: number; on: number; classifier: number; saving: number; margin: number };
}

const BASELINE_FILE = join(FIXTURES, "quality-baseline.json");
const baseline = JSON.parse(readFileSync(BASELINE_FILE, "utf8")) as Baseline;
const CONFIG: GuardConfig = { ...DEFAULT_CONFIG, excludeTools: [...DEFAULT_CONFIG.excludeTools] };

let runner: TaskRunner;
let report: ReplayReport;
let proxy: ProxyRate;

beforeAll(async () => {
  runner = await createTaskRunner({ backend: "piscina", minThreads: 1, maxThreads: 1 });
  const paths = baseline.sessions.map((name) => join(FIXTURES, "sessions", name));
  const classifier = { ref: baseline.model, note: LOCAL_NOTE, classify: localClassify() };
  ({ report } = await replayFiles(paths, { classifier, config: CONFIG, runner }));
  proxy = combineProxy(report.sessions.map((s) => s.totals.proxy));
}, 120_000);

afterAll(async () => {
  await runner?.destroy();
});

const pct = (x: number) => `${(x * 100).toFixed(1)}%`;

function numbers(): string {
  const l = proxy.likelyNeeded;
  const per = report.sessions.map(
    (s) => `  ${s.name}: ${s.totals.proxy.likelyNeeded.items} of ${s.totals.proxy.removed} removed items`,
  );
  const b = baseline.likelyNeeded;
  return [
    `likely needed now ${l.items} of ${proxy.removed} removed items (${pct(l.rate)}); baseline ${b.items} of ${b.removed} (${pct(b.rate)}), margin ±${pct(b.margin)}`,
    ...per,
    `to record these figures, set likelyNeeded in ${BASELINE_FILE} to {"items": ${l.items}, "removed": ${proxy.removed}, "rate": ${l.rate.toFixed(4)}}`,
  ].join("\n");
}

/** Dollars over the sessions: main model off and on, the classifier, and the net saving's share of off. */
function dollars() {
  let off = 0;
  let on = 0;
  let classifier = 0;
  for (const s of report.sessions) {
    off += s.dollars?.off ?? 0;
    on += s.dollars?.on ?? 0;
    classifier += s.dollars?.classifier ?? 0;
  }
  return { off, on, classifier, saving: off > 0 ? (off - on - classifier) / off : 0 };
}

function moneyNumbers(): string {
  const d = dollars();
  const b = baseline.money;
  const per = report.sessions.map(
    (s) =>
      `  ${s.name}: $${(s.dollars?.off ?? 0).toFixed(2)} → $${(s.dollars?.on ?? 0).toFixed(2)} + $${(s.dollars?.classifier ?? 0).toFixed(3)}`,
  );
  return [
    `saving now ${pct(d.saving)} ($${d.off.toFixed(2)} → $${d.on.toFixed(2)} + $${d.classifier.toFixed(3)}); baseline ${pct(b.saving)}, margin ±${pct(b.margin)}`,
    ...per,
    `to record these figures, set money in ${BASELINE_FILE} to {"off": ${d.off.toFixed(2)}, "on": ${d.on.toFixed(2)}, "classifier": ${d.classifier.toFixed(3)}, "saving": ${d.saving.toFixed(4)}}`,
  ].join("\n");
}

describe("the quality gate on the real sessions", () => {
  it("replays every recorded session", () => {
    expect(report.failures).toEqual([]);
    expect(report.sessions.map((s) => s.name)).toEqual(baseline.sessions);
  });

  it("keeps the likely-needed rate within the margin of the baseline", () => {
    const { rate, margin } = baseline.likelyNeeded;
    expect(proxy.likelyNeeded.rate, `the likely-needed rate rose\n${numbers()}`).toBeLessThanOrEqual(rate + margin);
    expect(proxy.likelyNeeded.rate, `the likely-needed rate fell: record it\n${numbers()}`).toBeGreaterThanOrEqual(
      rate - margin,
    );
  });

  it("keeps the money saving within the margin of the baseline", () => {
    const { saving, margin } = baseline.money;
    const now = dollars();
    expect(report.sessions.every((s) => s.dollars !== undefined)).toBe(true);
    expect(now.saving, `the money saving fell\n${moneyNumbers()}`).toBeGreaterThanOrEqual(saving - margin);
    expect(now.saving, `the money saving rose: record it\n${moneyNumbers()}`).toBeLessThanOrEqual(saving + margin);
  });
});
