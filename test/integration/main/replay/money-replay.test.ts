// The money view on real sessions: the guard-off arm reproduces each session's recorded usage, prices
// come from Pi's registry, and `--write` produces a guarded session Pi's SessionManager opens with the
// edits in place.
import { mkdtemp, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SessionManager } from "@earendil-works/pi-coding-agent";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LOCAL_MODEL_REF } from "../../../../src/core/classifier/lexical.ts";
import type { SessionMetrics } from "../../../../src/core/replay/replay-metrics.ts";
import { sumMessages } from "../../../../src/core/replay/replay-metrics.ts";
import { DEFAULT_CONFIG } from "../../../../src/core/shared/config.ts";
import { localClassify } from "../../../../src/main/pass/classifier.ts";
import { createTaskRunner, type TaskRunner } from "../../../../src/main/platform/pool.ts";
import { LOCAL_NOTE, ReplayUsageError, replayFiles } from "../../../../src/main/replay/command.ts";
import { loadPriceBook, type PriceBook } from "../../../../src/main/replay/prices.ts";

const REPO_ROOT = join(import.meta.dirname, "../../../..");
const FIXTURES = join(REPO_ROOT, "test", "fixtures", "sessions");
const SAMPLE = join(REPO_ROOT, "bench", "sample", "session.jsonl");
const classifier = { ref: LOCAL_MODEL_REF, note: LOCAL_NOTE, classify: localClassify() };

let runner: TaskRunner;
let prices: PriceBook;
let dir: string;
beforeAll(async () => {
  runner = await createTaskRunner({ backend: "piscina", minThreads: 1, maxThreads: 1 });
  prices = await loadPriceBook();
  dir = await mkdtemp(join(tmpdir(), "cg-money-"));
});
afterAll(async () => {
  await runner.destroy();
});

async function replayOne(path: string, write?: string) {
  const result = await replayFiles([path], {
    classifier,
    config: DEFAULT_CONFIG,
    runner,
    prices,
    ...(write ? { write } : {}),
  });
  return { session: result.report.sessions[0] as SessionMetrics, written: result.written };
}

describe("calibration on the real sessions", () => {
  it("pi-mono (Claude Sonnet 4.5, $30.33 recorded): guard-off dollars and cache split within 1%", async () => {
    const { session } = await replayOne(join(FIXTURES, "badlogic__pi-mono__large-session.jsonl"));
    const m = session.money;
    expect(m?.calibrated).toBe(true);
    expect(m?.models.find((x) => x.requests > 0)).toMatchObject({ family: "anthropic", priceSource: "recorded" });
    expect(m?.recorded?.dollars).toBeCloseTo(30.33, 2);
    expect(Math.abs(m?.error?.dollars ?? 1)).toBeLessThan(0.01);
    expect(Math.abs(m?.error?.cacheRead ?? 1)).toBeLessThan(0.01);
    expect(Math.abs(m?.error?.cacheWrite ?? 1)).toBeLessThan(0.01);
    expect(session.dollars).toMatchObject({ priced: true, off: m?.off.dollars, on: m?.on.dollars });
    expect(m?.cumulative).toHaveLength(session.requests.length);
  });

  it("kimchi (no cache recorded) and trl (Copilot, $0 recorded): tokens calibrated, dollars not meaningful", async () => {
    const kimchi = (await replayOne(join(FIXTURES, "castai__kimchi-dev__session.jsonl"))).session.money;
    expect(kimchi?.models[0]).toMatchObject({ family: "none", priceSource: "free" });
    expect(kimchi).toMatchObject({ priced: false, unpriced: ["kimchi-dev/kimi-k2.5"] });
    expect(Math.abs(kimchi?.error?.input ?? 1)).toBeLessThan(0.01);
    const trl = (await replayOne(join(FIXTURES, "rycerzes__trl__session.jsonl"))).session.money;
    expect(trl?.models.find((x) => x.requests > 0)).toMatchObject({
      family: "anthropic",
      priceSource: "free",
    });
    expect(Math.abs(trl?.error?.cacheRead ?? 1)).toBeLessThan(0.01);
    expect(Math.abs(trl?.error?.cacheWrite ?? 1)).toBeLessThan(0.01);
    expect(trl?.recorded?.dollars).toBe(0);
  });
});

describe("--write", () => {
  it("writes the guarded session, which Pi's SessionManager opens with the guard's edits applied", async () => {
    const out = join(dir, "guarded.jsonl");
    const { session, written } = await replayOne(SAMPLE, out);
    expect(written).toBe(out);
    const manager = SessionManager.open(out, dir);
    const entries = manager.getEntries();
    const edits = entries.filter((e) => e.type === "context_edit");
    expect(edits).toHaveLength(session.totals.drafts);
    expect(entries.filter((e) => e.type === "custom")).toHaveLength(
      session.passes.filter((p) => p.status === "done").length,
    );
    // Pi resumes the whole guarded branch, and its context carries the edits (the last pass's too).
    expect(manager.getBranch()).toHaveLength(entries.length);
    expect(entries.length).toBe(
      session.entries + edits.length + session.passes.filter((p) => p.status === "done").length,
    );
    const last = session.requests.at(-1);
    const context = sumMessages(manager.buildSessionProjection().messages);
    expect(context).toBeLessThan(last?.off ?? 0);
    expect(context).toBeLessThanOrEqual(last?.on ?? 0);
    const header = JSON.parse((await readFile(out, "utf8")).split("\n")[0] as string);
    expect(header).toMatchObject({ type: "session", version: 3 });
  });

  it("a v1 session is written in the current format", async () => {
    const out = join(dir, "v1.jsonl");
    await replayOne(join(FIXTURES, "badlogic__pi-mono__large-session.jsonl"), out);
    const manager = SessionManager.open(out, dir);
    expect(manager.getEntries().every((e) => typeof e.id === "string")).toBe(true);
    expect(manager.getEntries().some((e) => e.type === "context_edit")).toBe(true);
  });

  it("refuses more than one session", async () => {
    await expect(
      replayFiles([SAMPLE, SAMPLE], {
        classifier,
        config: DEFAULT_CONFIG,
        runner,
        prices,
        write: join(dir, "x.jsonl"),
      }),
    ).rejects.toThrow(ReplayUsageError);
  });
});
