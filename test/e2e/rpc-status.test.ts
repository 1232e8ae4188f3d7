// Pi in RPC mode turns UI calls into stdout records, so the footer states and /guard can be asserted
// exactly as a TUI user would see them.
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeAgentDir, REPO_ROOT } from "../kit/pi-agent-dir.ts";
import { type NeedleWorld, startNeedleWorld } from "../kit/pi-tui.ts";
import { type RpcRecord, startRpcPi } from "../kit/rpc-pi.ts";

const EXTENSION = join(REPO_ROOT, "src/main/index.ts");
const stripAnsi = (s: string) => s.replace(/\u001b\[[0-9;]*m/g, "");

/** Pi in RPC mode in the needle world, with the guard's footer states and the notices read from its records. */
function startRpc(agentDir: string) {
  const pi = startRpcPi({ agentDir, cwd: world.cwd, extensions: [EXTENSION], env: { PI_CONTEXT_GUARD_CONFIG: "" } });
  return {
    send: pi.send,
    close: pi.close,
    waitFor: (pred: (r: RpcRecord) => boolean) => pi.waitFor(pred, { timeoutMs: 20_000 }),
    statuses: () =>
      pi.records
        .filter((r) => r.method === "setStatus" && r.statusKey === "context-guard")
        .map((r) => stripAnsi(String(r.statusText))),
    notices: () => pi.records.filter((r) => r.method === "notify").map((r) => String(r.message)),
  };
}

let world: NeedleWorld;

beforeAll(async () => {
  world = await startNeedleWorld("cg-rpc-");
});
afterAll(async () => world.close());

describe("status bar and /guard in RPC mode", () => {
  it("shows ready, busy and savings, then /guard reports the pass and /guard off persists", async () => {
    const agentDir = await makeAgentDir({
      mainBaseUrl: world.main.baseUrl,
      classifierBaseUrl: world.classifier.baseUrl,
      guardConfig: { keep: "me" },
    });
    const rpc = startRpc(agentDir);
    try {
      await rpc.waitFor((r) => r.method === "setStatus");
      rpc.send({ id: "1", type: "prompt", message: "where is needle?" });
      await rpc.waitFor((r) => r.type === "agent_settled");
      await rpc.waitFor(() => rpc.statuses().some((s) => s.startsWith("🛡 −")));
      expect(rpc.statuses().slice(0, 3)).toEqual(["🛡 0 saved", "🛡 distilling…", "🛡 −2.7k · 1"]);

      rpc.send({ id: "2", type: "prompt", message: "/guard" });
      await rpc.waitFor((r) => r.id === "2" && r.type === "response");
      const report = rpc.notices().find((n) => n.startsWith("context-guard is on")) ?? "";
      expect(report).toContain("Now: 2.7k tokens kept out of the context (1 item).");
      expect(report).toMatch(/Last pass \(just now, end of a run\): replaced 1 item \(10\.8k chars kept out\)/);
      expect(report).not.toContain("kw.");

      rpc.send({ id: "2t", type: "prompt", message: "/guard trace" });
      await rpc.waitFor((r) => r.id === "2t" && r.type === "response");
      const trace = rpc.notices().find((n) => n.startsWith("Last pass (run-end")) ?? "";
      expect(trace).toMatch(
        /bash `cat out\.txt`: distilled 11\.6k → \d+ chars \(chunks\) kw\.10 focus=chunk_1:\.70 keep 1\/31/,
      );

      rpc.send({ id: "3", type: "prompt", message: "/guard off" });
      await rpc.waitFor((r) => r.id === "3" && r.type === "response");
      expect(rpc.statuses().at(-1)).toBe("🛡 guard off");
      const saved = JSON.parse(await readFile(join(agentDir, "context-guard.json"), "utf8"));
      expect(saved).toEqual({ keep: "me", enabled: false });
      expect(rpc.notices().some((n) => n.includes("keep: unknown setting"))).toBe(true);
    } finally {
      await rpc.close();
    }
  });

  it("says when the classifier's provider has no key, or the model is unknown", async () => {
    const noKey = await makeAgentDir({ mainBaseUrl: world.main.baseUrl, classifierBaseUrl: world.classifier.baseUrl });
    // Keep the fake main model but drop the openrouter override that carries the key.
    const models = JSON.parse(await readFile(join(noKey, "models.json"), "utf8"));
    delete models.providers.openrouter;
    await writeFile(join(noKey, "models.json"), JSON.stringify(models));
    const a = startRpc(noKey);
    try {
      await a.waitFor((r) => r.method === "setStatus");
      expect(a.statuses()[0]).toBe("🛡 no openrouter key");
    } finally {
      await a.close();
    }
    const unknown = await makeAgentDir({
      mainBaseUrl: world.main.baseUrl,
      classifierBaseUrl: world.classifier.baseUrl,
      guardConfig: { model: "openrouter/no-such-classifier" },
    });
    const b = startRpc(unknown);
    try {
      await b.waitFor((r) => r.method === "setStatus");
      expect(b.statuses()[0]).toBe("🛡 model openrouter/no-such-classifier not found");
    } finally {
      await b.close();
    }
  });
});
