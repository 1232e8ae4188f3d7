// The classifier fault matrix, end to end in the real Pi: every fault of the loopback System One server
// against every pass kind (run end, mid-run checkpoint, whole items). For each cell:
//   1. nothing is edited (the server would judge everything "not needed" if its answers got through),
//   2. every guard hook returns within the deadline plus a margin,
//   3. the record says why each item was kept (timeout / error / no-answer),
//   4. the next pass, with the server answering again, edits (once the breaker's pause is over: see
//      `pastThePause`).
// See docs/reliability.md for the table.
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import {
  getCurrentSystemPrompt,
  getCurrentTools,
  type JsonObject,
  type TranscriptContext,
} from "@earendil-works/pi-ai";
import { afterAll, describe, expect, it } from "vitest";
import { BREAKER_DEFAULTS } from "../../src/core/classifier/breaker.ts";
import type { GuardRecord, RecordResult } from "../../src/core/shared/types.ts";
import { MAX_ANSWER_BYTES } from "../../src/workers/http/http-protocol.ts";
import { faultAgentDir, faultSession, grepText, logText } from "../kit/fault-session.ts";
import { recordHooks } from "../kit/hook-probe.ts";
import type { LoopbackOptions } from "../kit/loopback-classifier.ts";
import { failOnUnhandledRejections } from "../kit/no-unhandled.ts";
import { browserTools, routingPolicy, SKILLS, writeSkills } from "../kit/routing-fixtures.ts";
import type { FauxResponse } from "../kit/sdk-session.ts";

/** The deadline (`timeoutMs`, `routingTimeoutMs`) where the fault is about time: the cell waits it out. */
const T = 1500;
/**
 * The deadline where the fault answers at once (errors, bad bodies): roomy, so that a loaded machine
 * cannot turn the fault into a timeout before its answer is read, which would leave the path untested.
 */
const ROOMY = 10_000;
const deadline = (fault: Fault) => (fault.timing ? T : ROOMY);
/** Correctness bound for a hook: the deadline plus a generous margin (2 noisy cores, concurrent cells). */
const hookBound = (fault: Fault) => deadline(fault) + 3000;
/** The cap on one answer's body, after decompression. */
const ANSWER_CAP = MAX_ANSWER_BYTES;

interface Fault {
  name: string;
  set: Partial<LoopbackOptions>;
  /** Reasons a kept item's record may give. */
  reasons: string[];
  /** The record must say the pass timed out. */
  timedOut?: boolean;
  /** The fault is about time (no answer, or one too slow): the short deadline applies. */
  timing?: boolean;
  /**
   * The server says when to come back (retry-after): the breaker believes it, so after the run's first
   * pass no pass asks (nor records) until then.
   */
  retryAfter?: boolean;
}

const FAULTS: Fault[] = [
  { name: "hang", set: { behaviour: "hang" }, reasons: ["timeout"], timedOut: true, timing: true },
  {
    name: "slow drip of the body",
    set: { behaviour: "drip", dripIntervalMs: 100 },
    reasons: ["timeout", "error"],
    timing: true,
  },
  { name: "connection reset", set: { behaviour: "reset" }, reasons: ["error"] },
  { name: "HTTP 500", set: { behaviour: "error500" }, reasons: ["error"] },
  { name: "HTTP 429, retry-after 120 s", set: { behaviour: "error429" }, reasons: ["error"], retryAfter: true },
  { name: "non-JSON body", set: { behaviour: "malformed" }, reasons: ["error"] },
  { name: "JSON with missing ids", set: { behaviour: "missing-ids" }, reasons: ["error"] },
  { name: "wrong answer types", set: { behaviour: "wrong-types" }, reasons: ["error"] },
  { name: "NaN probabilities", set: { behaviour: "nan", nanValue: "NaN" }, reasons: ["error"] },
  { name: "probability 1.7", set: { behaviour: "nan", nanValue: 1.7 }, reasons: ["no-answer"] },
  { name: "probability -0.25", set: { behaviour: "nan", nanValue: -0.25 }, reasons: ["no-answer"] },
  // Over the answer cap: refused after 4 MiB at most, at once.
  { name: "huge response (16 MB)", set: { behaviour: "huge", hugeBytes: 16 * 1024 * 1024 }, reasons: ["error"] },
  {
    name: "answer after the deadline",
    set: { behaviour: "late", lateMs: T + 400 },
    reasons: ["timeout"],
    timedOut: true,
    timing: true,
  },
  // Answers no Response can hold, written as raw bytes (each with the answers as a small JSON body): a status
  // outside 200-599, a reason phrase the Response constructor refuses. They must fail like a broken server.
  { name: "status 000", set: { behaviour: "raw-status", rawStatus: "000 Zero" }, reasons: ["error"] },
  { name: "status 150 (1xx)", set: { behaviour: "raw-status", rawStatus: "150 Interim" }, reasons: ["error"] },
  { name: "status 600", set: { behaviour: "raw-status", rawStatus: "600 Beyond" }, reasons: ["error"] },
  { name: "status 999", set: { behaviour: "raw-status", rawStatus: "999 Weird" }, reasons: ["error"] },
  {
    name: "reason phrase in UTF-8",
    set: { behaviour: "raw-status", rawStatus: "503 Service indisponible — réessayez" },
    reasons: ["error"],
  },
  // Latin-1 has no em dash: the byte is Windows-1252's (0x97), as a Windows server would send it.
  {
    name: "reason phrase in Latin-1",
    set: { behaviour: "raw-status", rawStatus: Buffer.from("503 Service indisponible \x97 r\xe9essayez", "latin1") },
    reasons: ["error"],
  },
  {
    name: "reason phrase with a control character",
    set: { behaviour: "raw-status", rawStatus: "503 Service\x07 indisponible" },
    reasons: ["error"],
  },
  // Well-formed answers padded past the cap: they would edit if the cap did not hold.
  {
    name: "answer over the cap (4 MiB + 64 KiB)",
    set: { behaviour: "huge", hugeBytes: ANSWER_CAP + 64 * 1024, hugeValid: true },
    reasons: ["error"],
  },
  // Inflating up to the cap is CPU work: on a loaded machine it can outlast even the roomy deadline.
  {
    name: "gzip bomb (1 MB inflating to 1 GiB)",
    set: { behaviour: "gzip-bomb" },
    reasons: ["error", "timeout"],
  },
  { name: "truncated chunked body", set: { behaviour: "truncated-chunked" }, reasons: ["error"] },
];

const call = (command: string): FauxResponse => ({
  toolCalls: [{ name: "bash", arguments: { command } as JsonObject }],
});
/**
 * A tool call the main model takes a while to write: a checkpoint runs in the background while the
 * model works, as in a real run, instead of all of it falling on the run's last turn_end.
 */
const slowCall =
  (command: string, ms = 800): FauxResponse =>
  async () => {
    await sleep(ms);
    return { toolCalls: [{ name: "bash", arguments: { command } as JsonObject }] };
  };

interface Kind {
  name: string;
  config: Record<string, unknown>;
  files: Record<string, string>;
  /** Prompts run before the faulty pass (with the fault already on; they must not judge anything). */
  setup: Array<{ prompt: string; responses: FauxResponse[] }>;
  /** The run whose pass(es) meet the fault. */
  faulty: { prompt: string; responses: FauxResponse[] };
  /** What the faulty pass must have recorded: phases and item kinds. */
  expectPhases: Array<GuardRecord["phase"]>;
  expectKinds: Array<NonNullable<RecordResult["kind"]>>;
  /** The next run, with the classifier answering: it must edit items of these kinds in this phase. */
  next: { prompt: string; responses: FauxResponse[]; phase: GuardRecord["phase"]; kinds: string[] };
}

const KINDS: Kind[] = [
  {
    name: "run end (large outputs)",
    config: { midRun: false, pruneExchanges: false, smallResultMinChars: 0 },
    files: { "a.txt": grepText(24, "a"), "b.txt": grepText(24, "b") },
    setup: [],
    faulty: { prompt: "Where is readStatus used?", responses: [call("cat a.txt"), "In src/a0/handler.ts."] },
    expectPhases: ["run-end"],
    expectKinds: ["large"],
    next: {
      prompt: "And in b?",
      responses: [call("cat b.txt"), "In src/b0/handler.ts."],
      phase: "run-end",
      kinds: ["large"],
    },
  },
  {
    name: "mid-run checkpoint",
    config: {
      midRunBatchChars: 5000,
      midRunMinAgeTurns: 1,
      midRunBreakEven: false,
      pruneExchanges: false,
      smallResultMinChars: 0,
    },
    files: {
      "l0.txt": logText(8, "l0"),
      "l1.txt": logText(8, "l1"),
      "l2.txt": logText(8, "l2"),
      "l3.txt": logText(8, "l3"),
    },
    setup: [],
    faulty: { prompt: "Check the logs", responses: [slowCall("cat l0.txt"), slowCall("cat l1.txt"), "All steps ok."] },
    expectPhases: ["mid-run", "run-end"],
    expectKinds: ["large"],
    next: {
      prompt: "Check the other logs",
      // As in the faulty run, the model takes a while per call: no turn_end waits for a checkpoint, so one
      // that has not planned when the run ends is left to the run end.
      responses: [slowCall("cat l2.txt"), slowCall("cat l3.txt"), "All ok."],
      phase: "mid-run",
      kinds: ["large"],
    },
  },
  {
    name: "whole items (small outputs, old exchanges)",
    config: {
      midRun: false,
      pruneExchanges: true,
      keepRecentExchanges: 0,
      exchangeBreakEven: false,
      smallResultMinChars: 400,
    },
    files: { "s1.txt": logText(1.5, "s1"), "s2.txt": logText(1.5, "s2"), "s3.txt": logText(1.5, "s3") },
    setup: [{ prompt: `Plan the release. ${"Release notes draft line. ".repeat(120)}`, responses: ["Noted."] }],
    faulty: { prompt: "Read the two step logs", responses: [call("cat s1.txt"), call("cat s2.txt"), "Both fine."] },
    expectPhases: ["run-end"],
    expectKinds: ["small", "exchange"],
    next: {
      prompt: "Now the third log",
      responses: [call("cat s3.txt"), "Fine too."],
      phase: "run-end",
      kinds: ["small", "exchange"],
    },
  },
];

const timings = recordHooks();
afterAll(() => timings.stop());
failOnUnhandledRejections();

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * After passes in a row without an answer (a mid-run cell fails a checkpoint and then the run end) the
 * breaker (src/core/classifier/breaker.ts) stops asking for a while, and it believes a retry-after (the 429 cells).
 * Step 4 checks that the guard asks again once that pause is over: it moves the wall clock the breaker
 * reads (Date.now) past the longest pause, instead of waiting it out. Deadlines, timers and hook timings
 * run on the monotonic clock and do not move. In a cell still under its fault, an open breaker then lets
 * a probe through earlier, which fails like any other pass there.
 */
let clockOffset = 0;
const realNow = Date.now;
Date.now = () => realNow.call(Date) + clockOffset;
const pastThePause = () => {
  clockOffset += BREAKER_DEFAULTS.maxMs + 1000;
};
afterAll(() => {
  Date.now = realNow;
});

describe.concurrent.each(KINDS)("classifier faults: $name", (kind) => {
  it.for(FAULTS)("$name", async (fault, { expect }) => {
    const s = await faultSession({
      config: { timeoutMs: deadline(fault), ...kind.config },
      responses: [...kind.setup.flatMap((p) => p.responses), ...kind.faulty.responses],
      files: kind.files,
    });
    try {
      for (const p of kind.setup) await s.session.prompt(p.prompt);
      s.classifier.set(fault.set);
      await s.session.prompt(kind.faulty.prompt);

      // 1. Nothing edited.
      expect(s.edits()).toEqual([]);
      // 2. Every boundary the guard held returned in time.
      const hooks = timings.durations(s.id).filter((h) => h.event === "turn_end" || h.event === "agent_before_settle");
      expect(hooks.length).toBeGreaterThan(0);
      for (const h of hooks) expect(h.ms, `${h.event} took ${Math.round(h.ms)} ms`).toBeLessThan(hookBound(fault));
      // 3. The records say why.
      const records = s.records();
      const phases = fault.retryAfter ? kind.expectPhases.slice(0, 1) : kind.expectPhases;
      expect(new Set(records.map((r) => r.phase))).toEqual(new Set(phases));
      const results = records.flatMap((r) => r.results);
      expect(new Set(results.map((r) => r.kind))).toEqual(new Set(kind.expectKinds));
      for (const r of results) {
        expect(r.outcome, JSON.stringify(r)).toBe("kept");
        for (const reason of r.reason.split(",")) expect(fault.reasons, JSON.stringify(r)).toContain(reason);
      }
      for (const r of records) expect(r.savedChars).toBe(0);
      if (fault.timedOut) expect(records.every((r) => r.timedOut)).toBe(true);
      expect(s.classifier.requests.length).toBeGreaterThan(0);
      if (fault.set.behaviour === "late") {
        // The answers come after the deadline: nothing may change when they arrive.
        const before = s.session.sessionManager.getBranch().length;
        await sleep((fault.set.lateMs ?? 0) + 200);
        expect(s.session.sessionManager.getBranch().length).toBe(before);
        expect(s.edits()).toEqual([]);
      }

      // 4. The next pass works (with a roomy deadline: this checks recovery, not speed).
      s.classifier.set({ behaviour: "answer" });
      pastThePause();
      await s.reconfigure({ timeoutMs: 15_000 });
      s.addResponses(...kind.next.responses);
      const known = records.length;
      await s.session.prompt(kind.next.prompt);
      const fresh = s.records().slice(known);
      const judged = fresh.filter((r) => r.phase === kind.next.phase).flatMap((r) => r.results);
      for (const k of kind.next.kinds) {
        expect(
          judged.some((r) => r.kind === k && r.outcome !== "kept"),
          `${k}: ${JSON.stringify(judged)}`,
        ).toBe(true);
      }
      expect(s.edits().length).toBeGreaterThan(0);
    } finally {
      await s.close();
    }
  });
});

describe("a large but well-formed answer under the cap", () => {
  it("is used like any answer, within the deadline", async () => {
    const s = await faultSession({
      config: { timeoutMs: 4000, midRun: false, pruneExchanges: false, smallResultMinChars: 0 },
      responses: KINDS[0]?.faulty.responses ?? [],
      files: KINDS[0]?.files ?? {},
    });
    try {
      s.classifier.set({ behaviour: "huge", hugeBytes: ANSWER_CAP - 64 * 1024, hugeValid: true });
      await s.session.prompt("Where is readStatus used?");
      const hooks = timings.durations(s.id).filter((h) => h.event === "agent_before_settle");
      for (const h of hooks) expect(h.ms).toBeLessThan(4000 + 3000);
      expect(s.records()[0]?.results[0]).toMatchObject({ kind: "large", outcome: "removed" });
      expect(s.edits()).toHaveLength(1);
    } finally {
      await s.close();
    }
  });
});

// ------------------------------------------------------------------------------------------------------------
// Routing and surfacing (before_agent_start): on a fault Pi's default stands (every skill advertised,
// every tool declared), the boundary waits at most routingTimeoutMs, telemetry says why, and the next
// prompt routes. Answers that come late are kept for the next boundary by design (routing's contract);
// here they come after the batch was aborted, so nothing is kept.

type Messages = TranscriptContext["messages"];

describe.concurrent("classifier faults: routing and surfacing", () => {
  let skillsWritten: Promise<void> | undefined;
  it.for(FAULTS)("$name", async (fault, { expect }) => {
    const agentDir = await faultAgentDir();
    // Once: a session loading skills while another cell rewrites them would see a half-written file.
    skillsWritten ??= writeSkills(agentDir);
    await skillsWritten;
    const telemetryPath = join(agentDir, `telemetry-${Math.random().toString(36).slice(2)}.jsonl`);
    const s = await faultSession({
      config: {
        timeoutMs: deadline(fault),
        routingTimeoutMs: deadline(fault),
        midRun: false,
        telemetry: true,
        telemetryPath,
        toolNamespaces: { browser: { prefix: "browser_", description: "Headless web browser" } },
      },
      responses: ["Split done.", "Merged."],
      policy: routingPolicy,
      extensionFactories: [browserTools],
      skillPaths: [join(agentDir, "skills")],
    });
    try {
      s.classifier.set(fault.set);
      await s.session.prompt("The PDF export of report.pdf is broken; split it into single pages.");
      // 1. Pi's default stands: every skill advertised, every tool declared, nothing loaded.
      const first = s.contexts[0] as Messages;
      const prompt = getCurrentSystemPrompt(first);
      for (const name of Object.keys(SKILLS)) expect(prompt).toContain(name);
      expect(prompt).not.toContain("<loaded_skills>");
      expect(getCurrentTools(first).map((t) => t.name)).toEqual(
        expect.arrayContaining(["browser_open", "browser_click"]),
      );
      // 2. The boundary returned in time.
      const hooks = timings.durations(s.id).filter((h) => h.event === "before_agent_start");
      expect(hooks.length).toBeGreaterThan(0);
      for (const h of hooks)
        expect(h.ms, `before_agent_start took ${Math.round(h.ms)} ms`).toBeLessThan(hookBound(fault));
      expect(s.classifier.requests.length).toBeGreaterThan(0);
      // 3. Telemetry says the boundary got nothing usable.
      await sleep(200); // telemetry is written on a later tick
      const lines = (await readFile(telemetryPath, "utf8").catch(() => ""))
        .split("\n")
        .filter(Boolean)
        .map(
          (l) =>
            JSON.parse(l) as {
              type: string;
              turn?: number;
              scores?: Record<string, number | null>;
              timedOut?: boolean;
            },
        );
      const route = lines.find((l) => l.type === "route" && l.turn === 1);
      expect(route, JSON.stringify(lines)).toBeDefined();
      const unusable = Object.values(route?.scores ?? {}).every((v) => v === null);
      expect(route?.timedOut === true || unusable, JSON.stringify(route)).toBe(true);
      // 4. The next prompt routes: the PDF skill is loaded, the other skills are no longer advertised.
      s.classifier.set({ behaviour: "answer" });
      await s.reconfigure({ timeoutMs: 15_000, routingTimeoutMs: 15_000 });
      await s.session.prompt("Now merge report.pdf with the appendix pdf.");
      const next = getCurrentSystemPrompt(s.contexts[1] as Messages);
      expect(next).toContain("<loaded_skills>");
      expect(next).toContain('<skill name="pdf-tools"');
      expect(next).not.toContain("docker-ops");
    } finally {
      await s.close();
    }
  });
});
