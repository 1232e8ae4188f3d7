/**
 * The trade between what the guard saves and what it removes that the work still needs, per setting of the
 * pass's own keep settings (thresholds, sizes, exchange omission, keep rules).
 *
 * Labelled: each hand-labelled removal (test/fixtures/labelled-removals.json) is judged at its own run end
 * straight from its session file: the real run-end pass (local/lexical) runs on the branch up to there with
 * the setting, and the removal counts as still removed when the pass removes any of its labelled chunks (an
 * exchange: omits it). The rate is the share of needed ones among what is still removed, per half.
 * `--next-prompt` appends the next user prompt to the run's question in every classifier request, as a pass
 * judged when that prompt arrives would ask.
 *
 * Money (`--money`): the replay of the real sessions (as bench/keep-rules-money.ts), main model off − on −
 * classifier − the recalls the needed-later proxy predicts. With `--next-prompt` the replay's run-end
 * requests carry the next prompt too; with `--land-later` every run-end pass that asked the classifier lands
 * after the next run's first request (the replay's hand-over, bench/handover-money.ts, with no time limit).
 *
 *   node bench/trade-curve.ts [--half tune|report|both] [--only NAME,...] [--combine A+B] [--next-prompt]
 *                             [--money [--land-later] [--shared] [--no-labelled]] [--list]
 */
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import type { SessionEntry } from "@earendil-works/pi-coding-agent";
import { chunkOutput } from "../src/core/distill/chunk.ts";
import { removedChunks } from "../src/core/replay/proxy.ts";
import { wilson } from "../src/core/replay/proxy-quality.ts";
import { DEFAULT_CONFIG, type GuardConfig } from "../src/core/shared/config.ts";
import type { ContextEditDraft, SnapEntry } from "../src/core/shared/types.ts";
import { localClassify } from "../src/main/pass/classifier.ts";
import type { ClassifyFn } from "../src/main/pass/classify-queue.ts";
import { runPass } from "../src/main/pass/library-run-pass.ts";
import { createTaskRunner } from "../src/main/platform/pool.ts";
import { LOCAL_NOTE, replayFiles } from "../src/main/replay/command.ts";
import { messageText } from "../src/main/replay/proxy-input.ts";
import { readSessionFile, type SessionFile } from "../src/main/replay/reader.ts";
import { type LabelledRemoval, readLabelledSet, sessionPath } from "../test/kit/labelled-removals.ts";
import { indexOfLine, snapshot } from "./lib/labelled-branch.ts";
import { replaySessionPaths } from "./lib/replay-sessions.ts";

/** The defaults before this study: every setting below changes these. */
const BEFORE: Partial<GuardConfig> = { keepReads: false, smallKeepThreshold: 0.45 };

/** The settings tried, by name: changes to BEFORE. "today" is BEFORE itself. */
export const SETTINGS: Record<string, Partial<GuardConfig>> = {
  today: {},
  "keepWhole 0.6": { keepWholeThreshold: 0.6 },
  "keepWhole 0.5": { keepWholeThreshold: 0.5 },
  "focusWhole 0.5": { focusWholeThreshold: 0.5 },
  "focusWhole 0.4": { focusWholeThreshold: 0.4 },
  "chunkKeep 0.5": { chunkKeepThreshold: 0.5, midRunChunkKeepThreshold: 0.5 },
  "chunkKeep 0.4": { chunkKeepThreshold: 0.4, midRunChunkKeepThreshold: 0.4 },
  "keepWhole 0.3": { keepWholeThreshold: 0.3 },
  "focusWhole 0.2": { focusWholeThreshold: 0.2 },
  "chunkKeep 0.3": { chunkKeepThreshold: 0.3, midRunChunkKeepThreshold: 0.3 },
  "none 0.7": { noneThreshold: 0.7 },
  "none 0.9": { noneThreshold: 0.9 },
  "maxKeepRatio 0.5": { maxKeepRatio: 0.5 },
  "maxKeepRatio 0.4": { maxKeepRatio: 0.4 },
  "minResultChars 8000": { minResultChars: 8000 },
  "smallResultMinChars 1000": { smallResultMinChars: 1000 },
  "smallResultMinChars 2000": { smallResultMinChars: 2000 },
  "smallKeep 0.35": { smallKeepThreshold: 0.35 },
  "smallKeep 0.25": { smallKeepThreshold: 0.25 },
  "smallKeep 0.15": { smallKeepThreshold: 0.15 },
  "exchangeOmit 0.1": { exchangeOmitThreshold: 0.1 },
  "exchangeOmit 0.05": { exchangeOmitThreshold: 0.05 },
  "keepRecentExchanges 4": { keepRecentExchanges: 4 },
  "no exchanges": { pruneExchanges: false },
  "exclude read": { excludeTools: ["edit", "write", "read"] },
  // What became the default: reads never judged (a stale one still goes), small outputs kept from 0.35.
  keepReads: { keepReads: true },
  "new default": { keepReads: true, smallKeepThreshold: 0.35 },
  "rule editing": { keepRules: ["editing"] },
  "rule instructions": { keepRules: ["instructions"] },
  "rule continues": { keepRules: ["continues"] },
  "rule shared-names": { keepRules: ["shared-names"] },
  "rules all": { keepRules: ["editing", "instructions", "continues", "shared-names"] },
};

const { values } = parseArgs({
  options: {
    half: { type: "string", default: "tune" },
    only: { type: "string" },
    // A combination of named settings: "name+name" applies both.
    combine: { type: "string", multiple: true },
    "next-prompt": { type: "boolean", default: false },
    // Money only: the run-end edits one request later, with the question as it is.
    "land-later": { type: "boolean", default: false },
    money: { type: "boolean", default: false },
    "no-labelled": { type: "boolean", default: false },
    shared: { type: "boolean", default: false },
    sessions: { type: "string" },
    list: { type: "boolean", default: false },
  },
});

const names = values.only ? (values.only as string).split(",") : Object.keys(SETTINGS);
for (const c of values.combine ?? []) names.push(c);
function settingOf(name: string): Partial<GuardConfig> {
  return Object.assign(
    {},
    ...name.split("+").map((n) => {
      const s = SETTINGS[n];
      if (!s) throw new Error(`unknown setting ${n}; known: ${Object.keys(SETTINGS).join(", ")}`);
      return s;
    }),
  );
}
const configOf = (name: string): GuardConfig => ({
  ...DEFAULT_CONFIG,
  excludeTools: [...DEFAULT_CONFIG.excludeTools],
  model: "local/lexical",
  ...BEFORE,
  ...settingOf(name),
});

/** The classifier, with the next prompt appended to the question of run-end requests when asked to. */
function classifierWith(nextPrompt: () => string | undefined): ClassifyFn {
  const local = localClassify();
  if (!values["next-prompt"]) return local;
  return (request, opts) => {
    const next = nextPrompt();
    const state = request.state as Record<string, unknown>;
    // Run-end requests carry the final answer; a checkpoint's do not, and it has no next prompt yet.
    if (next === undefined || !("final_answer" in state) || typeof state.user_question !== "string")
      return local(request, opts);
    const question = `${state.user_question}\n\n[next prompt]\n${next}`;
    return local({ ...request, state: { ...request.state, user_question: question } }, opts);
  };
}

function userText(entry: SessionEntry | undefined): string | undefined {
  if (entry?.type !== "message") return undefined;
  const m = entry.message as { role?: string };
  return m.role === "user" ? messageText(entry.message) : undefined;
}

/** The first user message after branch index `i`: at a run end, the next prompt. */
function nextPromptAfter(file: SessionFile, i: number): string | undefined {
  for (let j = i + 1; j < file.branch.length; j++) {
    const t = userText(file.branch[j]);
    if (t !== undefined) return t;
  }
  return undefined;
}

const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
const interval = (k: number, n: number) => {
  const { low, high } = wilson(k, n);
  return `${pct(n ? k / n : 0)} [${pct(low)}, ${pct(high)}]`;
};

const runner = await createTaskRunner({ backend: "inline" });

/** Per setting, the labelled removals the pass still removes at their run end. */
async function labelled(): Promise<void> {
  const set = readLabelledSet();
  const halves = values.half === "both" ? ["tune", "report"] : [values.half as string];
  const rs = set.removals.filter((r) => halves.includes(r.half ?? ""));
  const removedBy = new Map<string, Set<LabelledRemoval>>(names.map((n) => [n, new Set()]));
  const toolOf = new Map<LabelledRemoval, string>();
  // Of those, the ones the pass removed only in part (some of the labelled chunks kept).
  const partly = new Map<string, Set<LabelledRemoval>>(names.map((n) => [n, new Set()]));
  for (const session of new Set(rs.map((r) => r.session))) {
    const file = await readSessionFile(sessionPath(session));
    const snaps = snapshot(file.branch);
    const mine = rs.filter((r) => r.session === session);
    for (const afterLine of new Set(mine.map((r) => r.afterLine))) {
      const endIndex = indexOfLine(file, afterLine);
      const entries = snaps.slice(0, endIndex + 1);
      const next = nextPromptAfter(file, endIndex);
      const here = mine.filter((r) => r.afterLine === afterLine);
      for (const name of names) {
        const result = await runPass(
          entries,
          { runner, classify: classifierWith(() => next), config: configOf(name), modelRef: "local/lexical" },
          { phase: "run-end" },
        );
        if (result.status !== "done") continue;
        const gone = removedOf(entries, result.edits, result.record.results);
        for (const r of here) {
          toolOf.set(r, r.kind === "exchange" ? "(exchange)" : (entries[indexOfLine(file, r.line)]?.toolName ?? "?"));
          const entryId = (entries[indexOfLine(file, r.line)] as SnapEntry).id;
          const g = gone.get(entryId);
          if (g === undefined) continue;
          const labelledChunks =
            r.removed === "all"
              ? chunkOutput(entries[indexOfLine(file, r.line)]?.text ?? "").map((c) => c.n)
              : r.removed;
          const hit = g === "all" || labelledChunks.some((n) => g.has(n));
          if (hit) removedBy.get(name)?.add(r);
          if (g !== "all" && labelledChunks.some((n) => !g.has(n))) partly.get(name)?.add(r);
        }
      }
    }
    process.stderr.write(`${session}: ${mine.length} removals\n`);
  }
  for (const half of halves) {
    const inHalf = rs.filter((r) => r.half === half);
    const needed = inHalf.filter((r) => r.label === "needed").length;
    console.log(
      `\n${half} half: ${inHalf.length} removals, ${needed} needed${values["next-prompt"] ? "; question + next prompt" : ""}`,
    );
    console.log("| Setting | Still removed (needed) | In part | Needed among removed (95% Wilson) |");
    console.log("|---|---:|---:|---:|");
    for (const name of names) {
      const still = inHalf.filter((r) => removedBy.get(name)?.has(r));
      const k = still.filter((r) => r.label === "needed").length;
      const part = still.filter((r) => partly.get(name)?.has(r));
      const pk = part.filter((r) => r.label === "needed").length;
      console.log(`| ${name} | ${still.length} (${k}) | ${part.length} (${pk}) | ${interval(k, still.length)} |`);
    }
    if (values.list) {
      const first = names[0] as string;
      for (const src of ["replay", "replay-aggressive", "hand-picked"])
        for (const kind of ["output", "exchange"]) {
          const of = inHalf.filter((r) => r.source === src && (r.kind ?? "output") === kind);
          const k = of.filter((r) => removedBy.get(first)?.has(r)).length;
          if (of.length) console.log(`  ${src} ${kind}: ${k} of ${of.length} still removed by ${first}`);
        }
      const tools = new Map<string, [number, number]>();
      for (const r of inHalf.filter((x) => removedBy.get(first)?.has(x))) {
        const t = tools.get(toolOf.get(r) ?? "?") ?? [0, 0];
        tools.set(toolOf.get(r) ?? "?", [t[0] + 1, t[1] + (r.label === "needed" ? 1 : 0)]);
      }
      console.log(`  still removed by ${first}, per tool (removed, needed): ${JSON.stringify([...tools])}`);
      for (const r of inHalf.filter((x) => x.label === "needed"))
        console.log(
          `  N ${names.map((n) => (partly.get(n)?.has(r) ? "r" : removedBy.get(n)?.has(r) ? "R" : ".")).join("")} ${r.session.slice(0, 24)}:${r.line} ${r.what.slice(0, 70)}`,
        );
    }
  }
}

/** What a pass removed, per entry id: chunk numbers, or "all" (a small output, an omitted exchange's prompt). */
function removedOf(
  entries: SnapEntry[],
  edits: ContextEditDraft[],
  results: ReadonlyArray<{ entryId: string; outcome: string; kind?: string }>,
): Map<string, Set<number> | "all"> {
  const shown = new Map(edits.map((e) => [e.targetId, e.replacement]));
  const byId = new Map(entries.map((e) => [e.id, e]));
  const out = new Map<string, Set<number> | "all">();
  for (const r of results) {
    if (r.outcome === "kept" || r.kind === "image") continue;
    if (r.kind === "exchange" || r.kind === "small" || r.kind === "stale") {
      out.set(r.entryId, "all");
      continue;
    }
    const text = byId.get(r.entryId)?.text ?? "";
    const s = shown.get(r.entryId);
    const gone = removedChunks(text, s ? s.content.map((b) => b.text).join("\n") : "").map((c) => c.n);
    if (gone.length === 0) continue;
    out.set(r.entryId, gone.length === chunkOutput(text).length ? "all" : new Set(gone));
  }
  return out;
}

/** Per setting, the replay's dollars saved after the recalls the proxy predicts, over the real sessions. */
async function money(): Promise<void> {
  const REPO = resolve(import.meta.dirname, "..");
  let paths = replaySessionPaths(values.shared ? resolve(REPO, "../shared/sessions") : undefined);
  if (values.sessions) paths = paths.filter((p) => (values.sessions as string).split(",").some((s) => p.includes(s)));
  const pool = await createTaskRunner({ backend: "piscina", minThreads: 1, maxThreads: 1 });
  console.log(
    `\nReplay, local/lexical, ${paths.length} sessions, ${new Date().toISOString()}${values["next-prompt"] ? ", question + next prompt" : ""}${values["land-later"] ? ", run-end edits one request later" : ""}`,
  );
  console.log(
    "| Setting | Guard off | Saved before recalls | Recalls | Saved after recalls | Likely needed / removed |",
  );
  console.log("|---|---:|---:|---:|---:|---:|");
  for (const name of names) {
    const t = { off: 0, before: 0, recalls: 0, removed: 0, likely: 0 };
    for (const path of paths) {
      const file = await readSessionFile(path);
      let done = 0;
      // The hand-over's time limit, lifted: every run-end pass that asked lands after the next first request.
      const config = { ...configOf(name), ...(values["land-later"] ? { timeoutMs: 2_147_483_647 } : {}) };
      const classify = classifierWith(() => nextPromptAfter(file, done));
      const { report } = await replayFiles([path], {
        classifier: { ref: "local/lexical", note: LOCAL_NOTE, classify },
        config,
        runner: pool,
        progress: {
          update: (_l: string, d: number) => {
            done = d;
          },
          clear: () => {},
        },
      });
      const s = report.sessions[0];
      const off = s?.dollars?.off ?? 0;
      const recalls = s?.harm?.dollars ?? 0;
      t.off += off;
      t.before += off - (s?.dollars?.on ?? 0) - (s?.dollars?.classifier ?? 0);
      t.recalls += recalls;
      t.removed += s?.totals.proxy.removed ?? 0;
      t.likely += s?.totals.proxy.likelyNeeded.items ?? 0;
      const saved = off - (s?.dollars?.on ?? 0) - (s?.dollars?.classifier ?? 0) - recalls;
      process.stderr.write(`${name} | ${path.split("/").at(-1)} | $${saved.toFixed(2)} after recalls\n`);
    }
    console.log(
      `| ${name} | $${t.off.toFixed(2)} | $${t.before.toFixed(2)} | $${t.recalls.toFixed(2)} | $${(t.before - t.recalls).toFixed(2)} | ${t.likely} / ${t.removed} |`,
    );
  }
  await pool.destroy();
}

if (!values["no-labelled"]) await labelled();
if (values.money) await money();
await runner.destroy();
process.exit(0);
