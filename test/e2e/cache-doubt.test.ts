// A cache model the bill contradicts is not acted on, in the real Pi (RPC mode). The scripted host caches
// nothing and bills long prompts at ten times the input price (a long-context tier in the model's cost,
// which Pi applies): the session learns "no cache" (every edit free) and median prices the long requests
// cannot explain, so the live money view's fit misses the recorded dollars. /guard then says so, and the
// next pass's gates act on the conservative view instead.
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { billedScript } from "../kit/billing-server.ts";
import { type FakeOpenAI, startFakeOpenAI, type WireJson } from "../kit/fake-openai.ts";
import { makeAgentDir, REPO_ROOT } from "../kit/pi-agent-dir.ts";
import { type NeedleWorld, startNeedleWorld } from "../kit/pi-tui.ts";
import { promptSettled, startRpcPi } from "../kit/rpc-pi.ts";

const EXTENSION = join(REPO_ROOT, "src/main/index.ts");
/** Prompts above this many tokens are billed at the tier's prices (the big file puts run 0 above it). */
const TIER = 10_000;
const COST = {
  input: 3,
  output: 15,
  cacheRead: 0.3,
  cacheWrite: 3.75,
  tiers: [{ inputTokensAbove: TIER, input: 30, output: 150, cacheRead: 3, cacheWrite: 37.5 }],
};
const stripAnsi = (s: string) => s.replace(/\u001b\[[0-9;]*m/g, "");
const toolResults = (messages: WireJson[]) => {
  let n = 0;
  for (let i = messages.length - 1; i >= 0 && messages[i]?.role !== "user"; i--) if (messages[i]?.role === "tool") n++;
  return n;
};

let world: NeedleWorld;
beforeAll(async () => {
  world = await startNeedleWorld("cg-cache-doubt-");
  // Pi shows the first 50 KB of it: about 13k tokens, above the tier while it is in the prompt.
  const lines = Array.from({ length: 4000 }, (_, i) => `lib/g${i % 40}.ts:${i}:other line ${i} of the big listing`);
  await writeFile(join(world.cwd, "big.txt"), lines.join("\n"));
});
afterAll(async () => world?.close());

describe("the live gate told of a model miss", () => {
  it("/guard names the miss and the next pass gates on the conservative view", async () => {
    const server: FakeOpenAI = await startFakeOpenAI(
      billedScript((req) => {
        const first = JSON.stringify(req.messages.find((m: WireJson) => m?.role === "user")?.content ?? "");
        const run0 = req.messages.filter((m: WireJson) => m?.role === "user").length === 1 && first.includes("big");
        const done = toolResults(req.messages);
        if (done === 0)
          return { toolCalls: [{ name: "bash", arguments: { command: run0 ? "cat big.txt" : "cat out.txt" } }] };
        if (run0 && done < 5) return { toolCalls: [{ name: "bash", arguments: { command: `echo step ${done}` } }] };
        return { text: "needle is in lib/f5.ts" };
      }, "none"),
    );
    const agentDir = await makeAgentDir({
      mainBaseUrl: server.baseUrl,
      classifierBaseUrl: world.classifier.baseUrl,
      guardConfig: { telemetry: false, midRun: false },
      extraProviders: {
        tiered: {
          baseUrl: server.baseUrl,
          api: "openai-completions",
          apiKey: "fake-key",
          models: [{ id: "long-context", name: "Tiered", contextWindow: 200000, maxTokens: 4096, cost: COST }],
        },
      },
    });
    const pi = startRpcPi({
      agentDir,
      cwd: world.cwd,
      extensions: [EXTENSION],
      args: ["--session-dir", join(agentDir, "s"), "--model", "tiered/long-context"],
      env: { PI_CONTEXT_GUARD_CONFIG: "" },
      killAfterMs: 300_000,
    });
    try {
      await pi.waitFor((r) => r.method === "setStatus" || r.type === "response", { timeoutMs: 60_000 });
      await promptSettled(pi, "where is needle in big.txt?");
      let report = "";
      // Short runs bring the median price down to the list's: the fit of the long ones then misses.
      for (let i = 1; i <= 10 && !report.includes("the last pass gated"); i++) {
        await promptSettled(pi, `where is needle ${i}?`);
        const from = pi.records.length;
        pi.send({ id: `g${i}`, type: "prompt", message: "/guard" });
        await pi.waitFor((r) => r.id === `g${i}` && r.type === "response", { from, timeoutMs: 30_000 });
        report = pi.records
          .slice(from)
          .filter((r) => r.method === "notify")
          .map((r) => stripAnsi(String(r.message)).replace(/\s+/g, " "))
          .join("\n");
      }
      expect(report).toMatch(/Cache model: tiered\/long-context misses its recorded dollars by −\d/);
      expect(report).toContain("the last pass gated edits on the conservative view (automatic prefix caching");
    } finally {
      await pi.close();
      await server.close();
    }
  }, 600_000);
});
