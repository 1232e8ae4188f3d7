// Where the main thread's time goes in one pass, step by step, on the same passes as the sessions
// benchmark: building the snapshot, the mirror's diff, serializing the plan task's input (what
// postMessage does on the main thread), deserializing the plan (which carries every classifier request)
// and the finish result, pi-ai's JSON.stringify of each request body, and validateEdits. The pool's
// transport is replaced by v8.serialize/deserialize of the same values (the same V8 serializer
// postMessage uses), and the tasks run inline so their worker-side time is reported too.
import { deserialize, serialize } from "node:v8";
import type { SnapEntry } from "../../src/core/shared/types.ts";
import type { ClassifyFn } from "../../src/main/pass/classify-queue.ts";
import { PassWorker } from "../../src/main/pass/pass-worker.ts";
import { runPass } from "../../src/main/pass/run-pass.ts";
import { SnapshotBuilder } from "../../src/main/pass/snapshot.ts";
import { validateEdits } from "../../src/main/pass/validate.ts";
import { WorkerMirror } from "../../src/main/pass/worker-mirror.ts";
import { createTaskRunner, type TaskRunner } from "../../src/main/platform/pool.ts";
import type { PassMessage, SyncInput } from "../../src/workers/pass/protocol.ts";
import { MODEL_REF } from "../../test/kit/hook.ts";
import { settle, timeSync } from "../../test/kit/stall.ts";
import type { BenchMode } from "../lib/mode.ts";
import type { PassEnv } from "../lib/pass.ts";
import { appendedRun, baseSession, SessionSim, sentChars } from "../lib/workloads.ts";

export interface BreakdownSample {
  size: number;
  pass: string;
  rep: number;
  contextEntries: number;
  /** Main thread, ms. */
  snapshotMs: number;
  prepareMs: number;
  /** v8.serialize of the sync and plan task inputs ≈ postMessage's work (total); their size. */
  syncSerializeMs: number;
  /** The largest single one of those messages. */
  syncMaxSerializeMs: number;
  syncBytes: number;
  sentEntries: number;
  sentChars: number;
  /** Main-thread CPU before the plan runs: snapshot + prepare + serialize (paced in the product). */
  firstBlockMs: number;
  /** v8.deserialize of the plan result (requests included) on the main thread; its size. */
  planDeserializeMs: number;
  planBytes: number;
  requests: number;
  /** Questions in those requests, and how many of them ask about an old exchange. */
  questions?: number;
  exchangeQuestions?: number;
  /** pi-ai builds each body with JSON.stringify on the main thread: total and the largest single one. */
  stringifyTotalMs: number;
  stringifyMaxMs: number;
  requestChars: number;
  finishSerializeMs: number;
  /** Receiving the finish result (all parts) and the largest part. */
  finishDeserializeMs: number;
  finishMaxDeserializeMs: number;
  validateMs: number;
  /** Worker side (run inline here): the plan and finish tasks. */
  planTaskMs: number;
  finishTaskMs: number;
}

/** Times the mirror's diff straight through (the product paces it; the CPU is the same). */
class TimedMirror extends WorkerMirror {
  prepareMs = 0;
  override prepare(entries: readonly SnapEntry[]): SyncInput {
    const t = timeSync(() => super.prepare(entries));
    this.prepareMs += t.ms;
    return t.value;
  }
  override async preparePaced(entries: readonly SnapEntry[]): Promise<SyncInput> {
    return this.prepare(entries);
  }
}

type Step = Omit<BreakdownSample, "size" | "pass" | "rep" | "contextEntries" | "snapshotMs" | "firstBlockMs">;

function emptyStep(): Step {
  return {
    prepareMs: 0,
    syncSerializeMs: 0,
    syncMaxSerializeMs: 0,
    syncBytes: 0,
    sentEntries: 0,
    sentChars: 0,
    planDeserializeMs: 0,
    planBytes: 0,
    requests: 0,
    questions: 0,
    exchangeQuestions: 0,
    stringifyTotalMs: 0,
    stringifyMaxMs: 0,
    requestChars: 0,
    finishSerializeMs: 0,
    finishDeserializeMs: 0,
    finishMaxDeserializeMs: 0,
    validateMs: 0,
    planTaskMs: 0,
    finishTaskMs: 0,
  };
}

/** An inline runner that also does what the pool's transport would do, timing each side. */
function transportRunner(inner: TaskRunner, step: () => Step): TaskRunner {
  return {
    backend: "inline",
    destroy: () => inner.destroy(),
    run: async (name, input, options) => {
      const s = step();
      const ser = timeSync(() => serialize(input));
      const kind = name === "pass" ? (input as PassMessage).kind : name;
      if (kind === "plan" || kind === "sync") {
        const sync: SyncInput = (input as { sync: SyncInput }).sync;
        s.syncSerializeMs += ser.ms;
        s.syncMaxSerializeMs = Math.max(s.syncMaxSerializeMs, ser.ms);
        s.syncBytes += ser.value.length;
        s.sentEntries += sync.fresh.length;
        s.sentChars += sentChars(sync.fresh) + (sync.pieces ?? []).reduce((n, p) => n + p.part.length, 0);
      } else if (kind === "finish") s.finishSerializeMs += ser.ms;
      const t0 = performance.now();
      const out = await inner.run(name, input, options);
      const taskMs = performance.now() - t0;
      const bytes = serialize(out);
      const de = timeSync(() => deserialize(bytes));
      if (kind === "plan") {
        s.planTaskMs += taskMs;
        s.planDeserializeMs += de.ms;
        s.planBytes += bytes.length;
      } else if (kind === "finish" || kind === "finishPart") {
        s.finishTaskMs += taskMs;
        s.finishDeserializeMs += de.ms;
        s.finishMaxDeserializeMs = Math.max(s.finishMaxDeserializeMs, de.ms);
      }
      return out;
    },
  };
}

export async function runBreakdown(
  mode: BenchMode,
  env: PassEnv,
  log: (line: string) => void,
): Promise<BreakdownSample[]> {
  const samples: BreakdownSample[] = [];
  const inline = await createTaskRunner({ backend: "inline" });
  let step = emptyStep();
  const runner = transportRunner(inline, () => step);
  const classify: ClassifyFn = (request, options) => {
    const body = timeSync(() => JSON.stringify({ model: "~typesafe/jev-latest", ...request }));
    step.stringifyTotalMs += body.ms;
    step.stringifyMaxMs = Math.max(step.stringifyMaxMs, body.ms);
    step.requestChars += body.value.length;
    step.requests++;
    const ids = Object.keys(request.questions);
    step.questions = (step.questions ?? 0) + ids.length;
    step.exchangeQuestions = (step.exchangeQuestions ?? 0) + ids.filter((id) => id.startsWith("exchange_")).length;
    return env.classify(request, options);
  };
  const reps = Math.min(mode.reps, 3);
  for (const size of mode.sessionSizes) {
    const base = baseSession(size);
    const appended = new Map(
      mode.steps.map((s) => [s, appendedRun(s, 1000 + s, `s${size}n${s}`, base.at(-1)?.id ?? null)]),
    );
    for (let rep = -1; rep < reps; rep++) {
      const sim = new SessionSim(base);
      const snapshots = new SnapshotBuilder();
      const mirror = new TimedMirror(snapshots);
      for (const [label, n] of [["cold", undefined], ...mode.steps.map((s) => [`+${s}`, s] as const)] as const) {
        if (n !== undefined) sim.append(appended.get(n) ?? []);
        const context = sim.project();
        step = emptyStep();
        mirror.prepareMs = 0;
        const snap = timeSync(() => snapshots.entries(context));
        const result = await runPass(
          snap.value,
          {
            worker: new PassWorker(runner, { mirror }),
            classify,
            config: env.config,
            modelRef: MODEL_REF,
            validate: (edits) => {
              const v = timeSync(() => validateEdits(edits, context, (id) => snapshots.positionOf(id)));
              step.validateMs += v.ms;
              return v.value;
            },
          },
          { phase: "run-end" },
        );
        step.prepareMs = mirror.prepareMs;
        if (rep >= 0)
          samples.push({
            size,
            pass: label,
            rep,
            contextEntries: context.length,
            snapshotMs: snap.ms,
            firstBlockMs: snap.ms + step.prepareMs + step.syncSerializeMs,
            ...step,
          });
        if (result.status === "done") sim.applyPass(result.edits, result.recordDraft);
        await settle(5);
      }
    }
    log(`  breakdown ${size}: done`);
  }
  return samples;
}
