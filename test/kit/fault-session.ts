// Shared set-up for the reliability tests: a real Pi session (faux main model) with the guard loaded from
// the checkout, its hooks bracketed by the probe, and one loopback System One server per session.
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { GuardRecord } from "../../src/core/shared/types.ts";
import { HOOK_PROBE, hookProbeEnd } from "./hook-probe.ts";
import {
  type AnswerPolicy,
  type LoopbackClassifier,
  startLoopbackClassifier,
  type WireAnswer,
} from "./loopback-classifier.ts";
import { createTestSession, type FauxResponse, type TestSession } from "./sdk-session.ts";

export const EXTENSION = resolve(import.meta.dirname, "../../src/main/index.ts");

/** Judges everything clearly not needed: any answer that gets through removes something. */
export const dropAllPolicy: AnswerPolicy = (body) => {
  const answers: Record<string, WireAnswer> = {};
  for (const [id, q] of Object.entries(body.questions)) {
    if (q.type === "noul") answers[id] = { type: "noul", noul: 0.02 };
    else if (q.type === "choice") {
      const keys = Object.keys(q.criteria);
      const choice = keys.includes("none") ? "none" : (keys[0] ?? "none");
      const probabilities = Object.fromEntries(
        keys.map((k) => [k, k === choice ? 0.9 : 0.1 / Math.max(1, keys.length - 1)]),
      );
      answers[id] = { type: "choice", choice, probabilities, confidence: 0.9 };
    } else answers[id] = { type: "score", score: 0, confidence: 0.9 };
  }
  return answers;
};

let agentDir: Promise<string> | undefined;

/** The agent directory shared by the sessions of this process (settings files, skills). */
export function faultAgentDir(): Promise<string> {
  agentDir ??= mkdtemp(join(tmpdir(), "cg-faults-agent-"));
  return agentDir;
}
let creating: Promise<unknown> = Promise.resolve();

export interface FaultSession extends TestSession {
  id: string;
  classifier: LoopbackClassifier;
  /** Rewrites the session's settings file with these keys merged in and runs /guard reload. */
  reconfigure(config: Record<string, unknown>): Promise<void>;
  records(): GuardRecord[];
  edits(): Array<{ targetId: string }>;
  close(): Promise<void>;
}

/**
 * A session with its own loopback classifier. Creation is serialized: the guard reads its settings file
 * (PI_CONTEXT_GUARD_CONFIG) at session_start, so sessions can then run concurrently.
 */
export async function faultSession(opts: {
  config: Record<string, unknown>;
  responses: FauxResponse[];
  files?: Record<string, string>;
  policy?: AnswerPolicy;
  extensionFactories?: Parameters<typeof createTestSession>[0]["extensionFactories"];
  /** Skill directories for skill routing. */
  skillPaths?: string[];
  /** Pi's in-memory settings (default: compaction and retries off). */
  settings?: Parameters<typeof createTestSession>[0]["settings"];
}): Promise<FaultSession> {
  const dir = await faultAgentDir();
  const classifier = await startLoopbackClassifier({ policy: opts.policy ?? dropAllPolicy });
  const configPath = join(dir, `guard-${Math.random().toString(36).slice(2)}.json`);
  const initial = { telemetry: false, ...opts.config };
  const make = async () => {
    await writeFile(configPath, JSON.stringify(initial));
    process.env.PI_CONTEXT_GUARD_CONFIG = configPath;
    return createTestSession({
      agentDir: dir,
      extensionPaths: [HOOK_PROBE, EXTENSION],
      extensionFactories: [hookProbeEnd, ...(opts.extensionFactories ?? [])],
      classifierBaseUrl: classifier.baseUrl,
      responses: opts.responses,
      skillPaths: opts.skillPaths ?? [],
      ...(opts.settings ? { settings: opts.settings } : {}),
    });
  };
  const pending = creating.then(make, make);
  creating = pending.catch(() => undefined);
  const s = await pending;
  for (const [name, text] of Object.entries(opts.files ?? {})) await writeFile(join(s.cwd, name), text);
  const branch = () => s.session.sessionManager.getBranch();
  return Object.assign(s, {
    id: s.session.sessionManager.getSessionId(),
    classifier,
    async reconfigure(config: Record<string, unknown>) {
      await writeFile(configPath, JSON.stringify({ ...initial, ...config }));
      await s.session.prompt("/guard reload");
    },
    records: () =>
      branch()
        .filter((e) => e.type === "custom" && e.customType === "context-guard")
        .map((e) => (e as { data: GuardRecord }).data),
    edits: () => branch().filter((e) => e.type === "context_edit") as unknown as Array<{ targetId: string }>,
    async close() {
      // AgentSession.dispose() alone does not tell extensions; Pi's runtime emits session_shutdown first.
      await shutdown(s);
      await s.dispose();
      await classifier.close();
    },
  });
}

/** Emits session_shutdown (reason "quit") to the session's extensions, as Pi does before disposing. */
export async function shutdown(s: TestSession, reason: "quit" | "reload" | "new" = "quit"): Promise<void> {
  const runner = s.session.extensionRunner as unknown as { emit(event: unknown): Promise<unknown> };
  await runner.emit({ type: "session_shutdown", reason });
}

/** A grep-style output of about `kb` KB (40-char lines), mentioning target_fn once per file. */
export function grepText(kb: number, tag = "m"): string {
  const lines: string[] = [];
  for (let i = 0; lines.join("\n").length < kb * 1024; i++) {
    const file = `src/${tag}${Math.floor(i / 12)}/handler.ts`;
    lines.push(`${file}:${(i % 12) * 7 + 1}:const status${i} = readStatus(${i}); // ${"x".repeat(20)}`);
  }
  return `${lines.join("\n")}\n`;
}

/** A plain log of about `kb` KB. */
export function logText(kb: number, tag = "log"): string {
  const lines: string[] = [];
  for (let i = 0; lines.length * 48 < kb * 1024; i++) {
    lines.push(`${tag} 2026-01-01T10:00:${String(i % 60).padStart(2, "0")}Z step ${i} ok ${"-".repeat(12)}`);
  }
  return `${lines.join("\n")}\n`;
}
