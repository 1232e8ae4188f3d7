// Two `pi` processes in RPC mode on one session file, each with the guard, background checkpoints and
// handed-over run-end rests (a classifier slow enough that both are pending when the next turn or prompt
// comes), their prompts interleaved. Each process appends to the file without seeing the other's
// entries. Neither may crash or wedge; every request either sent must pair each tool result with its
// call (a main model that rejects what OpenAI rejects); the file, opened afresh by Pi (a copy), must give
// every leaf a well-formed context, and no guard entry may name an entry off its own branch.
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeOpenAI, lastPrompt, startFakeOpenAI } from "../kit/fake-openai.ts";
import { dropAllPolicy, grepText } from "../kit/fault-session.ts";
import { type LoopbackClassifier, startLoopbackClassifier } from "../kit/loopback-classifier.ts";
import { makeAgentDir, REPO_ROOT } from "../kit/pi-agent-dir.ts";
import { promptSettled, type RpcPi, sessionFileOf, startRpcPi } from "../kit/rpc-pi.ts";
import { guardNames, leafProjections, openCopy } from "../kit/session-copy.ts";

const EXTENSION = join(REPO_ROOT, "src/main/index.ts");
const TURNS = 2;
/** Each process's prompts, in order; the first of `one` creates the file. */
const PROMPTS = { one: ["a", "c", "e"], two: ["b", "d", "f"] };
const LONG = `all read: ${"the counts are fine and nothing else changed. ".repeat(40)}`;

let classifier: LoopbackClassifier;
let main: FakeOpenAI;
let one: RpcPi;
let two: RpcPi;
let file = "";
let cwd = "";
const exits: Array<{ code: number | null; signal: NodeJS.Signals | null }> = [];

beforeAll(async () => {
  classifier = await startLoopbackClassifier({ policy: dropAllPolicy, latencyMs: 400 });
  // Each run reads TURNS files named after its prompt, then answers at length once the last checkpoint
  // has been answered, so the run-end pass is asked (and handed over) rather than left to the next run.
  main = await startFakeOpenAI(
    async (req) => {
      const { prompt, done } = lastPrompt(req.messages);
      const tag = prompt.trim();
      if (done >= TURNS) {
        await new Promise((r) => setTimeout(r, 600));
        return { text: LONG };
      }
      return { toolCalls: [{ name: "bash", arguments: { command: `cat ${tag}${done}.txt` } }] };
    },
    { strict: true },
  );
  cwd = await mkdtemp(join(tmpdir(), "cg-two-rpc-cwd-"));
  for (const tag of [...PROMPTS.one, ...PROMPTS.two])
    for (let t = 0; t < TURNS; t++) await writeFile(join(cwd, `${tag}${t}.txt`), grepText(8, `${tag}${t}`));
  const agentDir = await makeAgentDir({
    mainBaseUrl: main.baseUrl,
    classifierBaseUrl: classifier.baseUrl,
    guardConfig: {
      telemetry: false,
      settleBudgetMs: 150,
      midRunBatchChars: 0,
      midRunMinAgeTurns: 1,
      midRunBreakEven: false,
      keepRecentExchanges: 0,
      exchangeBreakEven: false,
      exchangeMinSavingChars: 0,
    },
  });
  const env = { PI_CONTEXT_GUARD_CONFIG: "" };
  one = startRpcPi({ agentDir, cwd, extensions: [EXTENSION], args: ["--session-dir", join(agentDir, "s")], env });
  await promptSettled(one, PROMPTS.one[0] as string);
  file = await sessionFileOf(one);
  // The second opens the file while the first's run-end rest is still being asked.
  two = startRpcPi({ agentDir, cwd, extensions: [EXTENSION], args: ["--session", file], env });
  for (let i = 0; i < PROMPTS.two.length; i++) {
    // Interleaved: both runs at once, then the next pair as soon as both have settled (rests pending).
    const next = PROMPTS.one[i + 1];
    await Promise.all([promptSettled(two, PROMPTS.two[i] as string), next ? promptSettled(one, next) : undefined]);
  }
  // Both exit on EOF, as an RPC client that closes its pipe would have them.
  for (const pi of [one, two]) pi.child.stdin.end();
  for (const pi of [one, two]) exits.push(await pi.exited);
}, 240_000);
afterAll(async () => {
  for (const pi of [one, two]) await pi?.close();
  await main?.close();
  await classifier?.close();
});

type Entry = {
  type: string;
  id: string;
  parentId: string | null;
  customType?: string;
  targetId?: string;
  data?: { phase?: string; results?: Array<{ entryId: string }> };
};

/** The session file as Pi loads it. */
const readCopy = () => openCopy(file, cwd);

describe("two pi processes (RPC) on one session file, with background work", () => {
  it("neither crashes nor wedges: every prompt settles and both exit cleanly", () => {
    expect(exits).toEqual([
      { code: 0, signal: null, at: expect.any(Number) },
      { code: 0, signal: null, at: expect.any(Number) },
    ]);
    for (const pi of [one, two]) {
      const errors = pi.records.filter(
        (r) => r.type === "extension_error" || (r.method === "notify" && r.notifyType === "error"),
      );
      expect(errors).toEqual([]);
    }
  });

  it("sent no request a strict provider rejects", () => {
    expect(main.requests.length).toBeGreaterThanOrEqual(6 * (TURNS + 1));
    expect(main.rejected).toEqual([]);
  });

  it("did background work in both: checkpoints and run-end passes landed", async () => {
    const entries = (await readCopy()).getEntries() as unknown as Entry[];
    const phases = entries.filter((e) => e.customType === "context-guard").map((e) => e.data?.phase);
    expect(new Set(phases)).toEqual(new Set(["mid-run", "run-end"]));
  });

  it("leaves a file Pi loads, whose every leaf projects with each tool result after its call", async () => {
    const leaves = leafProjections(await readCopy());
    expect(leaves.length).toBeGreaterThanOrEqual(2);
    for (const { leafId, messages } of leaves) {
      const open = new Set<string>();
      const problems: string[] = [];
      for (const m of messages) {
        if (m.role === "assistant" && Array.isArray(m.content)) {
          for (const id of open) problems.push(`call ${id} without result`);
          open.clear();
          for (const b of m.content as Array<{ type: string; id?: string }>)
            if (b.type === "toolCall") open.add(b.id as string);
        } else if (m.role === "toolResult") {
          if (!open.delete(m.toolCallId as string)) problems.push(`orphan ${m.toolCallId}`);
        }
      }
      expect([leafId, problems]).toEqual([leafId, []]);
    }
  });

  it("no edit or record names an entry that is not on the branch it lands on", async () => {
    const entries = (await readCopy()).getEntries() as unknown as Entry[];
    const names = guardNames(entries);
    for (const n of names) expect([n.entry, n.named, n.onBranch]).toEqual([n.entry, n.named, true]);
    expect(names.length).toBeGreaterThan(0);
  });
});
