// A failure the session goes past is not lost: a branch whose projection cannot be read at session
// start leaves the session running, names the site and the error in `/guard trace`, and writes a
// `caught` line (site and class, no text) to the session's telemetry, which `/guard stats` counts.
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DEFAULT_CONFIG } from "../../../../src/core/shared/config.ts";
import { createTaskRunner } from "../../../../src/main/platform/pool.ts";
import { clearSwallowed } from "../../../../src/main/platform/swallowed.ts";
import { runGuardCommand } from "../../../../src/main/session/guard-command.ts";
import { SessionGuard } from "../../../../src/main/session/session-guard.ts";

let dir: string;
beforeEach(async () => {
  clearSwallowed();
  dir = await mkdtemp(join(tmpdir(), "cg-caught-"));
});
afterEach(() => rm(dir, { recursive: true, force: true }));

function brokenCtx() {
  const notices: string[] = [];
  const ctx = {
    hasUI: true,
    mode: "tui",
    ui: {
      notify: (message: string) => notices.push(message),
      setStatus: () => {},
      setWorkingMessage: () => {},
      theme: { fg: (_colour: string, text: string) => text },
    },
    model: undefined,
    modelRegistry: { findOfType: () => undefined, getProviderAuthStatus: () => ({ configured: false }) },
    sessionManager: {
      buildSessionProjection: () => {
        throw new RangeError("projection broke");
      },
      getBranch: () => [],
      getSessionId: () => "caught-session",
      getLeafId: () => null,
      getEntry: () => undefined,
      getLeafEntry: () => undefined,
    },
  };
  return { ctx: ctx as never, notices };
}

describe("an error the session goes past", () => {
  it("shows in /guard trace and in the session's telemetry", async () => {
    const telemetryPath = join(dir, "telemetry.jsonl");
    const config = { ...DEFAULT_CONFIG, model: "local/lexical", telemetry: true, telemetryPath };
    const session = new SessionGuard({
      settings: { config, warnings: [], path: join(dir, "context-guard.json") },
      passRunner: await createTaskRunner({ backend: "inline" }),
      recallRunner: await createTaskRunner({ backend: "inline" }),
      http: { fetch: globalThis.fetch, start: () => {}, close: async () => {} },
      pi: {
        getAllTools: () => [],
        getActiveTools: () => [],
        setActiveTools: () => {},
        appendEntry: () => {},
      } as never,
      watchExit: () => () => {},
    });
    const { ctx, notices } = brokenCtx();
    try {
      session.start(ctx);
      await runGuardCommand("trace", ctx, session);
      expect(notices.at(-1)).toContain("session.check-branch: RangeError: projection broke");
      await runGuardCommand("stats", ctx, session);
      expect(notices.at(-1)).toMatch(/errors caught and gone past: .*session\.check-branch \(RangeError\) ×1/);
    } finally {
      await session.shutdown();
    }
    const lines = (await readFile(telemetryPath, "utf8"))
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    const caught = lines.filter((l) => l.type === "caught");
    expect(caught).toContainEqual(expect.objectContaining({ where: "session.check-branch", error: "RangeError" }));
    expect(JSON.stringify(caught)).not.toContain("projection broke");
  });
});
