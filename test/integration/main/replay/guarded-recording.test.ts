// A session recorded with the guard on: its usage describes the guarded prompts. Its guard-off arm must be
// the session without the guard's edits, priced as the provider bills such prompts, not the guarded bill;
// and the live figure (footer, /guard) must be the real difference of the two bills. Both recordings are
// billed by one scripted provider (test/kit/billing.ts) from the same replayed branch, with and without
// its context_edit entries.
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
import { loadPriceBook, type PriceBook } from "../../../../src/main/replay/prices.ts";
import { BranchLedger } from "../../../../src/main/session/live-savings.ts";
import { rebill } from "../../../kit/billing.ts";

const FIXTURE = join(import.meta.dirname, "../../../fixtures/sessions/badlogic__pi-mono__large-session.jsonl");
const classifier = { ref: LOCAL_MODEL_REF, note: LOCAL_NOTE, classify: localClassify() };

let runner: TaskRunner;
let prices: PriceBook;
let dir: string;
/** The fixture replayed once: its branch with the guard's edits. */
let guarded: string;
beforeAll(async () => {
  runner = await createTaskRunner({ backend: "piscina", minThreads: 1, maxThreads: 1 });
  const book = await loadPriceBook();
  prices = { model: book.model };
  dir = await mkdtemp(join(tmpdir(), "cg-guarded-"));
  guarded = join(dir, "guarded.jsonl");
  await replayFiles([FIXTURE], { classifier, config: DEFAULT_CONFIG, runner, prices, write: guarded });
});
afterAll(async () => {
  await runner.destroy();
});

async function replay(path: string): Promise<SessionMetrics> {
  const result = await replayFiles([path], { classifier, config: DEFAULT_CONFIG, runner, prices });
  return result.report.sessions[0] as SessionMetrics;
}

const within = (x: number, target: number, share: number) => Math.abs(x - target) <= share * Math.abs(target);

describe.each([
  [
    "explicit (Anthropic-like)",
    "anthropic",
    { api: "anthropic-messages", provider: "anthropic", model: "claude-sonnet-4-5" },
  ],
  ["automatic (OpenAI-like)", "openai", { api: "openai-responses", provider: "openai", model: "gpt-5.1" }],
] as const)("a session recorded with the guard on, %s", (_name, family, model) => {
  it("replays guard off within 10% of its unguarded recording, and live shows the real saving", async () => {
    const offFile = join(dir, `${family}-off.jsonl`);
    const onFile = join(dir, `${family}-on.jsonl`);
    const offBill = await rebill(guarded, offFile, family, { dropEdits: true, model });
    const onBill = await rebill(guarded, onFile, family, { model });
    expect(offBill.dollars).toBeGreaterThan(onBill.dollars);

    const fromOriginal = (await replay(offFile)).money;
    const fromGuarded = (await replay(onFile)).money;
    expect(within(fromOriginal?.off.dollars ?? 0, offBill.dollars, 0.02)).toBe(true);
    // Before the fix this arm was the guarded bill: fitted to the guarded prompts.
    expect(within(fromGuarded?.off.dollars ?? 0, fromOriginal?.off.dollars ?? 0, 0.1)).toBe(true);
    expect(within(fromGuarded?.off.dollars ?? 0, offBill.dollars, 0.1)).toBe(true);
    // Fitted only on the requests before the first edit reached the recorded prompt.
    const fit = fromGuarded?.fit;
    expect(fit?.firstEdited).toBeGreaterThan(1);
    expect(fit?.requests).toBeLessThan(fit?.of ?? 0);
    expect(fromOriginal?.fit).toMatchObject({ requests: fromOriginal?.fit?.of });
    expect(fromOriginal?.fit?.firstEdited).toBeUndefined();

    // Live: the branch as recorded with the guard on, as Pi opens it.
    const copy = join(dir, `${family}-on.copy.jsonl`);
    await copyFile(onFile, copy);
    const manager = SessionManager.open(copy, dir);
    const input = new BranchLedger().read(manager.getBranch(), prices, (id) => manager.getEntry(id));
    const live = savedSoFar(input.ledger, new Map(input.profiles));
    expect(within(live.off, offBill.dollars, 0.1)).toBe(true);
    expect(within(live.off - live.on, offBill.dollars - onBill.dollars, 0.1)).toBe(true);
  });
});
