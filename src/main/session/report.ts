// What `/guard` (status) reports: the state, what is saved on this branch and in all, the classifier's
// use, and the last pass in words. Everything is read from the branch and the session's state.
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import type { BreakerState } from "../../core/classifier/breaker.ts";
import { summarizeRecord } from "../../core/records/record.ts";
import { lifetime, type Savings } from "../../core/records/stats.ts";
import type { GuardConfig } from "../../core/shared/config.ts";
import { formatCount } from "../../core/shared/text.ts";
import { type GuardRecord, RECORD_TYPE } from "../../core/shared/types.ts";
import type { ClassifierLookup } from "../pass/classifier.ts";
import { knownSecrets } from "../platform/secrets.ts";
import { lookupShort } from "./status.ts";

type Branch = ReturnType<ExtensionContext["sessionManager"]["getBranch"]>;

export interface ReportInput {
  config: GuardConfig;
  found: ClassifierLookup;
  savings: Savings;
  branch: Branch;
  paused: BreakerState;
  /** Items the user restored and other entries pinned on this branch. */
  pins?: { restored: number; pinned: number };
  /** Routing's line (session-routing.ts), when there is anything to route. */
  routing?: string;
}

/** The latest guard record on the branch. */
export function lastRecord(branch: Branch): GuardRecord | undefined {
  for (let i = branch.length - 1; i >= 0; i--) {
    const entry = branch[i];
    if (entry?.type === "custom" && entry.customType === RECORD_TYPE && entry.data && typeof entry.data === "object") {
      return entry.data as GuardRecord;
    }
  }
  return undefined;
}

export function statusReport(input: ReportInput): string {
  const { config: c, found, savings, branch, paused } = input;
  const life = lifetime(branch);
  const lines = [
    `context-guard ${c.enabled ? "on" : "off"} · model ${c.model}${found.ok ? "" : ` (${lookupShort(found)})`}`,
    `saved on this branch: ${formatCount(savings.chars)} chars (≈${formatCount(savings.chars / 4)} tokens) in ${savings.items} item(s); lifetime Σ ${formatCount(life.savedChars)} chars${life.compacted ? " (some before a compaction)" : ""}`,
    `classifier for passes: ${life.passes - life.checkpoints} run(s), ${life.checkpoints} mid-run checkpoint(s), ${life.requests} request(s), ${formatCount(life.inputTokens)} input tokens, $${life.costUsd.toFixed(4)}`,
    `old exchanges: ${c.pruneExchanges ? `judged (gate ${c.exchangeBreakEven ? "on" : "off"})` : "off"} · small outputs: ${c.smallResultMinChars > 0 ? `from ${c.smallResultMinChars} chars` : "off"} · images kept ${c.imageKeepTurns} turns`,
  ];
  if (input.pins && (input.pins.restored > 0 || input.pins.pinned > 0)) {
    lines.push(
      `restored: ${input.pins.restored} item(s) · pinned: ${input.pins.pinned} entr(ies); never judged again (/guard list)`,
    );
  }
  if (input.routing) lines.splice(3, 0, input.routing);
  if (paused.kind === "open") {
    lines.push(
      `paused: the classifier failed ${paused.failures} pass(es) in a row${paused.error ? ` (${paused.error.slice(0, 160)})` : ""}; asked again after ${new Date(paused.until).toLocaleTimeString()}`,
    );
  }
  const last = lastRecord(branch);
  if (last) {
    lines.push(`last pass (${last.phase}, ${last.ms} ms${last.timedOut ? ", timed out" : ""}):`);
    lines.push(...summarizeRecord(last, knownSecrets()).map((l) => `  ${l}`));
  }
  return lines.join("\n");
}
