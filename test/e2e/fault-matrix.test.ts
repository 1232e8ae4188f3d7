// The classifier fault matrix, end to end in the real Pi: every fault of the loopback System One server
// against every pass kind (run end, mid-run checkpoint, whole items). For each cell:
//   1. nothing is edited (the server would judge everything "not needed" if its answers got through),
//   2. the run ends (a hang would hold it forever but for the deadline), and the guard held its hooks,
//   3. the record says why each item was kept (timeout / error / no-answer),
//   4. the next pass, with the server answering again, edits (once the breaker's pause is over: see
//      `pastThePause`).
// See docs/reliability.md for the table. Nothing here depends on how fast the machine is: deadlines that are
// not the fault's subject are longer than the test's timeout, and a mid-run cell's model ends its run only
// once the checkpoint has asked (instead of betting on a sleep).
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
import { type FaultSession, faultAgentDir, faultSession, grepText, logText } from "../kit/fault-session.ts";
import { recordHooks } from "../kit/hook-probe.ts";
import type { LoopbackOptions } from "../kit/loopback-classifier.ts";
import { failOnUnhandledRejections } from "../kit/no-unhandled.ts";
import { browserTools, routingPolicy, SKILLS, writeSkills } from "../kit/routing-fixtures.ts";
import type { FauxReply, FauxResponse } from "../kit/sdk-session.ts";

/** The deadline (`timeoutMs`, `routingTimeoutMs`) where the fault is about time: the cell waits it out. */
const T = 1500;
/**
 * The deadline where the fault answers at once (errors, bad bodies), and of every recovery: past the test's
 * timeout, so that a loaded machine cannot turn the fault into a timeout before its answer is read, which
 * would leave the path untested.
 */
const ROOMY = 120_000;
/** The same for routing, whose deadline the settings cap at 60 s: the test's timeout. */
const ROOMY_ROUTING = 60_000;
const deadline = (fault: Fault) => (fault.timing ? T : ROOMY);
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

const call = (command: string): FauxReply => ({
  toolCalls: [{ name: "bash", arguments: { command } as JsonObject }],
});
/**
 * The model's last reply of a mid-run cell's run, given only once the classifier has been asked since the
 * run began. Until then the model runs a command with no output, turn after turn: a checkpoint starts at a
 * turn_end with none pending, once an output is old enough, however long the pass thread takes to plan
 * (on a slow machine the run would otherwise end first and leave everything to the run end).
 */
const afterAsked = (s: FaultSession, reply: FauxReply): FauxResponse => {
  const from = s.classifier.requests.length;
  const asked = () => s.classifier.requests.length > from;
  const poll: FauxResponse = async () => {
    if (!asked()) await sleep(20);
    if (asked()) return reply;
    s.addResponses(poll);
    return call("true");
  };
  return poll;
};

interface Kind {
  name: string;
  config: Record<string, unknown>;
  files: Record<string, string>;
  /** Prompts run before the faulty pass (with the fault already on; they must not judge anything). */
  setup: Array<{ prompt: string; responses: FauxResponse[] }>;
  /** The run whose pass(es) meet the fault (its replies made when it starts, with the cell's classifier). */
  faulty: { prompt: string; responses: (s: FaultSession) => FauxResponse[] };
  /** What the faulty pass must have recorded: phases and item kinds. */
  expectPhases: Array<GuardRecord["phase"]>;
  expectKinds: Array<NonNullable<RecordResult["kind"]>>;
  /** The next run, with the classifier answering: it must edit items of these kinds in this phase. */
  next: {
    prompt: string;
    responses: (s: FaultSession) => FauxResponse[];
    phase: GuardRecord["phase"];
    kinds: string[];
  };
}

const KINDS: Kind[] = [
  {
    name: "run end (large outputs)",
    config: { midRun: false, pruneExchanges: false, smallResultMinChars: 0 },
    files: { "a.txt": grepText(24, "a"), "b.txt": grepText(24, "b") },
    setup: [],
    faulty: { prompt: "Where is readStatus used?", responses: () => [call("cat a.txt"), "In src/a0/handler.ts."] },
    expectPhases: ["run-end"],
    expectKinds: ["large"],
    next: {
      prompt: "And in b?",
      responses: () => [call("cat b.txt"), "In src/b0/handler.ts."],
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
    faulty: {
      prompt: "Check the logs",
      responses: (s) => [call("cat l0.txt"), call("cat l1.txt"), afterAsked(s, "All steps ok.")],
    },
    expectPhases: ["mid-run", "run-end"],
    expectKinds: ["large"],
    next: {
      prompt: "Check the other logs",
      // As in the faulty run: no turn_end waits for a checkpoint, so one that has not planned when the run
      // ends is left to the run end; the model ends the run once the checkpoint has asked.
      responses: (s) => [call("cat l2.txt"), call("cat l3.txt"), afterAsked(s, "All ok.")],
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
    faulty: {
      prompt: "Read the two step logs",
      responses: () => [call("cat s1.txt"), call("cat s2.txt"), "Both fine."],
    },
    expectPhases: ["run-end"],
    expectKinds: ["small", "exchange"],
    next: {
      prompt: "Now the third log",
      responses: () => [call("cat s3.txt"), "Fine too."],
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
      responses: kind.setup.flatMap((p) => p.responses),
      files: kind.files,
    });
    // Another cell may move the breaker's clock past a retry-after while this one runs (see above).
    const clockAtStart = clockOffset;
    try {
      for (const p of kind.setup) await s.session.prompt(p.prompt);
      s.classifier.set(fault.set);
      s.addResponses(...kind.faulty.responses(s));
      await s.session.prompt(kind.faulty.prompt);

      // 1. Nothing edited.
      expect(s.edits()).toEqual([]);
      // 2. The run ended, through the boundaries the guard held (their deadline is the record's `timedOut`).
      const hooks = timings.durations(s.id).filter((h) => h.event === "turn_end" || h.event === "agent_before_settle");
      expect(hooks.some((h) => h.event === "agent_before_settle")).toBe(true);
      // 3. The records say why.
      const records = s.records();
      // A retry-after is believed: nothing is asked after the first pass until the pause is over, unless
      // another cell moved the clock past it meanwhile (then a probe may fail here like any pass).
      const believed = fault.retryAfter && clockOffset === clockAtStart;
      const phases = believed ? kind.expectPhases.slice(0, 1) : kind.expectPhases;
      if (fault.retryAfter && !believed) expect(records[0]?.phase).toBe(kind.expectPhases[0]);
      else expect(new Set(records.map((r) => r.phase))).toEqual(new Set(phases));
      const results = records.flatMap((r) => r.results);
      expect(new Set(results.map((r) => r.kind))).toEqual(new Set(kind.expectKinds));
      for (const r of results) {
        expect(r.outcome, JSON.stringify(r)).toBe("kept");
        for (const reason of r.reason.split(",")) expect(fault.reasons, JSON.stringify(r)).toContain(reason);
      }
      for (const r of records) expect(r.savedChars).toBe(0);
      if (fault.timedOut) expect(records.every((r) => r.timedOut)).toBe(true);
      // A fault about time has a short deadline, counted from the pass's start: on a loaded machine it can
      // come while the pass thread still plans, before any request. That is the deadline doing its job.
      const asked = s.classifier.requests.length > 0;
      expect(asked || (fault.timing === true && records.every((r) => r.timedOut))).toBe(true);
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
      await s.reconfigure({ timeoutMs: ROOMY });
      s.addResponses(...kind.next.responses(s));
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
  it("is used like any answer", async () => {
    const s = await faultSession({
      config: { timeoutMs: ROOMY, midRun: false, pruneExchanges: false, smallResultMinChars: 0 },
      responses: [call("cat a.txt"), "In src/a0/handler.ts."],
      files: KINDS[0]?.files ?? {},
    });
    try {
      s.classifier.set({ behaviour: "huge", hugeBytes: ANSWER_CAP - 64 * 1024, hugeValid: true });
      await s.session.prompt("Where is readStatus used?");
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

interface RouteLine {
  type: string;
  turn?: number;
  scores?: Record<string, number | null>;
  timedOut?: boolean;
}

async function routeLines(path: string): Promise<RouteLine[]> {
  const text = await readFile(path, "utf8").catch(() => "");
  // The last line may be half written.
  return text
    .split("\n")
    .slice(0, -1)
    .filter(Boolean)
    .map((l) => JSON.parse(l) as RouteLine);
}

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
        routingTimeoutMs: fault.timing ? T : ROOMY_ROUTING,
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
      // 2. The boundary returned (for a hang, only its deadline could end it).
      const hooks = timings.durations(s.id).filter((h) => h.event === "before_agent_start");
      expect(hooks.length).toBeGreaterThan(0);
      expect(s.classifier.requests.length).toBeGreaterThan(0);
      // 3. Telemetry says the boundary got nothing usable (it is written on a later tick: wait for the line).
      const routeOf = async () => (await routeLines(telemetryPath)).find((l) => l.type === "route" && l.turn === 1);
      let route = await routeOf();
      while (!route) {
        await sleep(20);
        route = await routeOf();
      }
      const unusable = Object.values(route?.scores ?? {}).every((v) => v === null);
      expect(route?.timedOut === true || unusable, JSON.stringify(route)).toBe(true);
      // 4. The next prompt routes: the PDF skill is loaded, the other skills are no longer advertised.
      s.classifier.set({ behaviour: "answer" });
      await s.reconfigure({ timeoutMs: ROOMY, routingTimeoutMs: ROOMY_ROUTING });
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
