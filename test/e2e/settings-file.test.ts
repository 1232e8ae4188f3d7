// The settings file in the real Pi (issue 23, break 7; the file-level checks are in
// test/unit/main/platform/settings.test.ts): /guard on|off says 'saved' only when it saved, and a `pi -p` run whose
// settings file is a FIFO starts, answers and exits instead of hanging.
import { execFileSync } from "node:child_process";
import { chmod, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeOpenAI, startFakeOpenAI } from "../kit/fake-openai.ts";
import { faultSession } from "../kit/fault-session.ts";
import { capturingUi } from "../kit/hook-probe.ts";
import { keywordPolicy, type LoopbackClassifier, startLoopbackClassifier } from "../kit/loopback-classifier.ts";
import { FAKE_MODEL, makeAgentDir, REPO_ROOT, removeAgentDir, runPiCli } from "../kit/pi-agent-dir.ts";

describe("/guard on|off in a real Pi session", () => {
  it("says 'saved' only when it saved; otherwise: this session only, and why", async () => {
    const s = await faultSession({ config: {}, responses: [] });
    const path = process.env.PI_CONTEXT_GUARD_CONFIG as string;
    try {
      const { ui, notices } = capturingUi();
      s.session.extensionRunner.setUIContext(ui, "tui");
      const text = '{ "telemetry": false, "enabled": true }';
      await writeFile(path, text);
      await chmod(path, 0o444);
      await s.session.prompt("/guard off");
      expect(await readFile(path, "utf8")).toBe(text);
      expect(notices.some((n) => /saved to/.test(n.message))).toBe(false);
      expect(notices).toContainEqual({
        type: "error",
        message: `context-guard is off for this session only, not saved: ${path} is read-only (mode 0444); it was left as it is`,
      });
      // The session is off all the same.
      await s.session.prompt("/guard");
      expect(notices.at(-1)?.message).toMatch(/^context-guard is off · /);

      await chmod(path, 0o644);
      await s.session.prompt("/guard on");
      expect(notices.at(-1)).toEqual({ type: "info", message: `context-guard is on (saved to ${path})` });
      expect(await readFile(path, "utf8")).toBe(text);
      await s.session.prompt("/guard off");
      expect(notices.at(-1)).toEqual({ type: "info", message: `context-guard is off (saved to ${path})` });
      expect(await readFile(path, "utf8")).toBe('{ "telemetry": false, "enabled": false }');
    } finally {
      await chmod(path, 0o644).catch(() => undefined);
      await s.close();
    }
  });
});

describe("a pi -p run whose settings file is a FIFO", () => {
  let classifier: LoopbackClassifier;
  let main: FakeOpenAI;
  beforeAll(async () => {
    classifier = await startLoopbackClassifier({ policy: keywordPolicy(/never/) });
    main = await startFakeOpenAI(() => ({ text: "pong" }));
  });
  afterAll(async () => {
    await classifier.close();
    await main.close();
  });

  it("starts, answers and exits instead of hanging", async () => {
    const agentDir = await makeAgentDir({ mainBaseUrl: main.baseUrl, classifierBaseUrl: classifier.baseUrl });
    try {
      execFileSync("mkfifo", [join(agentDir, "context-guard.json")]);
      const result = await runPiCli(
        ["-p", "-ne", "--no-session", "--model", FAKE_MODEL, "-e", join(REPO_ROOT, "src/main/index.ts"), "ping"],
        { PI_CODING_AGENT_DIR: agentDir },
        { timeoutMs: 45_000 },
      );
      expect(result.timedOut).toBe(false);
      expect(result.code).toBe(0);
      expect(result.stdout).toContain("pong");
    } finally {
      await removeAgentDir(agentDir);
    }
  }, 60_000);
});
