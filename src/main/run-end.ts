// One run-end pass: the plan and the rendering run in the worker pool, the classifier requests go
// through the queue in between. Only data crosses threads; nothing here blocks on CPU work.
import type { GuardConfig } from "../core/config.ts";
import { buildRecord, recordDraft } from "../core/record.ts";
import type { ContextEditDraft, CustomDraft, GuardRecord, SnapEntry } from "../core/types.ts";
import { type ClassifyFn, classifyAll } from "./classify-queue.ts";
import type { TaskRunner } from "./pool.ts";
import type { Validation } from "./validate.ts";

export interface RunEndDeps {
  runner: TaskRunner;
  classify: ClassifyFn;
  config: GuardConfig;
  modelRef: string;
  /** Checks the edits against the context they will be applied to; rejected ones become "kept". */
  validate?: (edits: ContextEditDraft[]) => Validation;
  /** Called once the pass knows it will ask the classifier (for the busy status). */
  onJudging?: () => void;
}

export type RunEndResult =
  | { status: "skipped"; reason: string }
  | { status: "done"; edits: ContextEditDraft[]; record: GuardRecord; recordDraft: CustomDraft };

export async function distillRunEnd(entries: SnapEntry[], deps: RunEndDeps): Promise<RunEndResult> {
  const { config } = deps;
  const plan = await deps.runner.run("plan", { entries, config });
  if (plan.status === "skip") return { status: "skipped", reason: plan.reason };
  deps.onJudging?.();
  const queued = await classifyAll(plan.requests, deps.classify, {
    concurrency: config.concurrency,
    timeoutMs: config.timeoutMs,
  });
  const byId = new Map<string, SnapEntry>();
  for (const entry of entries) byId.set(entry.id, entry);
  const texts = plan.candidates.map((c) => byId.get(c.entryId)?.text ?? "");
  const finished = await deps.runner.run("finish", {
    candidates: plan.candidates,
    texts,
    outcomes: queued.outcomes,
    citedFiles: plan.citedFiles,
    config,
  });
  let edits = finished.drafts;
  let results = finished.results;
  if (deps.validate) {
    const { valid, dropped } = deps.validate(edits);
    if (dropped.length > 0) {
      const why = new Map(dropped.map((d) => [d.draft.targetId, d.why]));
      edits = valid;
      results = results.map((r) =>
        why.has(r.entryId)
          ? { ...r, outcome: "kept", reason: `rejected: ${why.get(r.entryId)}`, afterChars: r.beforeChars }
          : r,
      );
    }
  }
  let inputTokens = 0;
  let costUsd = 0;
  for (const o of queued.outcomes) {
    inputTokens += o.inputTokens ?? 0;
    costUsd += o.costUsd ?? 0;
  }
  const record = buildRecord({
    phase: "run-end",
    model: deps.modelRef,
    results,
    requests: queued.sent,
    inputTokens,
    costUsd,
    ms: queued.ms,
    timedOut: queued.timedOut,
  });
  return { status: "done", edits, record, recordDraft: recordDraft(record) };
}
