// What the footer says the guard saved against what it really saved, in the real Pi (RPC mode): the same
// prompts run twice, guard on and guard off, each against its own scripted main model that bills a prompt
// cache as a provider does (test/kit/billing-server.ts). The real saving is the difference of the two
// bills Pi recorded, less the classifier; /guard's figure must be within 10% of it.
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CacheFamily } from "../../src/core/cache/prompt-cache.ts";
import { billedScript } from "../kit/billing-server.ts";
import { type FakeOpenAI, startFakeOpenAI, type WireJson } from "../kit/fake-openai.ts";
import { makeAgentDir, REPO_ROOT } from "../kit/pi-agent-dir.ts";
import { type NeedleWorld, startNeedleWorld } from "../kit/pi-tui.ts";
import { promptSettled, sessionFileOf, startRpcPi } from "../kit/rpc-pi.ts";

const EXTENSION = join(REPO_ROOT, "src/main/index.ts");
const COST = { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 };
const PROMPTS = 8;
/** Tool calls per run: the large output, then small ones, so that each run makes several requests. */
const STEPS = 5;
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

/** The bill Pi recorded on the session file: Σ cost.total of its assistant messages. */
async function billOf(file: string): Promise<number> {
  let total = 0;
  for (const line of (await readFile(file, "utf8")).split("\n")) {
    if (!line.trim()) continue;
    const e = JSON.parse(line);
    if (e.type === "message" && e.message?.role === "assistant") total += e.message.usage?.cost?.total ?? 0;
  }
  return total;
}

/** One arm: the prompts in Pi with the guard on or off; its bill, and /guard's figures when on. */
async function runArm(family: CacheFamily, guard: boolean) {
  const server: FakeOpenAI = await startFakeOpenAI(
    needle((req) => {
      const done = resultsSincePrompt(req.messages);
      if (done === 0) return { toolCalls: [{ name: "bash", arguments: { command: "cat out.txt" } }] };
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
    for (let i = 0; i < PROMPTS; i++) await promptSettled(pi, `where is needle ${i}?`);
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
    return { bill: await billOf(file), saved, requests: server.log.length };
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
    expect(on.requests).toBe(off.requests);
    const real = off.bill - on.bill - (on.saved?.classifier ?? 0);
    expect(real).toBeGreaterThan(0);
    expect(Math.abs((on.saved?.net ?? 0) - real)).toBeLessThanOrEqual(0.1 * real);
  }, 600_000);
});
