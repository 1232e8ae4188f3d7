// Fault injection at every callback site (src/main/platform/callbacks.ts): code that runs outside an awaited
// promise is armed to throw, one site per run of the real Pi in RPC mode, and Pi must live, finish the
// run, report the fault once, and leave a session file that Pi's SessionManager opens. Each site is
// driven by a scenario that makes it run: an answering classifier, one that answers after the deadline,
// an RPC abort during the pass, or SIGTERM once the run has settled.
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { mkdtemp, readdir, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SessionManager } from "@earendil-works/pi-coding-agent";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CALLBACK_SITES, type CallbackSite, callback } from "../../src/main/platform/callbacks.ts";
import { type FakeOpenAI, startFakeOpenAI } from "../kit/fake-openai.ts";
import { dropAllPolicy } from "../kit/fault-session.ts";
import { type LoopbackClassifier, startLoopbackClassifier } from "../kit/loopback-classifier.ts";
import { FAKE_MODEL, makeAgentDir, NODE_BIN, PI_BIN, REPO_ROOT } from "../kit/pi-agent-dir.ts";

const EXTENSION = join(REPO_ROOT, "src/main/index.ts");
const TIMEOUT_MS = 1500;

type Scenario = "answer" | "late" | "abort" | "sigterm";
/** Sites a healthy Pi run reaches, with the scenario that reaches each. */
const DRIVEN: Partial<Record<CallbackSite, Scenario>> = {
  "http-message": "answer",
  "telemetry-write": "answer",
  "status-redraw": "answer",
  "snapshot-warm": "answer",
  "worker-warm": "answer",
  checkpoint: "answer",
  "rpc-input": "abort",
  "http-abort": "late",
  "queue-deadline": "late",
  "queue-abort": "abort",
  "exit-signal": "sigterm",
};
/**
 * Reached only when a thread fails or a worker task overruns 30 s, or (routing) with skills or tool
 * namespaces to route: covered by the unit check below and, for routing, by its unit tests.
 */
const UNREACHED: CallbackSite[] = ["http-lost", "worker-timer", "pool-error", "routing-deadline", "routing-late"];

let main: FakeOpenAI;
let cwd: string;
const servers: LoopbackClassifier[] = [];

beforeAll(async () => {
  // Stateless (the runs share this server): two bash calls, then the answer.
  main = await startFakeOpenAI(async (req) => {
    const done = req.messages.filter((m: { role: string }) => m.role === "tool").length;
    // "late" runs need the HTTP thread up before the pass (its abort listener is the site under test);
    // it boots when the run starts, which a loaded machine can stretch past a fast run.
    if (done === 0 && JSON.stringify(req.messages).includes("(wait for the thread)")) {
      await new Promise((r) => setTimeout(r, 2500));
    }
    return done < 2
      ? { toolCalls: [{ name: "bash", arguments: { command: `cat out${done + 1}.txt` } }] }
      : { text: "done: the outputs are read" };
  });
  cwd = await mkdtemp(join(tmpdir(), "cg-callback-faults-"));
  for (const n of [1, 2]) {
    const lines = Array.from({ length: 500 }, (_, i) => `lib/f${i % 25}.ts:${i}: output ${n} line ${i}`);
    await writeFile(join(cwd, `out${n}.txt`), lines.join("\n"));
  }
});
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
  await main.close();
});

interface Run {
  records: Array<Record<string, unknown>>;
  exit: { code: number | null; signal: NodeJS.Signals | null };
  sessionFile: string | undefined;
  stderr: string;
}

/** Two Pi processes at a time: more would only queue on the two cores. */
let slots = 2;
const waiting: Array<() => void> = [];
async function inSlot<T>(work: () => Promise<T>): Promise<T> {
  if (slots === 0) await new Promise<void>((resolve) => waiting.push(resolve));
  else slots--;
  try {
    return await work();
  } finally {
    const next = waiting.shift();
    if (next) next();
    else slots++;
  }
}

async function runWith(site: CallbackSite, scenario: Scenario): Promise<Run> {
  const classifier = await startLoopbackClassifier({
    policy: dropAllPolicy,
    ...(scenario === "late" ? { behaviour: "late", lateMs: TIMEOUT_MS + 1000 } : {}),
    ...(scenario === "abort" ? { behaviour: "hang" } : {}),
  });
  servers.push(classifier);
  const agentDir = await makeAgentDir({
    mainBaseUrl: main.baseUrl,
    classifierBaseUrl: classifier.baseUrl,
    guardConfig: { timeoutMs: TIMEOUT_MS, telemetry: true },
  });
  const sessions = await mkdtemp(join(tmpdir(), "cg-cbf-sessions-"));
  const child: ChildProcessWithoutNullStreams = spawn(
    NODE_BIN,
    [PI_BIN, "--mode", "rpc", "-ne", "--session-dir", sessions, "--model", FAKE_MODEL, "-e", EXTENSION],
    {
      cwd,
      env: {
        ...process.env,
        PI_CODING_AGENT_DIR: agentDir,
        PI_OFFLINE: "1",
        PI_CONTEXT_GUARD_CONFIG: "",
        CONTEXT_GUARD_INJECT_FAULT: site,
      },
    },
  );
  const records: Array<Record<string, unknown>> = [];
  let buffer = "";
  let stderr = "";
  child.stderr.setEncoding("utf8").on("data", (d: string) => {
    stderr += d;
  });
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
    buffer += chunk;
    for (let nl = buffer.indexOf("\n"); nl >= 0; nl = buffer.indexOf("\n")) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      try {
        records.push(JSON.parse(line));
      } catch {}
    }
  });
  const exited = new Promise<Run["exit"]>((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
  const killer = setTimeout(() => child.kill("SIGKILL"), 40_000);
  const until = async (pred: () => boolean) => {
    while (!pred()) await new Promise((r) => setTimeout(r, 25));
  };
  const message = scenario === "late" ? "read both outputs (wait for the thread)" : "read both outputs";
  child.stdin.write(`${JSON.stringify({ id: "1", type: "prompt", message })}\n`);
  if (scenario === "abort") {
    await until(() => classifier.requests.length > 0);
    child.stdin.write(`${JSON.stringify({ id: "2", type: "abort" })}\n`);
  }
  await until(() => records.some((r) => r.type === "agent_settled"));
  await new Promise((r) => setTimeout(r, 200));
  if (scenario === "sigterm") child.kill("SIGTERM");
  else child.stdin.end();
  const exit = await exited;
  clearTimeout(killer);
  const files = (await readdir(sessions, { recursive: true })).map(String).filter((f) => f.endsWith(".jsonl"));
  return { records, exit, sessionFile: files[0] ? join(sessions, files[0]) : undefined, stderr };
}

describe("a throw at any callback site", () => {
  it("lists every site exactly once between the driven and the unreached ones", () => {
    expect([...Object.keys(DRIVEN), ...UNREACHED].sort()).toEqual([...CALLBACK_SITES].sort());
  });

  it.concurrent.each(Object.entries(DRIVEN) as Array<[CallbackSite, Scenario]>)(
    "%s (%s): Pi lives, finishes the run, reports the fault and writes a valid session",
    { timeout: 240_000 },
    async (site, scenario) => {
      const run = await inSlot(() => runWith(site, scenario));
      expect(run.records.some((r) => r.type === "agent_settled")).toBe(true);
      // Exited on its own terms: the end of input, or Pi's own SIGTERM handling.
      expect(run.exit.signal).toBeNull();
      expect(run.exit.code).toBe(scenario === "sigterm" ? 143 : 0);
      expect(run.stderr).not.toMatch(/uncaught|unhandled/i);
      const reported = run.records.some(
        (r) => r.method === "notify" && String(r.message).includes(`internal error in ${site}`),
      );
      // A fault in the exit path may be reported after the last record was flushed.
      if (scenario !== "sigterm") expect(reported).toBe(true);
      expect(run.sessionFile).toBeDefined();
      const text = await readFile(run.sessionFile as string, "utf8");
      for (const line of text.split("\n").filter(Boolean)) expect(() => JSON.parse(line)).not.toThrow();
      const sm = SessionManager.open(run.sessionFile as string);
      const roles = sm
        .buildSessionProjection()
        .entries.flatMap((e) => e.messages.map((m) => (m as { role: string }).role));
      expect(roles.filter((r) => r === "toolResult").length).toBe(2);
      expect(roles.at(-1)).toBe("assistant");
    },
  );

  it.each(UNREACHED)("%s: the guarded listener swallows and reports", (site) => {
    const before = process.env.CONTEXT_GUARD_INJECT_FAULT;
    process.env.CONTEXT_GUARD_INJECT_FAULT = site;
    try {
      let ran = false;
      expect(() =>
        callback(site, () => {
          ran = true;
        })(),
      ).not.toThrow();
      expect(ran).toBe(false);
    } finally {
      if (before === undefined) delete process.env.CONTEXT_GUARD_INJECT_FAULT;
      else process.env.CONTEXT_GUARD_INJECT_FAULT = before;
    }
  });
});
