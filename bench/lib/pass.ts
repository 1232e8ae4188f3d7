// One measured hook run: stall while it runs, its duration, and what it sent and asked.
import type { GuardConfig } from "../../src/core/shared/config.ts";
import type { ClassifyFn } from "../../src/main/pass/classify-queue.ts";
import type { ProjectedLike } from "../../src/main/pass/snapshot.ts";
import { type HookAdapter, type HookResult, runHook } from "../../test/kit/hook.ts";
import { measureStall, type ProbeMode, type StallStats } from "../../test/kit/stall.ts";
import { sentChars } from "./workloads.ts";

export interface PassSample {
  backend: string;
  probe: ProbeMode;
  rep: number;
  /** Hook start → return, ms. */
  ms: number;
  stall: StallStats;
  /** Main-thread CPU during the hook (quiet probe only), ms. */
  cpuMs?: number;
  status: HookResult["status"];
  reason?: string;
  requests: number;
  /** ceil(requests / concurrency): sequential classifier round trips at the configured latency. */
  waves: number;
  /** ms − latency × waves: the pipeline's own share of the settle time. */
  overheadMs: number;
  /** ms − classifier queue time: everything but the classifier (snapshot, sync, plan, finish, validate). */
  pipelineMs: number;
  timedOut: boolean;
  edits: number;
  /** Entries sent to the pass worker (new or edited) and their characters (text + raw text). */
  sentEntries: number;
  sentChars: number;
  /** Of those, entries under a context_edit (their raw text travels too). */
  sentEdited: number;
  /** Entries in the projection. */
  contextEntries: number;
  /** The benchmark process's V8 heap in use when the hook started, MiB (what its GC pauses scale with). */
  heapMb?: number;
}

/** The backend name of piscina passes whose classifier requests go out from the main thread. */
export const HTTP_ON_MAIN = "piscina, HTTP on main";

export interface PassEnv {
  /** The classifier as the extension calls it (pi-ai's client, its HTTP on the extension's HTTP thread). */
  classify: ClassifyFn;
  /**
   * For the inline backend, a main-thread implementation of the whole pass: the same client with its
   * HTTP on the main thread. Defaults to `classify`.
   */
  classifyInline?: ClassifyFn;
  config: GuardConfig;
  latencyMs: number;
}

export async function measurePass(
  session: HookAdapter,
  context: ProjectedLike[],
  env: PassEnv,
  probe: ProbeMode,
  rep: number,
): Promise<{ sample: PassSample; result: HookResult }> {
  const heapMb = Math.round(process.memoryUsage().heapUsed / 2 ** 20);
  const classify = session.runner.backend === "inline" ? (env.classifyInline ?? env.classify) : env.classify;
  const m = await measureStall(() => runHook(session, context, classify, env.config), probe);
  const result = m.value;
  const traffic = session.runner.traffic;
  const waves = Math.ceil(result.requests / env.config.concurrency);
  const sample: PassSample = {
    backend: session.runner.backend,
    probe,
    rep,
    ms: m.ms,
    stall: m.stall,
    status: result.status,
    requests: result.requests,
    waves,
    overheadMs: m.ms - env.latencyMs * waves,
    pipelineMs: m.ms - result.classifierMs,
    timedOut: result.timedOut,
    edits: result.edits.length,
    sentEntries: traffic.fresh.length,
    sentChars: sentChars(traffic.fresh) + traffic.pieceChars,
    sentEdited: traffic.fresh.filter((e) => e.edited).length,
    contextEntries: context.length,
    heapMb,
  };
  if (m.cpuMs !== undefined) sample.cpuMs = m.cpuMs;
  if (result.reason !== undefined) sample.reason = result.reason;
  return { sample, result };
}
