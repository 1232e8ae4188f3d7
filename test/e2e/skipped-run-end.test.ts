// A run end that finds a checkpoint still pending skips its own pass; the run's outputs must still be
// judged at a later run end. In the real Pi in RPC mode, against a strict main model: four runs of three
// 8 KB outputs, a checkpoint after every turn, a classifier slower (CLASSIFIER_MS) than the settle
// budget, and a final answer that comes at once, so each run end finds its checkpoint asking. A last
// prompt's run end judges what the skipped run ends left.
import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeOpenAI, startFakeOpenAI, type WireJson } from "../kit/fake-openai.ts";
import { dropAllPolicy, grepText } from "../kit/fault-session.ts";
import { type LoopbackClassifier, startLoopbackClassifier } from "../kit/loopback-classifier.ts";
import { makeAgentDir, REPO_ROOT } from "../kit/pi-agent-dir.ts";
import { promptSettled, type RpcPi, sessionFileOf, startRpcPi } from "../kit/rpc-pi.ts";

const CLASSIFIER_MS = 800;
const RUNS = ["a", "b", "c", "d"];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const textOf = (m: WireJson): string =>
  typeof m?.content === "string" ? m.content : (m?.content ?? []).map((b: WireJson) => b?.text ?? "").join("");

let classifier: LoopbackClassifier;
let main: FakeOpenAI;
let rpc: RpcPi;
let lines: WireJson[] = [];
let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;

describe("a run end skipped for a pending checkpoint (RPC, strict)", () => {
  beforeAll(async () => {
    classifier = await startLoopbackClassifier({ policy: dropAllPolicy, latencyMs: CLASSIFIER_MS });
    // Three tool turns per run, then the final answer at once.
    main = await startFakeOpenAI(
      (req) => {
        let u = req.messages.length - 1;
        while (u >= 0 && req.messages[u]?.role !== "user") u--;
        const tag = textOf(req.messages[u]).trim();
        const done = req.messages.slice(u + 1).filter((m: WireJson) => m.role === "tool").length;
        if (!RUNS.includes(tag) || done >= 3) return { text: `all read ${"x ".repeat(300)}` };
        return { toolCalls: [{ name: "bash", arguments: { command: `cat ${tag}${done}.txt` } }] };
      },
      { strict: true },
    );
    const cwd = await mkdtemp(join(tmpdir(), "cg-skipped-"));
    for (const t of RUNS)
      for (let i = 0; i < 3; i++) await writeFile(join(cwd, `${t}${i}.txt`), grepText(8, `${t}${i}`));
    const agentDir = await makeAgentDir({
      mainBaseUrl: main.baseUrl,
      classifierBaseUrl: classifier.baseUrl,
      guardConfig: {
        telemetry: false,
        settleBudgetMs: 150,
        midRunBatchChars: 0,
        midRunMinAgeTurns: 1,
        midRunBreakEven: false,
        pruneExchanges: false,
      },
    });
    rpc = startRpcPi({
      agentDir,
      cwd,
      extensions: [join(REPO_ROOT, "src/main/index.ts")],
      args: ["--session-dir", join(agentDir, "sessions")],
      env: { PI_CONTEXT_GUARD_CONFIG: "" },
    });
    // Every request the classifier got is answered, and no new one came in two of its latencies.
    const quiet = async () => {
      let seen = -1;
      while (seen !== classifier.requests.length || classifier.answeredAt.length < classifier.requests.length) {
        seen = classifier.requests.length;
        await sleep(2 * CLASSIFIER_MS);
      }
    };
    for (const prompt of RUNS) await promptSettled(rpc, prompt, 30_000);
    // Once the classifier is quiet: "later" lands the last checkpoint and its run end judges what the
    // skipped run ends left (over the budget, so behind the agent), and "last" lands that. On a busy
    // machine that pass can still be asking at "last": each further prompt lands what is ready then.
    const file = await sessionFileOf(rpc);
    const unjudged = async () => {
      const entries = (await readFile(file, "utf8"))
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as WireJson);
      const named = new Set(
        entries
          .filter((e) => e.type === "custom" && e.customType === "context-guard")
          .flatMap((e) => e.data.results.map((r: { entryId: string }) => r.entryId)),
      );
      return entries.filter((e) => e.type === "message" && e.message.role === "toolResult" && !named.has(e.id));
    };
    for (const prompt of ["later", "last", "again", "once more"]) {
      await quiet();
      await promptSettled(rpc, prompt, 30_000);
      if (prompt !== "later" && (await unjudged()).length === 0) break;
    }
    rpc.child.stdin.end();
    exit = await rpc.exited;
    lines = (await readFile(file, "utf8"))
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
  }, 60_000);

  afterAll(async () => {
    await rpc?.close();
    await main?.close();
    await classifier?.close();
  });

  it("judges every output of the runs whose run end was skipped", () => {
    const outputs = lines.filter((e) => e.type === "message" && e.message.role === "toolResult").map((e) => e.id);
    const records = lines.filter((e) => e.type === "custom" && e.customType === "context-guard");
    const named = new Set(records.flatMap((e) => e.data.results.map((r: { entryId: string }) => r.entryId)));
    expect(outputs).toHaveLength(12);
    expect(outputs.filter((id) => !named.has(id))).toEqual([]);
    // Run ends were skipped: outputs whose first run-end record came only after a later prompt.
    const at = (id: string) => lines.findIndex((e) => e.id === id);
    const prompts = lines.flatMap((e, i) => (e.type === "message" && e.message.role === "user" ? [i] : []));
    const runEndOf = (id: string) =>
      lines.findIndex(
        (e) =>
          e.customType === "context-guard" &&
          e.data.phase === "run-end" &&
          e.data.results.some((r: WireJson) => r.entryId === id),
      );
    const later = outputs.filter((id) => {
      const next = prompts.find((p) => p > at(id)) ?? lines.length;
      return runEndOf(id) > next;
    });
    expect(later.length).toBeGreaterThan(0);
  });

  it("sends no request a strict provider rejects, and Pi exits cleanly", () => {
    expect(main.rejected).toEqual([]);
    expect(exit).toMatchObject({ code: 0, signal: null });
  });
});
