// `context-guard replay`: finds the session files, picks the classifier (the configured one when its
// key is there, else the embedded local/lexical scorer), replays every file on one worker pool, and
// writes the HTML report.
import { readdir, stat, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import type { ModelRegistry, SessionEntry } from "@earendil-works/pi-coding-agent";
import { isLocalModelRef, LOCAL_MODEL_REF } from "../../core/classifier/lexical.ts";
import { DEFAULT_WAVE_MS } from "../../core/replay/handover-timing.ts";
import { REMOVAL_CENSUS, removalRates } from "../../core/replay/removal-rates.ts";
import type { ReplayReport, SessionMetrics } from "../../core/replay/replay-metrics.ts";
import type { GuardConfig } from "../../core/shared/config.ts";
import { parseModelRef } from "../../core/shared/model-ref.ts";
import { redact, redactDeep, type SecretSet, secretSet } from "../../core/shared/redact.ts";
import { oneLine } from "../../core/shared/text.ts";
import { classifierFor, findClassifier, localClassify } from "../pass/classifier.ts";
import type { ClassifyFn } from "../pass/classify-queue.ts";
import { readContent } from "../pass/snapshot.ts";
import { createTaskRunner, type TaskRunner } from "../platform/pool.ts";
import { classifierSecretValues } from "../platform/secrets.ts";
import { type CacheStats, cachedClassifier } from "./cache.ts";
import { replaySession } from "./driver.ts";
import { loadPriceBook, type PriceBook } from "./prices.ts";
import { readSessionFile, type SessionFile } from "./reader.ts";
import { referencedLines, renderHtml } from "./report-html.ts";
import type { RoutingCatalog } from "./routing-catalog.ts";
import { formatSummary, type ProgressBar } from "./summary.ts";
import { writeGuardedSession } from "./write-session.ts";
import { checkWriteTarget, type WriteTarget } from "./write-target.ts";

export const LOCAL_NOTE =
  "local/lexical is the embedded offline scorer: it matches paths, identifiers and words between each output and the " +
  "run's question and answer. It needs no key and no network, and it is much weaker than Jev, which reads the output: " +
  "expect it to keep less precisely and to remove more that is needed later.";

export class ReplayUsageError extends Error {
  override name = "ReplayUsageError";
}

/** A session file, or every `.jsonl` under a folder (sorted). */
export async function findSessionFiles(target: string): Promise<string[]> {
  const path = resolve(target);
  let info: Awaited<ReturnType<typeof stat>>;
  try {
    info = await stat(path);
  } catch {
    throw new ReplayUsageError(`${target}: no such file or folder`);
  }
  if (info.isFile()) return [path];
  const out: string[] = [];
  const walk = async (dir: string) => {
    const items = await readdir(dir, { withFileTypes: true });
    for (const item of items.sort((a, b) => a.name.localeCompare(b.name))) {
      const full = join(dir, item.name);
      if (item.isDirectory()) await walk(full);
      else if (item.isFile() && item.name.endsWith(".jsonl")) out.push(full);
    }
  };
  await walk(path);
  return out;
}

export interface ChosenClassifier {
  ref: string;
  note: string;
  classify: ClassifyFn;
  cache?: CacheStats;
  /**
   * Credentials of the agent dir's classifier providers (the chosen and the configured model's, as Pi
   * resolves them): cut out of the whole report, HTML, JSON and summary. Default: none.
   */
  secrets?: SecretSet;
}

/**
 * The classifier for a replay. An explicit `model` must work (a hosted one needs its key); without
 * one the configured model is used when its key is there, and the embedded scorer otherwise.
 * Hosted answers are cached on disk.
 */
export async function chooseClassifier(input: {
  model?: string;
  configured: string;
  agentDir: string;
  cacheDir: string;
}): Promise<ChosenClassifier> {
  const ref = input.model ?? input.configured;
  const hosted = [ref, input.configured].filter((r) => !isLocalModelRef(r) && parseModelRef(r));
  // The embedded scorer with no hosted model named: nothing to resolve, and Pi's runtime is not loaded.
  if (hosted.length === 0) return { ref: LOCAL_MODEL_REF, note: LOCAL_NOTE, classify: localClassify() };
  const { ModelRegistry, ModelRuntime } = await import("@earendil-works/pi-coding-agent");
  const runtime = await ModelRuntime.create({
    authPath: join(input.agentDir, "auth.json"),
    modelsPath: join(input.agentDir, "models.json"),
    refreshOnCreate: false,
  });
  const registry = new ModelRegistry(runtime);
  // A session can hold what a server echoed of these (an error in a record, a tool output): the report
  // never shows them, whichever classifier replays.
  const secrets = await replaySecrets(registry, [...new Set(hosted)]);
  if (isLocalModelRef(ref)) return { ref: LOCAL_MODEL_REF, note: LOCAL_NOTE, classify: localClassify(), secrets };
  const found = findClassifier(registry, ref);
  if (!found.ok) {
    const why =
      found.problem === "no-key"
        ? `no ${found.provider} key (set its API key, e.g. OPENROUTER_API_KEY, or /login in Pi)`
        : found.problem === "not-found"
          ? "not in Pi's classifier catalog"
          : "not a provider/id model name";
    if (input.model !== undefined) throw new ReplayUsageError(`--model ${ref}: ${why}; try --model ${LOCAL_MODEL_REF}`);
    return {
      ref: LOCAL_MODEL_REF,
      note: `${ref}: ${why}, so the embedded classifier is used. ${LOCAL_NOTE}`,
      classify: localClassify(),
      secrets,
    };
  }
  if (found.local) return { ref: LOCAL_MODEL_REF, note: LOCAL_NOTE, classify: localClassify(), secrets };
  const cached = cachedClassifier(classifierFor(registry, found), input.cacheDir, ref);
  return {
    ref,
    note: `${ref} through Pi's classifier client; answers are cached by request hash in ${input.cacheDir}, so a re-run asks nothing again.`,
    classify: cached.classify,
    cache: cached.stats,
    secrets,
  };
}

/** The credentials of the named classifiers' providers, as Pi resolves them from the agent dir. */
async function replaySecrets(registry: ModelRegistry, refs: string[]): Promise<SecretSet> {
  const values: string[] = [];
  for (const ref of refs) {
    const parsed = parseModelRef(ref);
    if (!parsed) continue;
    const model = registry.findOfType("classifier", parsed.provider, parsed.id);
    values.push(...(await classifierSecretValues(registry, model ?? { provider: parsed.provider })));
  }
  return secretSet(values);
}

export interface ReplayFilesOptions {
  classifier: ChosenClassifier;
  config: GuardConfig;
  /** Defaults to a one-thread Piscina pool, like the extension's pass pool. */
  runner?: TaskRunner;
  progress?: Pick<ProgressBar, "update" | "clear">;
  /** Prices for the money view; default: Pi's registry (with the agent dir's models.json). */
  prices?: PriceBook;
  agentDir?: string;
  /** Write the guarded session (one session file only) to this path. */
  write?: string;
  /** The working directory the written session records (default: the original's). */
  writeCwd?: string;
  /** Replay skill routing and tool surfacing over this catalog too. */
  routing?: RoutingCatalog;
  /** Also replay routing under the policy before evictions waited for a cold cache (before and after). */
  routingBefore?: boolean;
  /** Latency of one wave of classifier calls of a handed-over run-end pass; default DEFAULT_WAVE_MS. */
  waveMs?: number;
  /** What-if: the next prompt waits this long for a handed-over pass (ReplayOptions); default 0. */
  promptWaitMs?: number;
  /** What-if: a mid-run boundary that lands a handed-over pass also checkpoints (ReplayOptions). */
  landingCheckpoint?: boolean;
  /** The ceiling: a judge that knows the rest of each session answers instead of the classifier. */
  oracle?: boolean;
}

export interface ReplayFilesResult {
  /** Every string in it is already redacted with the classifier's secrets (so is its JSON). */
  report: ReplayReport;
  files: SessionFile[];
  /** The secrets the report was redacted with; the HTML's quoted session lines are cut with them too. */
  secrets?: SecretSet;
  /** Where the guarded session was written (--write). */
  written?: string;
  /** Why the guarded session could not be written (--write); the target is as it was. */
  writeError?: string;
}

export async function replayFiles(paths: string[], options: ReplayFilesOptions): Promise<ReplayFilesResult> {
  if (options.writeCwd !== undefined && options.write === undefined)
    throw new ReplayUsageError("--cwd goes with --write");
  if (options.write !== undefined && paths.length !== 1) {
    throw new ReplayUsageError(`--write needs one session file, not ${paths.length}`);
  }
  // Before the replay: a target that cannot be written is known now, not after minutes of replay.
  const target: WriteTarget | undefined =
    options.write === undefined ? undefined : await checkWriteTarget(options.write, paths);
  const runner = options.runner ?? (await createTaskRunner({ backend: "piscina", minThreads: 1, maxThreads: 1 }));
  const sessions: SessionMetrics[] = [];
  const files: SessionFile[] = [];
  const failures: ReplayReport["failures"] = [];
  let guarded: readonly SessionEntry[] | undefined;
  let written: string | undefined;
  let writeError: string | undefined;
  const config: GuardConfig = { ...options.config, enabled: true, model: options.classifier.ref };
  const prices = options.prices ?? (await loadPriceBook(options.agentDir));
  const waveMs = options.waveMs ?? DEFAULT_WAVE_MS;
  try {
    for (const path of paths) {
      let file: SessionFile;
      try {
        file = await readSessionFile(path);
      } catch (error) {
        failures.push({ file: path, error: (error as Error).message });
        continue;
      }
      const base = path.split("/").pop() ?? path;
      const name = base.length > 32 ? `…${base.slice(-31)}` : base;
      const metrics = await replaySession(file, {
        runner,
        classify: options.classifier.classify,
        modelRef: options.classifier.ref,
        config,
        prices,
        waveMs,
        ...(options.promptWaitMs ? { promptWaitMs: options.promptWaitMs } : {}),
        ...(options.landingCheckpoint ? { landingCheckpoint: true } : {}),
        ...(options.oracle ? { oracle: true } : {}),
        cacheHits: options.classifier.cache ? () => options.classifier.cache?.hits ?? 0 : undefined,
        onProgress: (done, total) => options.progress?.update(name, done, total, "entries"),
        onGuarded: (entries) => {
          guarded = entries;
        },
      });
      if (target && guarded) {
        try {
          written = await writeGuardedSession(target, file.header, guarded, options.writeCwd);
        } catch (error) {
          // The report is still written: the replay's work is not lost with the file.
          writeError = `--write ${options.write}: writing failed (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}); ${target.path} is as it was`;
        }
      }
      if (options.routing) {
        const { replayRouting } = await import("./routing-replay.ts");
        const routing = {
          catalog: options.routing,
          classify: options.classifier.classify,
          config,
          prices,
          ...(metrics.money ? { money: metrics.money } : {}),
          ...(prices.jevInput !== undefined ? { jevInput: prices.jevInput } : {}),
        };
        metrics.routing = await replayRouting(file, routing);
        const r = metrics.routing.money;
        if (metrics.dollars && r.priced) {
          metrics.dollars.routing = { off: r.off, on: r.on, classifier: r.classifier, net: r.netAfterClassifier };
        }
        if (options.routingBefore) {
          const b = await replayRouting(file, { ...routing, evictAnytime: true });
          metrics.routing.before = { changes: b.changes, misses: b.misses, hiddenCalls: b.hiddenCalls, money: b.money };
        }
      }
      options.progress?.clear();
      sessions.push(metrics);
      files.push(file);
    }
  } finally {
    if (!options.runner) await runner.destroy();
  }
  const secrets = options.classifier.secrets;
  const report: ReplayReport = {
    model: options.classifier.ref,
    modelNote: options.classifier.note,
    generatedAt: new Date().toISOString().replace(/\.\d+Z$/, "Z"),
    waveMs,
    ...(options.promptWaitMs ? { promptWaitMs: options.promptWaitMs } : {}),
    sessions,
    failures,
    removalRates: { ...removalRates(), sessions: REMOVAL_CENSUS.sessions, date: REMOVAL_CENSUS.date },
  };
  // Every string of the report (labels, traces, prompts, excerpts, problems, paths) is redacted once
  // here, so the HTML, the JSON and the summary all show the same cut text.
  return {
    report: redactDeep(report, secrets),
    files,
    ...(secrets ? { secrets } : {}),
    ...(written ? { written } : {}),
    ...(writeError ? { writeError } : {}),
  };
}

/** How a referenced line reads in the report's appendix: what it is and the start of its text. */
function describeEntry(entry: SessionEntry): string {
  const head = `${entry.type}${entry.type === "message" ? ` · ${(entry.message as { role?: string }).role}` : ""} · id ${entry.id}`;
  let text = "";
  if (entry.type === "message") {
    const m = entry.message as { content?: unknown; toolName?: string };
    const c = readContent(m.content);
    const calls = c.toolCalls.map((call) => `[tool call] ${call.name} ${oneLine(JSON.stringify(call.args), 300)}`);
    text = [m.toolName ? `(${m.toolName})` : "", c.text, ...calls].filter((s) => s !== "").join("\n");
    if (c.images > 0) text += `\n[${c.images} image(s)]`;
  } else if (entry.type === "custom_message") {
    text = readContent(entry.content).text;
  } else if (entry.type === "compaction" || entry.type === "branch_summary") {
    text = entry.summary;
  }
  return `${head}\n${text.length > 1200 ? `${text.slice(0, 1200)}…` : text}`;
}

function htmlFor(result: ReplayFilesResult): string {
  const lines = result.report.sessions.map((s, i) => {
    const file = result.files[i] as SessionFile;
    const byLine = new Map<number, SessionEntry>();
    for (const [entry, line] of file.lineOf) byLine.set(line, entry);
    const out = new Map<number, string>();
    for (const line of referencedLines(s)) {
      const entry = byLine.get(line);
      if (entry) out.set(line, redact(describeEntry(entry), result.secrets));
    }
    return out;
  });
  return renderHtml({ report: result.report, lines });
}

export async function writeReport(result: ReplayFilesResult, out: string): Promise<string> {
  const path = resolve(out);
  await writeFile(path, htmlFor(result));
  return path;
}

export { formatSummary };
