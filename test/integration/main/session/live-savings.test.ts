// The live dollars (footer and /guard) against the replay: the replay's guarded branch, written with
// `--write` and read back as Pi would open it, priced by the live path, gives the dollars of the replay of
// that same file as recorded (no pass of its own): both take its usage as the guarded prompts' and its
// guard-off arm as the branch without its edits.
import { copyFile, mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SessionManager } from "@earendil-works/pi-coding-agent";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LOCAL_MODEL_REF } from "../../../../src/core/classifier/lexical.ts";
import type { SessionMetrics } from "../../../../src/core/replay/replay-metrics.ts";
import { savedSoFar } from "../../../../src/core/replay/saved-so-far.ts";
import { DEFAULT_CONFIG } from "../../../../src/core/shared/config.ts";
import { localClassify } from "../../../../src/main/pass/classifier.ts";
import { createTaskRunner, type TaskRunner } from "../../../../src/main/platform/pool.ts";
import { LOCAL_NOTE, replayFiles } from "../../../../src/main/replay/command.ts";
import { replaySession } from "../../../../src/main/replay/driver.ts";
import { loadPriceBook, type PriceBook } from "../../../../src/main/replay/prices.ts";
import { readSessionFile } from "../../../../src/main/replay/reader.ts";
import { BranchLedger, LiveSavings } from "../../../../src/main/session/live-savings.ts";
import type { SavedInput } from "../../../../src/workers/saved/saved-task.ts";

const FIXTURES = join(import.meta.dirname, "../../../fixtures/sessions");
const classifier = { ref: LOCAL_MODEL_REF, note: LOCAL_NOTE, classify: localClassify() };

let runner: TaskRunner;
/** Pi's registry prices without Jev's: the local classifier costs nothing in either path. */
let prices: PriceBook;
let dir: string;
beforeAll(async () => {
  runner = await createTaskRunner({ backend: "piscina", minThreads: 1, maxThreads: 1 });
  const book = await loadPriceBook();
  prices = { model: book.model };
  dir = await mkdtemp(join(tmpdir(), "cg-live-"));
});
afterAll(async () => {
  await runner.destroy();
});

async function guardedBranch(file: string) {
  const out = join(dir, `${file}.guarded.jsonl`);
  const result = await replayFiles([join(FIXTURES, file)], {
    classifier,
    config: DEFAULT_CONFIG,
    runner,
    prices,
    write: out,
  });
  const session = result.report.sessions[0] as SessionMetrics;
  // Pi may rewrite what it opens: a copy.
  const copy = join(dir, `${file}.copy.jsonl`);
  await copyFile(out, copy);
  const manager = SessionManager.open(copy, dir);
  // The written file replayed as recorded: the money the live path must give.
  const recorded = await replaySession(await readSessionFile(out), {
    runner,
    classify: classifier.classify,
    modelRef: classifier.ref,
    config: DEFAULT_CONFIG,
    prices,
    guard: false,
  });
  return { session: { ...session, money: recorded.money } as SessionMetrics, manager };
}

describe("live dollars equal the replay's guard-on vs guard-off on a real session's branch", () => {
  // pi-mono recorded its costs; trl and kimchi billed $0 (a plan): their profiles are free, no dollars.
  for (const [file, paid] of [
    ["badlogic__pi-mono__large-session.jsonl", true],
    ["rycerzes__trl__session.jsonl", false],
    ["castai__kimchi-dev__session.jsonl", false],
  ] as const) {
    it(file, async () => {
      const { session, manager } = await guardedBranch(file);
      const money = session.money;
      expect(money?.priced).toBe(paid);
      expect(session.totals.drafts).toBeGreaterThan(0);
      const branch = manager.getBranch();
      const input = new BranchLedger().read(branch, prices, (id) => manager.getEntry(id));
      const live = savedSoFar(input.ledger, new Map(input.profiles));
      expect(live.requests).toBe(session.requests.length);
      expect(live.priced).toBe(paid);
      // The same profiles as the replay learned, from the same recorded usage.
      for (const m of money?.models ?? []) {
        const profile = new Map(input.profiles).get(m.model);
        expect(profile?.behaviour).toBe(m.behaviour);
        expect(profile?.priceSource).toBe(m.priceSource);
        expect(profile?.ttlMs).toBe(m.ttlMs);
      }
      expect(live.off).toBeCloseTo(money?.off.dollars ?? Number.NaN, 9);
      expect(live.on).toBeCloseTo(money?.on.dollars ?? Number.NaN, 9);
      expect(live.classifier).toBe(0);
      expect(live.net).toBeCloseTo(money?.net ?? Number.NaN, 9);
      if (paid) expect(live.off).toBeGreaterThan(live.on);
      else expect([live.off, live.on]).toEqual([0, 0]);
    });
  }

  it("the pass thread prices it in slices behind any pass, then only what the branch gained", async () => {
    const { session, manager } = await guardedBranch("badlogic__pi-mono__large-session.jsonl");
    const live = new LiveSavings();
    let changed = 0;
    const sent: number[] = [];
    const counting: TaskRunner = {
      backend: runner.backend,
      timesTasks: true,
      run: (name, input, options) => {
        if (name === "saved") {
          sent.push((input as SavedInput).entries.length);
          expect(options).toMatchObject({ background: true });
        }
        return runner.run(name, input, options);
      },
      destroy: () => runner.destroy(),
    };
    const branch = manager.getBranch();
    let upTo = branch.length - 40;
    const host = {
      branch: () => branch.slice(0, upTo),
      lookup: (id: string) => manager.getEntry(id),
      book: () => prices,
      runner: () => counting,
      changed: () => {
        changed++;
      },
    };
    live.refresh(host);
    // A refresh while one runs is not a second pricing of the same entries.
    live.refresh(host);
    await expect.poll(() => live.latest?.requests ?? 0, { timeout: 60_000 }).toBeGreaterThan(0);
    await expect.poll(() => sent.length > 0 && !live.pricing, { timeout: 60_000 }).toBe(true);
    const first = sent.reduce((a, b) => a + b, 0);
    expect(first).toBe(branch.length - 40);
    upTo = branch.length;
    live.refresh(host);
    await expect.poll(() => live.latest?.net, { timeout: 60_000 }).toBeCloseTo(session.money?.net ?? Number.NaN, 9);
    // The second refresh sent the 40 new entries only.
    expect(sent.reduce((a, b) => a + b, 0) - first).toBe(40);
    const count = sent.length;
    live.refresh(host);
    await new Promise((r) => setTimeout(r, 50));
    expect(sent.length).toBe(count);
    expect(changed).toBeGreaterThan(1);
  });
});
