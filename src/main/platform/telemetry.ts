// Decision telemetry: one JSON line per decision, appended to <agentDir>/context-guard-telemetry.jsonl
// (or `telemetryPath`), mode 0600. `record()` only queues a line; the file is written on a later tick
// with async IO, so no hook ever waits for the disk. `flush()` waits for everything queued so far.
// Every string of a line is redacted first (core/shared/redact.ts) with the credentials known to the process.
import { createReadStream } from "node:fs";
import { appendFile, chmod, mkdir, stat } from "node:fs/promises";
import { homedir } from "node:os";
import { dirname, isAbsolute, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import {
  type DistillEvent,
  formatTelemetryStats,
  type TelemetryEvent,
  type TelemetryInput,
  telemetryAggregator,
} from "../../core/records/telemetry-stats.ts";
import type { GuardConfig } from "../../core/shared/config.ts";
import { redactDeep, type SecretSet } from "../../core/shared/redact.ts";
import type { GuardRecord } from "../../core/shared/types.ts";
import { callback } from "./callbacks.ts";
import { knownSecrets } from "./secrets.ts";
import { agentDir } from "./settings.ts";
import { traceSwallowed } from "./swallowed.ts";

const TELEMETRY_FILE = "context-guard-telemetry.jsonl";
/** Lines kept in memory while the disk is slow; older ones are dropped beyond this. */
const MAX_QUEUED = 10_000;

/** Where telemetry goes for a configuration: `telemetryPath` (`~/` expanded) or the agent dir's file. */
export function telemetryPath(config: Pick<GuardConfig, "telemetryPath">): string {
  const p = config.telemetryPath.trim();
  if (!p) return join(agentDir(), TELEMETRY_FILE);
  if (p === "~" || p.startsWith("~/")) return join(homedir(), p.slice(1));
  return isAbsolute(p) ? p : resolve(agentDir(), p);
}

export interface TelemetryOptions {
  /** The current configuration (read at every record, so `/guard reload` applies at once). */
  getConfig(): Pick<GuardConfig, "telemetry" | "telemetryPath"> | undefined;
  /** Called once per distinct write error (e.g. to show a notice). */
  onError?: (error: Error) => void;
  /**
   * The secrets cut out of every string of every line (core/shared/redact.ts). Default: the credentials the
   * classifier calls of this process resolved so far (secrets.ts `knownSecrets`).
   */
  secrets?: () => SecretSet;
}

export class Telemetry {
  #options: TelemetryOptions;
  #queue: Array<{ path: string; line: string }> = [];
  #scheduled = false;
  #draining: Promise<void> | undefined;
  #secured = new Set<string>();
  #errors = new Set<string>();
  dropped = 0;
  written = 0;
  /** Pi session id stamped on every line (set at session start). */
  session: string | undefined;

  constructor(options: TelemetryOptions) {
    this.#options = options;
  }

  /** The file the next line goes to, or undefined when telemetry is off. */
  path(): string | undefined {
    const config = this.#options.getConfig();
    if (!config?.telemetry) return undefined;
    return telemetryPath(config);
  }

  /** Queues one event. Never throws, never waits. */
  record(event: TelemetryInput): void {
    try {
      const path = this.path();
      if (!path) return;
      const session = this.session;
      const secrets = (this.#options.secrets ?? knownSecrets)();
      // Labels, error details and traces can carry a credential a server echoed: each string is redacted.
      const full = redactDeep(
        { v: 1, ts: new Date().toISOString(), ...(session ? { session } : {}), ...event },
        secrets,
      ) as TelemetryEvent;
      this.#queue.push({ path, line: `${JSON.stringify(full)}\n` });
      if (this.#queue.length > MAX_QUEUED) {
        this.dropped += this.#queue.length - MAX_QUEUED;
        this.#queue.splice(0, this.#queue.length - MAX_QUEUED);
      }
      if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(
          callback("telemetry-write", () => {
            this.#scheduled = false;
            void this.#drain();
          }),
        );
      }
    } catch (error) {
      // Telemetry must never break a hook.
      traceSwallowed("telemetry.record", error);
    }
  }

  /** Resolves once every line queued before the call is on disk (or failed). */
  async flush(): Promise<void> {
    while (this.#queue.length > 0 || this.#draining) {
      if (this.#draining) await this.#draining;
      else await this.#drain();
    }
  }

  #drain(): Promise<void> {
    if (this.#draining) return this.#draining;
    this.#draining = (async () => {
      try {
        while (this.#queue.length > 0) {
          const batch = this.#queue.splice(0, this.#queue.length);
          const byPath = new Map<string, string[]>();
          for (const { path, line } of batch) {
            const list = byPath.get(path) ?? [];
            list.push(line);
            byPath.set(path, list);
          }
          for (const [path, lines] of byPath) await this.#write(path, lines);
        }
      } finally {
        this.#draining = undefined;
      }
    })();
    return this.#draining;
  }

  async #write(path: string, lines: string[]): Promise<void> {
    try {
      if (!this.#secured.has(path)) {
        await mkdir(dirname(path), { recursive: true, mode: 0o700 });
      }
      await appendFile(path, lines.join(""), { mode: 0o600 });
      if (!this.#secured.has(path)) {
        // appendFile's mode applies only when it creates the file; an older file is tightened once.
        const info = await stat(path);
        if ((info.mode & 0o777) !== 0o600) await chmod(path, 0o600);
        this.#secured.add(path);
      }
      this.written += lines.length;
    } catch (error) {
      const message = `${path}: ${(error as Error).message}`;
      if (!this.#errors.has(message)) {
        this.#errors.add(message);
        this.#options.onError?.(new Error(message));
      }
    }
  }
}

/** The telemetry line for a distill pass (run end or mid-run checkpoint): sizes, ids and costs, no text. */
export function passEvent(record: GuardRecord): Omit<DistillEvent, "v" | "ts"> {
  return {
    type: "distill",
    phase: record.phase,
    model: record.model,
    savedChars: record.savedChars,
    requests: record.requests,
    inputTokens: record.inputTokens,
    costUsd: Math.round(record.costUsd * 1e9) / 1e9,
    ms: record.ms,
    timedOut: record.timedOut,
    results: record.results.map((r) => ({
      entryId: r.entryId,
      ...(r.kind ? { kind: r.kind } : {}),
      ...(r.tool ? { tool: r.tool } : {}),
      outcome: r.outcome,
      reason: r.reason,
      beforeChars: r.beforeChars,
      afterChars: r.afterChars,
    })),
  };
}

/** Records a finished pass. For the run-end (and checkpoint) code: call it right after a pass returns. */
export function recordPass(telemetry: Telemetry | undefined, record: GuardRecord | undefined): void {
  if (telemetry && record) telemetry.record(passEvent(record));
}

/** `/guard stats`: flushes what is queued, then aggregates the file line by line. */
export async function telemetryStatsReport(telemetry: Telemetry, config: GuardConfig): Promise<string> {
  await telemetry.flush();
  const path = telemetryPath(config);
  const agg = telemetryAggregator();
  try {
    await stat(path);
    const rl = createInterface({
      input: createReadStream(path, { encoding: "utf8" }),
      crlfDelay: Number.POSITIVE_INFINITY,
    });
    for await (const line of rl) agg.add(line);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") {
      return `context-guard stats: cannot read ${path} (${(error as Error).message})`;
    }
  }
  const out = formatTelemetryStats(agg.result(), path);
  if (!config.telemetry) out.push("telemetry is off (`telemetry: false`): nothing new is recorded");
  return out.join("\n");
}
