// What the footer says the guard saved against what it really saved, in the real Pi (RPC mode): the same
// prompts run twice, guard on and guard off, each against its own scripted main model that bills a prompt
// cache as a provider does (test/kit/billing-server.ts). The real saving is the difference of the two
// bills Pi recorded, less the classifier; /guard's figure must be within 10% of it. In the guard-on arm the
// scripted model calls `recall` for an output the guard took out, and the user restores another one with
// `/guard restore` halfway: both cost the guarded bill something, and the figure must still hold.
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CacheFamily } from "../../src/core/cache/prompt-cache.ts";
import { PIN_TYPE } from "../../src/core/records/pins.ts";
import { billedScript } from "../kit/billing-server.ts";
import { type FakeOpenAI, startFakeOpenAI, type WireJson } from "../kit/fake-openai.ts";
import { makeAgentDir, REPO_ROOT } from "../kit/pi-agent-dir.ts";
import { type NeedleWorld, startNeedleWorld } from "../kit/pi-tui.ts";
import { promptSettled, sessionFileOf, startRpcPi } from "../kit/rpc-pi.ts";

const EXTENSION = join(REPO_ROOT, "src/main/index.ts");
const COST = { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 };
const PROMPTS = 10;
/** Tool calls per run: the large output, then small ones, so that each run makes several requests. */
const STEPS = 5;
/**
 * Guard on, from these runs on, once: the model recalls an output the guard took out (in place of the
 * run's first small step), and the user restores another before the run's prompt. The guard's gates
 * decide when outputs go out (later with an explicit cache), so each waits for the first run that has one.
 */
const RECALL_FROM = 3;
const RESTORE_FROM = 5;
const stripAnsi = (s: string) => s.replace(/\u001b\[[0-9;]*m/g, "");

let world: NeedleWorld;
beforeAll(async () => {
  world = await startNeedleWorld("cg-money-ab-");
});
afterAll(async () => world.close());

/** The needle world's main model: each prompt reads the large output, then answers. */
const needle = billedScript;

/** A user's prompt, not a tool result (Anthropic's format sends those as user messages). */
const isPrompt = (m: WireJson) =>
  m?.role === "user" && !(Array.isArray(m.content) && m.content.some((b: WireJson) => b?.type === "tool_result"));

/** Tool results since the user's last prompt. */
function resultsSincePrompt(messages: WireJson[]): number {
  let n = 0;
  for (let i = messages.length - 1; i >= 0 && !isPrompt(messages[i]); i--) {
    const m = messages[i];
    if (m?.role === "tool") n++;
    else if (m?.role === "user") n += m.content.filter((b: WireJson) => b?.type === "tool_result").length;
  }
  return n;
}

/** The text of every message the request carries. */
const textOf = (messages: WireJson[]) => JSON.stringify(messages);

/** The number of the run a request belongs to (its last prompt says "needle <i>"). */
function runOf(messages: WireJson[]): number {
  const prompt = messages.findLast(isPrompt);
  const m = /needle (\d+)/.exec(JSON.stringify(prompt?.content ?? ""));
  return m ? Number(m[1]) : -1;
}

/** An entry id the guard's notes offer to recall, if the prompt shows one. */
const recallable = (messages: WireJson[]) => /recall\(\{\\?"entryId\\?":\\?"([^"\\]+)/.exec(textOf(messages))?.[1];

/** The session file's entries. */
async function entriesOf(file: string): Promise<WireJson[]> {
  return (await readFile(file, "utf8"))
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l));
}

/** The bill Pi recorded on the session file: Σ cost.total of its assistant messages. */
async function billOf(file: string): Promise<number> {
  let total = 0;
  for (const e of await entriesOf(file)) {
    if (e.type === "message" && e.message?.role === "assistant") total += e.message.usage?.cost?.total ?? 0;
  }
  return total;
}

/** A slash command in RPC mode: the text of the notices it gave. */
async function command(pi: ReturnType<typeof startRpcPi>, id: string, text: string): Promise<string[]> {
  const from = pi.records.length;
  pi.send({ id, type: "prompt", message: text });
  await pi.waitFor((r) => r.id === id && r.type === "response", { from, timeoutMs: 30_000 });
  return pi.records
    .slice(from)
    .filter((r) => r.method === "notify")
    .map((r) => stripAnsi(String(r.message)));
}

/** One arm: the prompts in Pi with the guard on or off; its bill, and /guard's figures when on. */
async function runArm(family: CacheFamily, guard: boolean) {
  let recalled: string | undefined;
  const server: FakeOpenAI = await startFakeOpenAI(
    needle((req) => {
      const done = resultsSincePrompt(req.messages);
      if (done === 0) return { toolCalls: [{ name: "bash", arguments: { command: "cat out.txt" } }] };
      // Once, in the recall run: the full output of an item the guard took out (none guard off).
      const id =
        recalled === undefined && done === 1 && runOf(req.messages) >= RECALL_FROM
          ? recallable(req.messages)
          : undefined;
      if (id) {
        recalled = id;
        return { toolCalls: [{ name: "recall", arguments: { entryId: id } }] };
      }
      if (done < STEPS) return { toolCalls: [{ name: "bash", arguments: { command: `echo step ${done}` } }] };
      return { text: "needle is in lib/f5.ts" };
    }, family),
  );
  const explicit = family === "anthropic";
  const agentDir = await makeAgentDir({
    mainBaseUrl: server.baseUrl,
    classifierBaseUrl: world.classifier.baseUrl,
    anthropicBaseUrl: server.anthropicBaseUrl,
    guardConfig: guard ? { telemetry: false, midRun: false } : { enabled: false, telemetry: false },
    extraProviders: {
      fake: {
        baseUrl: server.baseUrl,
        api: "openai-completions",
        apiKey: "fake-key",
        models: [{ id: "fake-model", name: "Fake", contextWindow: 128000, maxTokens: 4096, cost: COST }],
      },
      "fake-anthropic": {
        baseUrl: server.anthropicBaseUrl,
        api: "anthropic-messages",
        apiKey: "fake-key",
        models: [{ id: "claude-fake", name: "Claude Fake", contextWindow: 200000, maxTokens: 4096, cost: COST }],
      },
    },
  });
  const pi = startRpcPi({
    agentDir,
    cwd: world.cwd,
    extensions: [EXTENSION],
    args: ["--session-dir", join(agentDir, "s"), ...(explicit ? ["--model", "fake-anthropic/claude-fake"] : [])],
    env: { PI_CONTEXT_GUARD_CONFIG: "" },
    killAfterMs: 300_000,
  });
  try {
    await pi.waitFor((r) => r.method === "setStatus" || r.type === "response", { timeoutMs: 60_000 });
    let restored: string | undefined;
    for (let i = 0; i < PROMPTS; i++) {
      if (guard && i >= RESTORE_FROM && restored === undefined) {
        // The user puts back an output the guard took out: one /guard list shows, not the recalled one.
        const list = (await command(pi, `list${i}`, "/guard list")).join("\n");
        restored = [...list.matchAll(/^\s*(\S+) {2}large output/gm)].map((m) => m[1]).find((x) => x !== recalled);
        if (restored) await command(pi, "restore", `/guard restore ${restored}`);
      }
      await promptSettled(pi, `where is needle ${i}?`);
    }
    const file = await sessionFileOf(pi);
    let saved: { net: number; classifier: number } | undefined;
    if (guard) {
      // /guard says the footer's figure in words; the pass thread prices the last requests behind the
      // passes, so it is read until two reports agree.
      let previous: string | undefined;
      for (let i = 0; ; i++) {
        const from = pi.records.length;
        pi.send({ id: `g${i}`, type: "prompt", message: "/guard" });
        await pi.waitFor((r) => r.id === `g${i}` && r.type === "response", { from, timeoutMs: 30_000 });
        const report = pi.records
          .slice(from)
          .filter((r) => r.method === "notify")
          .map((r) => stripAnsi(String(r.message)))
          .findLast((n) => n.startsWith("context-guard is on"));
        const m = /Saved so far: \$(\S+), after the classifier's \$(\S+?) /.exec(report ?? "");
        const loss = /cost \$(\S+) more than it saved[\s\S]*Classifier on this branch: .*\$(\S+)\./.exec(report ?? "");
        if (m) saved = { net: Number(m[1]), classifier: Number(m[2]) };
        else if (loss) saved = { net: -Number(loss[1]), classifier: Number(loss[2]) };
        else throw new Error(`no figure in /guard: ${report}`);
        const figure = JSON.stringify(saved);
        if (figure === previous) break;
        previous = figure;
        await new Promise((r) => setTimeout(r, 500));
      }
    }
    // The footer's figure after /guard's settled: the last status the guard set.
    const status = pi.records.findLast((r) => r.method === "setStatus" && r.statusKey === "context-guard");
    const footer = /\$(\S+) saved/.exec(stripAnsi(String(status?.statusText ?? "")))?.[1];
    return {
      footer: footer === undefined ? undefined : Number(footer),
      bill: await billOf(file),
      saved,
      requests: server.log.length,
      entries: await entriesOf(file),
      recalled,
      restored,
    };
  } finally {
    await pi.close();
    await server.close();
  }
}

describe.each([
  ["explicit (Anthropic-like)", "anthropic"],
  ["automatic (OpenAI-like)", "openai"],
  ["none", "none"],
] as const)("the footer's saving against two real bills, %s", (_name, family) => {
  it("is within 10% of the difference of the bills, less the classifier", async () => {
    const on = await runArm(family, true);
    const off = await runArm(family, false);
    // The recall stood in for one of the run's small steps: both arms made the same requests.
    expect(on.requests).toBe(off.requests);
    // The guard-on session holds the recall's result and the restore: the pin, then the original back.
    const recalls = on.entries.filter((e) => e.message?.role === "toolResult" && e.message.toolName === "recall");
    expect(recalls).toHaveLength(1);
    expect(off.entries.some((e) => e.message?.toolName === "recall")).toBe(false);
    expect(on.recalled).toBeDefined();
    // The recall's own restore pin, then the user's.
    const pins = on.entries.filter((e) => e.type === "custom" && e.customType === PIN_TYPE).map((e) => e.data);
    expect(pins).toContainEqual(expect.objectContaining({ action: "restore", ids: [on.restored] }));
    const edits = on.entries.filter((e) => e.type === "context_edit" && e.targetId === on.restored);
    // The original, whole: out.txt's 400 lines, not the guard's distilled few.
    expect(JSON.stringify(edits.at(-1)?.replacement)).toContain("other line 399");
    const real = off.bill - on.bill - (on.saved?.classifier ?? 0);
    expect(real).toBeGreaterThan(0);
    expect(Math.abs((on.saved?.net ?? 0) - real)).toBeLessThanOrEqual(0.1 * real);
    expect(Math.abs((on.footer ?? 0) - real)).toBeLessThanOrEqual(0.1 * real);
  }, 600_000);
});
