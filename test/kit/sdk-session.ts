/**
 * In-process Pi sessions for tests: the main model is pi-ai's faux provider (no HTTP), extensions load through the
 * real `DefaultResourceLoader`, and the built-in `openrouter` provider can be redirected to a loopback classifier so
 * `ctx.modelRegistry.classify(openrouter/~typesafe/jev-latest)` runs the real pi-ai System One client.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type AssistantMessage,
  type FauxProviderHandle,
  fauxAssistantMessage,
  fauxProvider,
  fauxText,
  fauxToolCall,
  type JsonObject,
  type Model,
  type SimpleStreamOptions,
  type TranscriptContext,
} from "@earendil-works/pi-ai";
import { convertMessages } from "@earendil-works/pi-ai/api/openai-completions";
import {
  type AgentSession,
  createAgentSession,
  DefaultResourceLoader,
  type InlineExtension,
  ModelRuntime,
  SessionManager,
  SettingsManager,
} from "@earendil-works/pi-coding-agent";
import { OPENAI_ORPHAN_TOOL_MESSAGE, openaiShapeProblems } from "./strict-shapes.ts";

export type FauxReply =
  /** Plain assistant text (stopReason "stop"). */
  | string
  /** A complete assistant message, e.g. from `fauxAssistantMessage(...)`. */
  | AssistantMessage
  /** One assistant turn calling these tools (stopReason "toolUse"), optionally with leading text. */
  | { toolCalls: { name: string; arguments: JsonObject }[]; text?: string };

export interface FauxCallInfo {
  /** 0-based index of this model call within the harness. */
  index: number;
  options: SimpleStreamOptions | undefined;
  model: Model<string>;
}

/** A scripted model reply, or a function of the request context (`context.messages` includes system messages). */
export type FauxResponse =
  | FauxReply
  | ((context: TranscriptContext, info: FauxCallInfo) => FauxReply | Promise<FauxReply>);

export interface TestSessionOptions {
  /** Working directory for tools; a fresh temp dir (removed on dispose) when omitted. */
  cwd?: string;
  /** The agent dir; also set as `PI_CODING_AGENT_DIR` for the extension (settings and telemetry files). */
  agentDir: string;
  /** Extension files (`.ts` loaded through jiti, like `pi -e`). */
  extensionPaths?: string[];
  /** Inline extension factories. */
  extensionFactories?: InlineExtension[];
  /** Model replies consumed in order; a call without a queued reply fails with "No more faux responses queued". */
  responses: FauxResponse[];
  /** Loopback classifier base URL: registered as the `openrouter` provider's baseUrl (apiKey "k"). */
  classifierBaseUrl?: string;
  /** In-memory settings. Default: compaction and retries off, so runs stay deterministic. */
  settings?: Parameters<typeof SettingsManager.inMemory>[0];
  /** Persist the session as JSONL in this dir (SessionManager.create); default in-memory. */
  sessionDir?: string;
  /** Reopen this session file (SessionManager.open), as `pi --session <file>` does. */
  sessionFile?: string;
  /**
   * Skill files or directories to load (e.g. `<agentDir>/skills`). Default none: Pi's own discovery stays off
   * (it would also read `~/.agents/skills`), so only these skills exist.
   */
  skillPaths?: string[];
  /**
   * The main model rejects, as OpenAI does (an error reply `400 Invalid parameter: …`, the script not
   * asked), a request whose tool messages do not pair with their calls once pi-ai converts it for OpenAI.
   */
  strict?: boolean;
  /** Keep a copy of every model call's messages in `contexts` (default true; a benchmark of long sessions turns it off). */
  keepContexts?: boolean;
}

export interface TestSession {
  session: AgentSession;
  faux: FauxProviderHandle;
  modelRuntime: ModelRuntime;
  cwd: string;
  /** Deep copy of `context.messages` seen by each faux model call, in call order. */
  contexts: TranscriptContext["messages"][];
  /** Requests the `strict` model rejected: what was wrong with each. */
  rejected: string[][];
  /** Queue more replies (recorded in `contexts` like the initial ones). */
  addResponses(...responses: FauxResponse[]): void;
  dispose(): Promise<void>;
}

function toMessage(reply: FauxReply): AssistantMessage {
  if (typeof reply === "string") return fauxAssistantMessage(reply);
  if ("role" in reply) return reply;
  const blocks = reply.toolCalls.map((c) => fauxToolCall(c.name, c.arguments));
  return fauxAssistantMessage(reply.text ? [fauxText(reply.text), ...blocks] : blocks, { stopReason: "toolUse" });
}

export async function createTestSession(opts: TestSessionOptions): Promise<TestSession> {
  // Extension files under the agent dir (settings, telemetry) follow PI_CODING_AGENT_DIR, as in the CLI.
  process.env.PI_CODING_AGENT_DIR = opts.agentDir;
  const ownCwd = opts.cwd === undefined;
  const cwd = opts.cwd ?? (await mkdtemp(join(tmpdir(), "cg-cwd-")));
  const contexts: TranscriptContext["messages"][] = [];
  const rejected: string[][] = [];
  let calls = 0;

  const faux = fauxProvider({ provider: "faux", models: [{ id: "faux-1", contextWindow: 128000, maxTokens: 4096 }] });
  const wrap =
    (response: FauxResponse) =>
    async (
      context: TranscriptContext,
      options: SimpleStreamOptions | undefined,
      _state: unknown,
      model: Model<string>,
    ) => {
      const index = calls++;
      if (opts.keepContexts !== false) contexts.push(structuredClone(context.messages));
      if (opts.strict) {
        const wire = convertMessages(model as never, context, {} as never);
        const problems = openaiShapeProblems(wire);
        if (problems.length > 0) {
          rejected.push(problems);
          return fauxAssistantMessage("", { stopReason: "error", errorMessage: `400 ${OPENAI_ORPHAN_TOOL_MESSAGE}` });
        }
      }
      const reply = typeof response === "function" ? await response(context, { index, options, model }) : response;
      return toMessage(reply);
    };
  faux.setResponses(opts.responses.map(wrap));

  const modelRuntime = await ModelRuntime.create({
    authPath: join(opts.agentDir, "auth.json"),
    modelsPath: null,
    refreshOnCreate: false,
  });
  modelRuntime.registerNativeProvider(faux.provider);
  if (opts.classifierBaseUrl !== undefined) {
    modelRuntime.registerProvider("openrouter", { baseUrl: opts.classifierBaseUrl, apiKey: "k" });
  }

  const settingsManager = SettingsManager.inMemory(
    opts.settings ?? { compaction: { enabled: false }, retry: { enabled: false } },
  );
  const resourceLoader = new DefaultResourceLoader({
    cwd,
    agentDir: opts.agentDir,
    settingsManager,
    additionalExtensionPaths: opts.extensionPaths ?? [],
    extensionFactories: opts.extensionFactories ?? [],
    noSkills: true,
    additionalSkillPaths: opts.skillPaths ?? [],
    noContextFiles: true,
    noPromptTemplates: true,
    noThemes: true,
  });
  await resourceLoader.reload();
  const loadErrors = resourceLoader.getExtensions().errors;
  if (loadErrors.length > 0) {
    throw new Error(`extension load errors: ${loadErrors.map((e) => `${e.path}: ${e.error}`).join("; ")}`);
  }

  const sessionManager =
    opts.sessionFile !== undefined
      ? SessionManager.open(opts.sessionFile, opts.sessionDir, cwd)
      : opts.sessionDir !== undefined
        ? SessionManager.create(cwd, opts.sessionDir)
        : SessionManager.inMemory(cwd);
  const { session } = await createAgentSession({
    cwd,
    agentDir: opts.agentDir,
    modelRuntime,
    model: faux.getModel(),
    thinkingLevel: "off",
    settingsManager,
    resourceLoader,
    sessionManager,
  });
  await session.bindExtensions({});

  let disposed = false;
  return {
    session,
    faux,
    modelRuntime,
    cwd,
    contexts,
    rejected,
    addResponses: (...responses) => faux.appendResponses(responses.map(wrap)),
    async dispose() {
      if (disposed) return;
      disposed = true;
      session.dispose();
      if (ownCwd) await rm(cwd, { recursive: true, force: true });
    },
  };
}
