// What `/guard` (status) says, in words: on or off and with which classifier, what it saved so far in
// dollars (net of the classifier) and what it saves per request ahead, the last pass in one line, and
// what is waiting. The last pass item by item is `/guard trace`. Everything is read from the branch, the
// session's state and the latest live figure; lines are fitted to the terminal's width.
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import { wrapTextWithAnsi } from "@earendil-works/pi-tui";
import type { BoundaryState } from "../../core/boundary/boundary-state.ts";
import type { CacheDoubt } from "../../core/cache/cache-doubt.ts";
import type { BreakerState } from "../../core/classifier/breaker.ts";
import { type MissEntryLike, missesLine, sessionMisses } from "../../core/records/misses.ts";
import { summarizeRecord } from "../../core/records/record.ts";
import { lifetime, type Savings } from "../../core/records/stats.ts";
import { perRequestAhead, type SavedSoFar } from "../../core/replay/saved-so-far.ts";
import type { GuardConfig } from "../../core/shared/config.ts";
import { redact } from "../../core/shared/redact.ts";
import { count, formatCount } from "../../core/shared/text.ts";
import { type GuardRecord, RECORD_TYPE } from "../../core/shared/types.ts";
import type { ClassifierLookup } from "../pass/classifier.ts";
import { knownSecrets } from "../platform/secrets.ts";
import type { Swallowed } from "../platform/swallowed.ts";
import { dollars } from "../replay/summary-money.ts";
import { lookupProblem, lookupShort, workersProblem } from "./status.ts";

type Branch = ReturnType<ExtensionContext["sessionManager"]["getBranch"]>;

export interface ReportInput {
  config: GuardConfig;
  found: ClassifierLookup;
  /** Why the pass pool's threads do not start, while they do not. */
  workers?: string;
  savings: Savings;
  branch: Branch;
  paused: BreakerState;
  /** What the session's boundaries are doing (boundary.ts). */
  boundary?: BoundaryState;
  /** Items the user restored and other entries pinned on this branch. */
  pins?: { restored: number; pinned: number };
  /** Routing's line (session-routing.ts), when there is anything to route. */
  routing?: string;
  /** The latest live dollars, once computed. */
  dollars?: SavedSoFar;
  /** The cache view the last pass's gates acted on (PassPipeline.lastGate). */
  gate?: { family: string; doubt?: CacheDoubt };
  /** Restores that land at the next boundary. */
  pendingRestores?: number;
  /** The terminal's width; lines are wrapped to it. */
  width?: number;
  now?: number;
}

/** The widest `/guard` is, even on a wider terminal: a status reads better short. */
const MAX_WIDTH = 100;

/** The latest guard record on the branch, and when it was written. */
function lastRecord(branch: Branch): (GuardRecord & { at?: number }) | undefined {
  for (let i = branch.length - 1; i >= 0; i--) {
    const entry = branch[i];
    if (entry?.type === "custom" && entry.customType === RECORD_TYPE && entry.data && typeof entry.data === "object") {
      const at = Date.parse(entry.timestamp);
      return { ...(entry.data as GuardRecord), ...(Number.isFinite(at) ? { at } : {}) };
    }
  }
  return undefined;
}

function ago(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return "just now";
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  return `${Math.round(s / 3600)} h ago`;
}

/**
 * The money line: saved so far, or plainly that the guard has cost more so far. With `prefix` (e.g.
 * "This session, ") the sentence goes on after it.
 */
export function moneyLine(saved: SavedSoFar | undefined, prefix = ""): string {
  const line = moneySentence(saved);
  return prefix ? `${prefix}${line.charAt(0).toLowerCase()}${line.slice(1)}` : line;
}

function moneySentence(saved: SavedSoFar | undefined): string {
  if (!saved || saved.requests === 0 || (saved.off === saved.on && saved.classifier === 0)) {
    return "Saved so far: nothing yet.";
  }
  if (!saved.priced) {
    return `Saved so far: ≈${formatCount(saved.tokens)} prompt tokens not sent (no price for the model in Pi's registry).`;
  }
  const classifier = saved.classifier > 0 ? `, after the classifier's ${dollars(saved.classifier)}` : "";
  if (saved.net >= 0) {
    return `Saved so far: ${dollars(saved.net)}${classifier} (≈${formatCount(saved.tokens)} prompt tokens not sent).`;
  }
  return `So far the guard has cost ${dollars(-saved.net)} more than it saved: the cache is written again after an edit${saved.classifier > 0 ? " and the classifier is paid" : ""}; later requests earn it back.`;
}

/** What each further request saves at today's context. */
function aheadLine(saved: SavedSoFar | undefined): string | undefined {
  const per = saved ? perRequestAhead(saved) : undefined;
  if (per === undefined || per <= 0) return undefined;
  return `Ahead: each further request costs ≈${dollars(per)} less at today's context.`;
}

const FAMILY_WORDS: Record<string, string> = {
  anthropic: "explicit cache writes",
  "openai-codex": "a cache lost at any change",
  other: "automatic prefix caching",
  none: "no cache",
};

/** The cache model the bill contradicts, and whether the gates already act on the conservative view. */
function doubtLine(input: ReportInput): string | undefined {
  const gated = input.gate?.doubt;
  const doubt = gated ?? input.dollars?.misses?.[0];
  if (!doubt) return undefined;
  const off = `${doubt.error >= 0 ? "+" : "−"}${Math.abs(doubt.error * 100).toFixed(1)}%`;
  const head = `Cache model: ${doubt.model} misses its recorded dollars by ${off} after fitting, so what this session taught about its cache is not acted on`;
  if (gated && input.gate) {
    return `${head}: the last pass gated edits on the conservative view (${FAMILY_WORDS[input.gate.family] ?? input.gate.family}, the dearer of the learned one and Pi's provider code at list prices, no pins).`;
  }
  return `${head}: the next pass gates edits on the conservative view (the dearer of the learned one and Pi's provider code at list prices, no pins).`;
}

/** A pass's time: milliseconds under 0.1 s, where one decimal of a second would read "0.0 s". */
export function passTime(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return "an unknown time";
  if (ms < 1) return "under 1 ms";
  return ms < 100 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

/** The last pass in one line. */
function lastPassLine(last: GuardRecord & { at?: number }, now: number): string {
  const results = Array.isArray(last.results) ? last.results : [];
  const changed = results.filter((r) => r && r.outcome !== "kept");
  const kept = results.length - changed.length;
  const when = last.at !== undefined ? `${ago(now - last.at)}, ` : "";
  const phase = last.phase === "mid-run" ? "mid-run checkpoint" : "end of a run";
  const what =
    changed.length > 0
      ? `replaced ${count(changed.length, "item")} (${formatCount(last.savedChars)} chars kept out)${kept ? `, kept ${kept}` : ""}`
      : results.length > 0
        ? `kept all ${count(results.length, "item")}`
        : "nothing to judge";
  const time = `${passTime(last.ms)}${last.timedOut ? ", timed out" : ""}`;
  return `Last pass (${when}${phase}): ${what} in ${time}.`;
}

/** The pass behind the agent, if one is pending. */
function behindLine(state: BoundaryState | undefined): string | undefined {
  if (state?.kind !== "background") return undefined;
  const what = state.phase === "mid-run" ? "a checkpoint" : "a run-end pass";
  return `${what} going on behind the agent${state.asking ? ", asking the classifier" : ""}, landing at a later boundary`;
}

export function statusReport(input: ReportInput): string {
  const { config: c, found, savings, branch, paused } = input;
  const now = input.now ?? Date.now();
  // On but judging nothing: the first line says so, the second what is missing and how to fix it.
  const stuck = c.enabled && (!found.ok || input.workers !== undefined);
  const lines = [
    `context-guard is ${c.enabled ? "on" : "off"}${stuck ? ", but judges nothing" : ""} · classifier ${c.model}${found.ok ? "" : ` (${lookupShort(found)})`}`,
  ];
  if (c.enabled && input.workers !== undefined) lines.push(`Not working: ${workersProblem(input.workers)}.`);
  else if (c.enabled && !found.ok) lines.push(`Not working: ${lookupProblem(found)}.`);
  if (c.enabled) {
    lines.push(moneyLine(input.dollars));
    if (savings.items > 0) {
      lines.push(
        `Now: ${formatCount(savings.chars / 4)} tokens kept out of the context (${count(savings.items, "item")}).`,
      );
    }
    const ahead = aheadLine(input.dollars);
    if (ahead) lines.push(ahead);
    const doubt = doubtLine(input);
    if (doubt) lines.push(doubt);
  }
  const last = lastRecord(branch);
  if (last) lines.push(lastPassLine(last, now));
  const life = lifetime(branch);
  if (life.passes > 0) {
    lines.push(
      `Classifier on this branch: ${count(life.passes, "pass", "passes")}, ${count(life.requests, "request")}, ${dollars(life.costUsd)}.`,
    );
  }
  const misses = missesLine(sessionMisses(branch as readonly MissEntryLike[]));
  if (misses) lines.push(misses);
  if (input.routing) lines.push(input.routing);
  const waiting: string[] = [];
  if (input.pendingRestores) waiting.push(`${count(input.pendingRestores, "restore")} at the next boundary`);
  const behind = behindLine(input.boundary);
  if (behind) waiting.push(behind);
  if (paused.kind === "open") {
    waiting.push(
      `the classifier failed ${count(paused.failures, "pass", "passes")} in a row and is asked again at ${new Date(paused.until).toLocaleTimeString()}`,
    );
  }
  if (waiting.length) lines.push(`Waiting: ${waiting.join("; ")}.`);
  if (input.pins && (input.pins.restored > 0 || input.pins.pinned > 0)) {
    lines.push(
      `You restored ${count(input.pins.restored, "item")} and pinned ${count(input.pins.pinned, "entry", "entries")}; they are not judged again.`,
    );
  }
  lines.push("More: /guard list (what is out), /guard trace (the last pass item by item), /guard stats.");
  return fitLines(lines, input.width);
}

/** `/guard trace`: the last pass item by item, with the classifier's traces, and the errors gone past. */
export function traceReport(branch: Branch, width?: number, caught: readonly Swallowed[] = []): string {
  const last = lastRecord(branch);
  const lines = last
    ? [
        `Last pass (${last.phase}, ${last.ms} ms${last.timedOut ? ", timed out" : ""}), ${count(Array.isArray(last.results) ? last.results.length : 0, "item")}:`,
        ...summarizeRecord(last, knownSecrets()).map((l) => `  ${l}`),
      ]
    : ["context-guard: no pass on this branch yet."];
  if (caught.length > 0) {
    lines.push("Errors caught and gone past (latest last):");
    for (const c of caught)
      lines.push(`  ${c.where}: ${redact(c.message, knownSecrets())}${c.count > 1 ? ` ×${c.count}` : ""}`);
  }
  return fitLines(lines, width);
}

/** Lines wrapped to the width (at most MAX_WIDTH); a wrapped line's rest is indented. */
function fitLines(lines: readonly string[], width = MAX_WIDTH): string {
  const w = Math.max(40, Math.min(width, MAX_WIDTH));
  const out: string[] = [];
  for (const line of lines) {
    const indent = /^\s*/.exec(line)?.[0] ?? "";
    const [first, ...rest] = wrapTextWithAnsi(line, w);
    out.push(first ?? "");
    if (rest.length > 0) {
      const hang = `${indent}  `;
      for (const r of wrapTextWithAnsi(rest.map((x) => x.trimStart()).join(" "), w - hang.length)) out.push(hang + r);
    }
  }
  return out.join("\n");
}
