#!/usr/bin/env node
// The `context-guard` command. `context-guard replay [session.jsonl | folder]` replays Pi sessions
// offline through the extension's own pipeline and reports what the guard would have done.
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { DEFAULT_WAVE_MS } from "./core/replay/handover-timing.ts";
import { escapeControls } from "./core/shared/control-chars.ts";
import { agentDir as defaultAgentDir, loadSettings } from "./main/platform/settings.ts";

const USAGE = `Usage: context-guard replay [session.jsonl | folder]... [options]

Replays Pi session files through context-guard's pipeline (the same worker pool, classifier queue,
deadline and validation as the extension), applying each pass's edits before the next, and reports
the context each request would have carried with the guard on vs off.

  [session.jsonl | folder]  session files, or folders searched for *.jsonl, replayed
                            in the order given (default: <agentDir>/sessions/)

Options:
  --model <provider/id>     classifier: local/lexical (embedded, offline; weaker than Jev) or a Pi
                            classifier such as openrouter/~typesafe/jev-latest (needs its key).
                            Default: the configured model when its key is there, else local/lexical
  --out <file.html>         report file (default: ./context-guard-report.html)
  --json <file.json>        also write the metrics as JSON
  --write <out.jsonl>       write the guarded session (one file: its branch with the guard's
                            context_edit entries and records), which Pi opens; never the
                            replayed file itself, and written whole or not at all
  --cwd <dir>               with --write: the working directory the written session records
                            (default: the original's; Pi opens a session only where its cwd exists)
  --skills <dir>            also replay skill routing over the skills in this folder (default: the
                            installed skills, when there are any)
  --tools <file.json>       and tool surfacing over these tools: [{name, description, parameters}] or
                            {tools, namespaces: {name: {prefix | tools, description}}}
  --routing-before          also replay routing as it was before evictions waited for a cold cache
  --wave-ms <ms>            latency of one wave of classifier calls, for when a run end's pass
                            handed over to the next prompt would have ended (default: ${DEFAULT_WAVE_MS},
                            the upper end of Jev's measured latency)
  --cache <dir>             answer cache for hosted classifiers (default: <agentDir>/context-guard-cache)
  --config <file>           settings file (default: <agentDir>/context-guard.json)
  --agent-dir <dir>         Pi's agent folder (default: $PI_CODING_AGENT_DIR or ~/.pi/agent)
  --no-progress             no progress bar
  -v, --version             the version
  -h, --help                this help
`;

async function replayCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      model: { type: "string" },
      out: { type: "string" },
      json: { type: "string" },
      write: { type: "string" },
      cwd: { type: "string" },
      cache: { type: "string" },
      "wave-ms": { type: "string" },
      skills: { type: "string" },
      tools: { type: "string" },
      "routing-before": { type: "boolean", default: false },
      config: { type: "string" },
      "agent-dir": { type: "string" },
      "no-progress": { type: "boolean", default: false },
      help: { type: "boolean", short: "h", default: false },
      version: { type: "boolean", short: "v", default: false },
    },
  });
  if (values.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  if (values.version) return printVersion();
  const waveMs = values["wave-ms"] === undefined ? undefined : Number(values["wave-ms"]);
  if (waveMs !== undefined && !(Number.isInteger(waveMs) && waveMs >= 0 && waveMs <= 600_000))
    throw new UsageError(`--wave-ms ${values["wave-ms"]}: not an integer from 0 to 600000`);
  const agentDir = values["agent-dir"] ?? defaultAgentDir();
  const targets = positionals.length > 0 ? positionals : [join(agentDir, "sessions")];
  if (values.write !== undefined) {
    // A target that cannot be written fails now, before Pi's runtime loads (replayFiles checks it too).
    const { checkWriteTarget } = await import("./main/replay/write-target.ts");
    await checkWriteTarget(
      values.write,
      targets.map((t) => resolve(t)),
    );
  }
  const replay = await import("./main/replay/command.ts");
  const { ProgressBar } = await import("./main/replay/summary.ts");
  const settings = await loadSettings(
    values.config ?? process.env.PI_CONTEXT_GUARD_CONFIG ?? join(agentDir, "context-guard.json"),
  );
  // Pi goes on with the defaults; a replay was asked for these settings, and its figures would not be theirs.
  // Exit 1, as for a bad --write or --tools file.
  if (values.config !== undefined && settings.unreadable) throw new Error(`--config: ${settings.unreadable}`);
  for (const w of settings.warnings) process.stderr.write(`context-guard: ${escapeControls(w)}\n`);
  const files: string[] = [];
  for (const target of targets) {
    const found = await replay.findSessionFiles(target);
    if (found.length === 0) throw new UsageError(`${target}: no .jsonl session files found`);
    files.push(...found.filter((f) => !files.includes(f)));
  }
  const classifier = await replay.chooseClassifier({
    model: values.model,
    configured: settings.config.model,
    agentDir,
    cacheDir: values.cache ?? join(agentDir, "context-guard-cache"),
  });
  const { ProgressLines } = await import("./main/replay/progress-lines.ts");
  // A bar on a terminal; elsewhere a line now and then for a long session only.
  const progress =
    process.stderr.isTTY === true || values["no-progress"]
      ? new ProgressBar(process.stderr, !values["no-progress"] && process.stderr.isTTY === true)
      : new ProgressLines(process.stderr);
  const { loadRoutingCatalog } = await import("./main/replay/routing-catalog.ts");
  const routing = await loadRoutingCatalog({
    skillsDir: values.skills,
    toolsFile: values.tools,
    agentDir,
    cwd: process.cwd(),
    config: settings.config,
  });
  if (routing && routing.rejected.length > 0) {
    const { rejectedText } = await import("./main/replay/routing-catalog.ts");
    process.stderr.write(
      `context-guard: Pi did not load ${routing.rejected.length} skill file(s) of --skills ${values.skills}, left out of the routing replay: ${escapeControls(rejectedText(routing.rejected))}\n`,
    );
  }
  const result = await replay.replayFiles(files, {
    classifier,
    config: settings.config,
    progress,
    agentDir,
    write: values.write,
    writeCwd: values.cwd,
    ...(waveMs !== undefined ? { waveMs } : {}),
    ...(routing ? { routing, routingBefore: values["routing-before"] } : {}),
  });
  const out = await replay.writeReport(result, values.out ?? "context-guard-report.html");
  if (values.json) {
    const { writeFile } = await import("node:fs/promises");
    await writeFile(values.json, `${JSON.stringify(result.report, null, 2)}\n`);
  }
  process.stdout.write(`${replay.formatSummary(result.report, out)}\n`);
  if (result.written) process.stdout.write(`guarded session: ${escapeControls(result.written)}\n`);
  if (result.writeError) process.stderr.write(`context-guard: ${escapeControls(result.writeError)}\n`);
  return result.report.sessions.length === 0 || result.writeError ? 1 : 0;
}

class UsageError extends Error {}

/** `context-guard --version`: the package's version (package.json beside src/ and dist/). */
async function printVersion(): Promise<number> {
  const { readFile } = await import("node:fs/promises");
  const manifest = JSON.parse(await readFile(new URL("../package.json", import.meta.url), "utf8"));
  process.stdout.write(`context-guard ${manifest.version}\n`);
  return 0;
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === "-h" || command === "--help" || command === "help") {
    process.stdout.write(USAGE);
    return command === undefined ? 2 : 0;
  }
  if (command === "-v" || command === "--version" || command === "version") return printVersion();
  if (command !== "replay") throw new UsageError(`unknown command "${command}"`);
  return replayCommand(rest);
}

// Past a file size limit (ulimit -f) the kernel signals SIGXFSZ, which would kill the process mid-write;
// with a handler the write fails with EFBIG instead, and the temporary file is cleaned up.
process.on("SIGXFSZ", () => {});

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    const code = (error as { code?: unknown })?.code;
    const usage =
      error instanceof UsageError ||
      (error as Error)?.name === "ReplayUsageError" ||
      (typeof code === "string" && code.startsWith("ERR_PARSE_ARGS"));
    const message = escapeControls(error instanceof Error ? error.message : String(error));
    process.stderr.write(`context-guard: ${message}\n${usage ? "Run `context-guard replay --help` for usage.\n" : ""}`);
    process.exitCode = usage ? 2 : 1;
  },
);
