/**
 * Pi's real TUI under tmux (`tmux.ts`) with the extension from the checkout, and the one-output world the TUI
 * and RPC footer tests share: a main model that reads one large grep output and answers, and a classifier
 * that keeps only its `needle` line.
 */
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type FakeOpenAI, startFakeOpenAI } from "./fake-openai.ts";
import { keywordPolicy, type LoopbackClassifier, startLoopbackClassifier } from "./loopback-classifier.ts";
import { FAKE_MODEL, NODE_BIN, PI_BIN, REPO_ROOT } from "./pi-agent-dir.ts";
import { startTmux, type TmuxSession } from "./tmux.ts";

const EXTENSION = join(REPO_ROOT, "src/main/index.ts");

export interface NeedleWorld {
  classifier: LoopbackClassifier;
  main: FakeOpenAI;
  /** Holds `out.txt`: 400 grep lines, one of them (`lib/f5.ts:5`) the needle. */
  cwd: string;
  close(): Promise<void>;
}

/** Each user prompt makes the main model run `cat out.txt`, then say where the needle is. */
export async function startNeedleWorld(cwdPrefix: string): Promise<NeedleWorld> {
  const classifier = await startLoopbackClassifier({ policy: keywordPolicy(/needle/) });
  const main = await startFakeOpenAI((req) =>
    req.messages.at(-1)?.role === "user"
      ? { toolCalls: [{ name: "bash", arguments: { command: "cat out.txt" } }] }
      : { text: "needle is in lib/f5.ts" },
  );
  const cwd = await mkdtemp(join(tmpdir(), cwdPrefix));
  const lines = Array.from(
    { length: 400 },
    (_, i) => `lib/f${i % 30}.ts:${i}:${i === 5 ? "needle" : "other"} line ${i}`,
  );
  await writeFile(join(cwd, "out.txt"), lines.join("\n"));
  return {
    classifier,
    main,
    cwd,
    async close() {
      await classifier.close();
      await main.close();
    },
  };
}

/** Starts `pi` (no session file, the fake main model, the guard from the checkout) in a tmux pane. */
export function startPiTui(opts: { agentDir: string; cwd: string; width?: number }): Promise<TmuxSession> {
  return startTmux({
    command: [NODE_BIN, PI_BIN, "-ne", "--no-session", "--model", FAKE_MODEL, "-e", EXTENSION],
    cwd: opts.cwd,
    ...(opts.width !== undefined ? { width: opts.width } : {}),
    env: { PI_CODING_AGENT_DIR: opts.agentDir, PI_OFFLINE: "1", PI_CONTEXT_GUARD_CONFIG: "", TERM: "xterm-256color" },
  });
}

/** Runs a slash command until the screen `shows` it; the editor's completion may take the first Enter. */
export async function tuiCommand(tui: TmuxSession, text: string, shows: RegExp): Promise<string> {
  await tui.type(text);
  await tui.keys("Enter");
  return tui.waitFor(shows, 5_000).catch(async () => {
    if ((await tui.screen()).includes(text)) await tui.keys("Enter");
    return tui.waitFor(shows, 30_000);
  });
}
