// A classifier that stays down, end to end: the circuit breaker in the real Pi, and SIGTERM in the real CLI.
//   - A 40-turn run (each turn a bash call with a large output, a mid-run checkpoint at nearly every turn
//     boundary) against a classifier that hangs costs a few deadlines in all, not one per turn: after a few
//     failed passes the guard stops asking (and says so in the footer).
//   - The same run against HTTP 500 sends a few requests, not one batch per checkpoint.
//   - `pi -p` sent SIGTERM while the run-end pass waits on a hanging classifier (deadline 10 min) exits,
//     and writes no guard record after the signal.
// The assertions count passes and requests from the records; how long a hook held is printed, not asserted.
import { spawn } from "node:child_process";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { JsonObject } from "@earendil-works/pi-ai";
import { afterAll, describe, expect, it } from "vitest";
import { BREAKER_DEFAULTS } from "../../src/core/classifier/breaker.ts";
import { startFakeOpenAI } from "../kit/fake-openai.ts";
import { dropAllPolicy, EXTENSION, faultSession, grepText, logText } from "../kit/fault-session.ts";
import { capturingUi, recordHooks } from "../kit/hook-probe.ts";
import { type LoopbackOptions, startLoopbackClassifier } from "../kit/loopback-classifier.ts";
import { failOnUnhandledRejections } from "../kit/no-unhandled.ts";
import { FAKE_MODEL, inheritedEnv, makeAgentDir, NODE_BIN, PI_BIN, removeAgentDir } from "../kit/pi-agent-dir.ts";
import type { FauxResponse } from "../kit/sdk-session.ts";

/** The deadline of the hanging run (the fault is about time). */
const T = 1500;
/** The deadline where the fault answers at once (as in the fault matrix). */
const ROOMY = 60_000;
const TURNS = 40;

const call = (command: string): FauxResponse => ({
  toolCalls: [{ name: "bash", arguments: { command } as JsonObject }],
});

const files = Object.fromEntries(Array.from({ length: TURNS }, (_, i) => [`l${i}.txt`, logText(8, `l${i}`)]));
/** As the matrix's mid-run cells: every output is old enough and large enough for a checkpoint at once. */
const midRunConfig = {
  midRunBatchChars: 5000,
  midRunMinAgeTurns: 1,
  midRunBreakEven: false,
  pruneExchanges: false,
  smallResultMinChars: 0,
};

interface LongRun {
  /** Time the guard held turn_end, summed over the run. */
  turnEndMs: number;
  /** The longest single guard hook (turn_end or agent_before_settle). */
  maxHookMs: number;
  turnEnds: number;
  /** Main-model requests: every turn ran. */
  modelCalls: number;
  requests: number;
  edits: number;
  /** Items kept, with their reasons, over every record of the run. */
  kept: string[];
  /** Passes whose record says they waited out the deadline. */
  timedOutPasses: number;
  /** Items not kept. */
  judged: number;
  statuses: string[];
  notices: string[];
}

const timings = recordHooks();
afterAll(() => timings.stop());
failOnUnhandledRejections();

/** One 40-turn run with the server doing `set` from the start. */
async function longRun(timeoutMs: number, set: Partial<LoopbackOptions>): Promise<LongRun> {
  const responses = [...Array.from({ length: TURNS }, (_, i) => call(`cat l${i}.txt`)), "All steps ok."];
  const s = await faultSession({ config: { timeoutMs, ...midRunConfig }, responses, files });
  const { ui, notices, statuses } = capturingUi();
  s.session.extensionRunner.setUIContext(ui, "tui");
  try {
    s.classifier.set(set);
    await s.session.prompt("Check every step log");
    const hooks = timings.durations(s.id).filter((h) => h.event === "turn_end" || h.event === "agent_before_settle");
    const turnEnd = hooks.filter((h) => h.event === "turn_end");
    const results = s.records().flatMap((r) => r.results);
    return {
      turnEndMs: turnEnd.reduce((n, h) => n + h.ms, 0),
      maxHookMs: Math.max(0, ...hooks.map((h) => h.ms)),
      turnEnds: turnEnd.length,
      modelCalls: s.contexts.length,
      requests: s.classifier.requests.length,
      edits: s.edits().length,
      kept: results.filter((r) => r.outcome === "kept").map((r) => r.reason),
      timedOutPasses: s.records().filter((r) => r.timedOut).length,
      judged: results.filter((r) => r.outcome !== "kept").length,
      statuses: [...statuses],
      notices: notices.map((n) => n.message),
    };
  } finally {
    await s.close();
  }
}

let healthyRun: Promise<LongRun> | undefined;
/**
 * The same run with the server answering: once, shared by the cells that compare with it. Its deadline is
 * roomy so that a loaded machine cannot turn its passes into timeouts (and open the breaker).
 */
const healthy = () => {
  healthyRun ??= longRun(ROOMY, { behaviour: "answer" });
  return healthyRun;
};

const summary = (r: LongRun) =>
  `turn_end ${Math.round(r.turnEndMs)} ms over ${r.turnEnds} turns, ${r.requests} requests, ${r.edits} edits`;

describe.concurrent("a classifier down for a whole 40-turn run", () => {
  it("the same run, healthy, checkpoints along the way", { timeout: 180_000 }, async ({ expect }) => {
    const run = await healthy();
    console.log(`healthy: ${summary(run)}`);
    expect(run.modelCalls).toBe(TURNS + 1);
    expect(run.turnEnds).toBeGreaterThanOrEqual(TURNS);
    expect(run.edits).toBeGreaterThan(TURNS / 2);
    expect(run.requests).toBeGreaterThan(0);
  });

  it("hanging (deadline 1.5 s): a few deadlines in all, not one per turn", { timeout: 180_000 }, async ({ expect }) => {
    const [run, base] = await Promise.all([longRun(T, { behaviour: "hang" }), healthy()]);
    console.log(`hang: ${summary(run)}; healthy: ${summary(base)}`);
    expect(run.modelCalls).toBe(TURNS + 1);
    // Nothing edited; the passes that asked say they timed out.
    expect(run.edits).toBe(0);
    expect(run.judged).toBe(0);
    expect(
      run.kept.some((r) => r.split(",").includes("timeout")),
      JSON.stringify(run.kept),
    ).toBe(true);
    // Without a breaker each of the ~39 checkpoints waits out the deadline. With it, the passes that open it
    // do, then one probe per pause (30 s, then 60 s: a slow machine may reach one or two of them).
    expect(run.timedOutPasses, JSON.stringify(run.kept)).toBeGreaterThanOrEqual(BREAKER_DEFAULTS.failuresToOpen);
    expect(run.timedOutPasses, JSON.stringify(run.kept)).toBeLessThanOrEqual(BREAKER_DEFAULTS.failuresToOpen + 2);
    // The footer says the guard stopped asking.
    expect(
      run.statuses.some((t) => /classifier/i.test(t) && /paus/i.test(t)),
      JSON.stringify(run.statuses),
    ).toBe(true);
  });

  it("HTTP 500: far fewer requests than one batch per checkpoint", { timeout: 180_000 }, async ({ expect }) => {
    const [run, base] = await Promise.all([longRun(ROOMY, { behaviour: "error500" }), healthy()]);
    console.log(`HTTP 500: ${summary(run)}; healthy: ${summary(base)}`);
    expect(run.modelCalls).toBe(TURNS + 1);
    expect(run.edits).toBe(0);
    expect(run.judged).toBe(0);
    expect(
      run.kept.some((r) => r.split(",").includes("error")),
      JSON.stringify(run.kept),
    ).toBe(true);
    // Without a breaker every checkpoint re-asks every output kept so far (and retries): over 1,000 requests.
    expect(run.requests, `${run.requests} requests (healthy ${base.requests})`).toBeLessThanOrEqual(3 * base.requests);
    expect(
      run.statuses.some((t) => /classifier/i.test(t) && /paus/i.test(t)),
      JSON.stringify(run.statuses),
    ).toBe(true);
  });
});

// ------------------------------------------------------------------------------------------------------------
// SIGTERM in the real CLI while the run-end pass waits on a hanging classifier.

/** The environment of a CLI run: none of the caller's Pi setup or credentials (as runPiCli). */
function cliEnv(agentDir: string): Record<string, string> {
  return { ...inheritedEnv(), PI_OFFLINE: "1", NO_COLOR: "1", PI_CODING_AGENT_DIR: agentDir };
}

async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries.filter((e) => e.isFile() && e.name.endsWith(".jsonl")).map((e) => join(e.parentPath, e.name));
}

const linesOf = (text: string) => text.split("\n").filter(Boolean);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("SIGTERM during a hanging run-end pass", () => {
  it("pi -p exits within a few seconds and writes no guard record after the signal", async () => {
    const classifier = await startLoopbackClassifier({ behaviour: "hang", policy: dropAllPolicy });
    const main = await startFakeOpenAI((req) =>
      req.messages.some((m: { role: string }) => m.role === "tool")
        ? { text: "In src/a0/handler.ts." }
        : { toolCalls: [{ name: "bash", arguments: { command: "cat a.txt" } }] },
    );
    const cwd = await mkdtemp(join(tmpdir(), "cg-sigterm-cwd-"));
    const sessionDir = join(cwd, "sessions");
    await writeFile(join(cwd, "a.txt"), grepText(24, "a"));
    const agentDir = await makeAgentDir({ mainBaseUrl: main.baseUrl, classifierBaseUrl: classifier.baseUrl });
    const telemetryPath = join(agentDir, "telemetry.jsonl");
    await writeFile(
      join(agentDir, "context-guard.json"),
      JSON.stringify({
        // A deadline far longer than the test: only the signal can end the pass.
        timeoutMs: 600_000,
        midRun: false,
        pruneExchanges: false,
        smallResultMinChars: 0,
        telemetry: true,
        telemetryPath,
      }),
    );
    const child = spawn(
      NODE_BIN,
      [PI_BIN, "-p", "-ne", "--session-dir", sessionDir, "--model", FAKE_MODEL, "-e", EXTENSION, "Where is it?"],
      { cwd, env: cliEnv(agentDir), stdio: ["ignore", "pipe", "pipe"] },
    );
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (d: string) => {
      stderr += d;
    });
    child.stdout.resume();
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>((resolve) =>
      child.on("exit", (code, signal) => resolve({ code, signal, at: performance.now() })),
    );
    try {
      // The run-end pass has started: the classifier holds its request.
      const started = Date.now();
      while (classifier.requests.length === 0) {
        if (Date.now() - started > 45_000) throw new Error(`no classifier request; stderr: ${stderr}`);
        if (child.exitCode !== null) throw new Error(`pi exited (${child.exitCode}) before the pass; ${stderr}`);
        await sleep(20);
      }
      await sleep(300); // whatever was written before the pass is flushed by now
      const telemetryBefore = linesOf(await readFile(telemetryPath, "utf8").catch(() => ""));
      const sentAt = performance.now();
      child.kill("SIGTERM");
      // It exits at all: the deadline is 10 min, the test's timeout one.
      const { code, signal, at } = await exited;
      console.log(`SIGTERM → exit in ${Math.round(at - sentAt)} ms (code ${code}, signal ${signal})`);

      // Nothing written after the signal: no record, no edit, no telemetry line.
      const telemetry = linesOf(await readFile(telemetryPath, "utf8").catch(() => ""));
      expect(telemetry.slice(telemetryBefore.length)).toEqual([]);
      const entries = (
        await Promise.all((await filesUnder(sessionDir)).map(async (f) => linesOf(await readFile(f, "utf8"))))
      )
        .flat()
        .map((l) => JSON.parse(l) as { type: string; customType?: string });
      const guard = entries.filter((e) => e.type === "context_edit" || e.customType === "context-guard");
      expect(guard).toEqual([]);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await exited;
      await classifier.close();
      await main.close();
      await removeAgentDir(agentDir);
      await rm(cwd, { recursive: true, force: true });
    }
  });
});
