/**
 * Hermetic Pi agent directories and a CLI runner for tests against the real `pi` binary.
 */
import { spawn } from "node:child_process";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
/** Node 22 from the `node` devDependency (Pi needs >= 22.19). */
export const NODE_BIN = join(REPO_ROOT, "node_modules/.bin/node");
export const PI_BIN = join(REPO_ROOT, "node_modules/.bin/pi");

/** Provider/model ids declared by {@link makeAgentDir}. */
export const FAKE_MODEL = "fake/fake-model";
export const FAKE_ANTHROPIC_MODEL = "fake-anthropic/claude-fake";
/** The built-in classifier whose provider (`openrouter`) is redirected to the loopback classifier. */
export const CLASSIFIER_MODEL = "openrouter/~typesafe/jev-latest";

export interface AgentDirOptions {
  /** OpenAI-compatible base URL of the fake main model, e.g. `FakeOpenAI.baseUrl` (`http://127.0.0.1:PORT/v1`). */
  mainBaseUrl: string;
  /** Loopback classifier base URL (`LoopbackClassifier.baseUrl`, `http://127.0.0.1:PORT/api/v1`). */
  classifierBaseUrl: string;
  /** When set, also declares `fake-anthropic/claude-fake` (api `anthropic-messages`) at this base URL. */
  anthropicBaseUrl?: string;
  /** Written to `<agentDir>/settings.json`. */
  settings?: Record<string, unknown>;
  /** Written to `<agentDir>/context-guard.json`. */
  guardConfig?: Record<string, unknown>;
  /** Extra `models.json` providers, merged over the defaults. */
  extraProviders?: Record<string, unknown>;
}

/** Creates a temporary agent dir (`PI_CODING_AGENT_DIR`) under `os.tmpdir()`. Remove it with {@link removeAgentDir}. */
export async function makeAgentDir(opts: AgentDirOptions): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "cg-agent-"));
  const providers: Record<string, unknown> = {
    fake: {
      baseUrl: opts.mainBaseUrl,
      api: "openai-completions",
      apiKey: "fake-key",
      models: [{ id: "fake-model", name: "Fake", contextWindow: 128000, maxTokens: 4096 }],
    },
    // Overriding only baseUrl + apiKey keeps the built-in catalog (including ~typesafe/jev-latest).
    openrouter: { baseUrl: opts.classifierBaseUrl, apiKey: "fake-openrouter-key" },
  };
  if (opts.anthropicBaseUrl !== undefined) {
    providers["fake-anthropic"] = {
      baseUrl: opts.anthropicBaseUrl,
      api: "anthropic-messages",
      apiKey: "fake-key",
      models: [{ id: "claude-fake", name: "Claude Fake", contextWindow: 200000, maxTokens: 4096 }],
    };
  }
  Object.assign(providers, opts.extraProviders);
  await writeFile(join(dir, "models.json"), `${JSON.stringify({ providers }, null, 2)}\n`);
  if (opts.settings !== undefined) {
    await writeFile(join(dir, "settings.json"), `${JSON.stringify(opts.settings, null, 2)}\n`);
  }
  if (opts.guardConfig !== undefined) {
    await writeFile(join(dir, "context-guard.json"), `${JSON.stringify(opts.guardConfig, null, 2)}\n`);
  }
  return dir;
}

export async function removeAgentDir(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
}

export interface PiRunOptions {
  /** Kill the process (SIGTERM, then SIGKILL after 2 s) after this long. Default 30 000. */
  timeoutMs?: number;
  /** Working directory. Default `os.tmpdir()` (keeps project-local `.pi/` and AGENTS.md out). */
  cwd?: string;
  /** Sets `PI_CODING_AGENT_DIR` unless `env` already does. */
  agentDir?: string;
  /** Written to stdin, which is then closed. Default: stdin is `/dev/null`. */
  stdin?: string;
  /** Node's own flags, before Pi's script (they reach `process.execArgv`). */
  nodeArgs?: string[];
}

export interface PiRunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  durationMs: number;
}

/** Inherited variables that could leak the caller's Pi setup or real credentials into a test run. */
export function inheritedEnv(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value === undefined) continue;
    // The run-end wait the test run sets (vitest.config.ts) reaches the CLI too; no other Pi setting does.
    if (key === "PI_CONTEXT_GUARD_SETTLE_BUDGET_MS") out[key] = value;
    if (key.startsWith("PI_") || /_API_KEY$|_TOKEN$/.test(key)) continue;
    out[key] = value;
  }
  return out;
}

/**
 * Runs `node_modules/.bin/pi` under Node 22 with `PI_OFFLINE=1` and the given env (which should contain
 * `PI_CODING_AGENT_DIR`, or pass `opts.agentDir`). Never rejects for a non-zero exit; check `code`.
 */
export function runPiCli(args: string[], env: Record<string, string>, opts: PiRunOptions = {}): Promise<PiRunResult> {
  const fullEnv: Record<string, string> = { ...inheritedEnv(), PI_OFFLINE: "1", NO_COLOR: "1", ...env };
  if (fullEnv.PI_CODING_AGENT_DIR === undefined) {
    if (opts.agentDir === undefined) throw new Error("runPiCli: set env.PI_CODING_AGENT_DIR or opts.agentDir");
    fullEnv.PI_CODING_AGENT_DIR = opts.agentDir;
  }
  const started = Date.now();
  return new Promise((resolvePromise, reject) => {
    const child = spawn(NODE_BIN, [...(opts.nodeArgs ?? []), PI_BIN, ...args], {
      cwd: opts.cwd ?? tmpdir(),
      env: fullEnv,
      stdio: [opts.stdin === undefined ? "ignore" : "pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    let timedOut = false;
    child.stdout?.setEncoding("utf8").on("data", (d: string) => {
      stdout += d;
    });
    child.stderr?.setEncoding("utf8").on("data", (d: string) => {
      stderr += d;
    });
    if (opts.stdin !== undefined) child.stdin?.end(opts.stdin);
    let killTimer: NodeJS.Timeout | undefined;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill("SIGTERM");
      killTimer = setTimeout(() => child.kill("SIGKILL"), 2000);
    }, opts.timeoutMs ?? 30_000);
    child.on("error", (error) => {
      clearTimeout(timer);
      if (killTimer) clearTimeout(killTimer);
      reject(error);
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      if (killTimer) clearTimeout(killTimer);
      resolvePromise({ code, signal, stdout, stderr, timedOut, durationMs: Date.now() - started });
    });
  });
}

/** One line of a session file as the e2e tests read it. */
export type SessionLine = {
  type: string;
  customType?: string;
  targetId?: string;
  data?: unknown;
  message?: { role: string };
};

/** The lines of the one session file under `agentDir`/sessions (an error when there is not exactly one). */
export async function readSessionLines(agentDir: string): Promise<SessionLine[]> {
  const dir = join(agentDir, "sessions");
  const files = (await readdir(dir, { recursive: true })).filter((f) => f.endsWith(".jsonl"));
  if (files.length !== 1) throw new Error(`expected one session file in ${dir}, found ${files.length}`);
  const text = await readFile(join(dir, files[0] as string), "utf8");
  return text
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l) as SessionLine);
}
