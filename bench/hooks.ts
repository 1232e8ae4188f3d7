/**
 * Main-thread cost of the hooks besides run end: a mid-run checkpoint at turn_end (pool vs inline), the
 * Anthropic breakpoint pass in before_provider_request, and a footer redraw (snapshot + savings +
 * lifetime), on generated sessions of 2,000 and 10,000 entries.
 *
 *   npm run bench:hooks            # quick: 2,000 entries, 3 repetitions
 *   npm run bench:hooks -- --full  # 2,000 and 10,000 entries, 7 repetitions; writes bench/HOOKS.md
 */
import { writeFileSync } from "node:fs";
import { cpus, totalmem } from "node:os";
import { parseArgs } from "node:util";
import { type AnthropicPayload, placeGuardBreakpoints } from "../src/core/cache/cache-pin.ts";
import { currentSavings, lifetime } from "../src/core/records/stats.ts";
import type { ContextEditDraft } from "../src/core/shared/types.ts";
import { PassPipeline } from "../src/main/pass/pass-pipeline.ts";
import { SnapshotBuilder } from "../src/main/pass/snapshot.ts";
import type { PoolBackend } from "../src/main/platform/pool.ts";
import { CachePins } from "../src/main/session/cache-pins.ts";
import type { SessionEntryLike } from "../test/kit/generate.ts";
import { benchConfig, loopbackClassify, MODEL_REF, passRunner, startedThreadFetch } from "../test/kit/hook.ts";
import { startLoopbackHost } from "../test/kit/loopback-host.ts";
import { measureStall, ownStall } from "../test/kit/stall.ts";
import { summarize } from "./lib/stats.ts";
import { appendedRun, baseSession, SessionSim } from "./lib/workloads.ts";

const { values } = parseArgs({
  options: { full: { type: "boolean", default: false }, small: { type: "boolean", default: false } },
});
// --small is the smoke size (.ci/run): it checks the script runs, its figures mean nothing.
const sizes = values.full ? [2_000, 10_000] : values.small ? [200] : [2_000];
const reps = values.full ? 7 : values.small ? 1 : 3;

const fmt = (n: number) => (n >= 100 ? n.toFixed(0) : n >= 10 ? n.toFixed(1) : n.toFixed(2));
const cell = (xs: number[]) => {
  const s = summarize(xs);
  return `${fmt(s.median)} / ${fmt(s.max)}`;
};

/** A prefix of the session that ends in the middle of its final run, right after a turn's tool results. */
function midRun(entries: SessionEntryLike[]): SessionEntryLike[] {
  for (let i = entries.length - 2; i > entries.length / 2; i--) {
    const e = entries[i] as { type: string; message?: { role?: string } };
    const next = entries[i + 1] as { type: string; message?: { role?: string } };
    if (e.message?.role === "toolResult" && next.message?.role === "assistant") return entries.slice(0, i + 1);
  }
  return entries;
}

/** Pi's Anthropic payload for a context: user/assistant messages with tool_use and tool_result blocks. */
function anthropicPayload(entries: SessionEntryLike[]): AnthropicPayload {
  const messages: NonNullable<AnthropicPayload["messages"]> = [];
  for (const e of entries) {
    const m = e.message as { role?: string; content?: unknown; toolCallId?: string } | undefined;
    if (e.type !== "message" || !m) continue;
    if (m.role === "user") messages.push({ role: "user", content: [{ type: "text", text: "prompt" }] });
    else if (m.role === "assistant") messages.push({ role: "assistant", content: [{ type: "text", text: "…" }] });
    else if (m.role === "toolResult") {
      const block = { type: "tool_result", tool_use_id: m.toolCallId, content: "…" };
      const last = messages.at(-1);
      if (last?.role === "user" && Array.isArray(last.content) && last.content[0]?.type === "tool_result")
        last.content.push(block);
      else messages.push({ role: "user", content: [block] });
    }
  }
  const last = messages.at(-1)?.content;
  if (Array.isArray(last)) (last.at(-1) as Record<string, unknown>).cache_control = { type: "ephemeral" };
  return { system: [{ type: "text", text: "sys", cache_control: { type: "ephemeral" } }], tools: [], messages };
}

interface Row {
  label: string;
  values: string[];
}

const host = await startLoopbackHost({ latencyMs: 20, keyword: "\\b(error|fail(ed|ure|s)?)\\b", flags: "i" });
// The classifier as the extension calls it (HTTP on its own thread); the inline backend, as a main-thread
// implementation of the whole pass, sends its requests from the main thread.
const http = await startedThreadFetch();
const threaded = loopbackClassify(host.baseUrl, http.fetch);
const onMain = loopbackClassify(host.baseUrl);
const config = benchConfig({ midRunBreakEven: false, timeoutMs: 600_000 });
const rows: Row[] = [];

for (const size of sizes) {
  const prefix = midRun(baseSession(size));

  // turn_end: a checkpoint pass through the extension's PassPipeline (paced snapshot, pass, paced
  // validation), cold (the session's first pass) and the next checkpoint after the first one's edits and
  // 20 new entries.
  for (const backend of ["piscina", "inline"] as PoolBackend[]) {
    const runner = await passRunner(backend);
    const classify = backend === "inline" ? onMain : threaded;
    const cold: number[] = [];
    const warm: number[] = [];
    for (let r = 0; r < reps; r++) {
      const run = new SessionSim(prefix);
      const guard = new PassPipeline({ config, runner });
      const checkpoint = async () => {
        const { result } = await guard.pass({
          phase: "mid-run",
          context: run.project(),
          classify,
          modelRef: MODEL_REF,
          family: "anthropic",
        });
        if (result.status === "done") run.applyPass(result.edits, result.recordDraft);
      };
      cold.push(ownStall((await measureStall(checkpoint, "quiet")).stall));
      run.append(appendedRun(20, 500 + r, `turn${r}`, run.lastId));
      warm.push(ownStall((await measureStall(checkpoint, "quiet")).stall));
      // Drop the session's copy: with the inline backend it lives on this thread, and the measurements
      // after this one must not carry a copy Pi's thread never holds.
      await guard.worker.release();
    }
    await runner.destroy();
    rows.push({ label: `turn_end checkpoint, ${size} entries, ${backend}`, values: [cell(cold), cell(warm)] });
  }

  // Warm-up at the session's first agent_start: the snapshot built paced and the session sent to the pass
  // worker while the main model works (WarmUp.warm), then the resumed session's first run-end
  // pass; the same first pass without the warm-up (cold mirror, empty snapshot cache) alongside. The order
  // alternates per repetition.
  {
    const runner = await passRunner("piscina");
    const warmUp: number[] = [];
    const warmUpMs: number[] = [];
    const warmedStall: number[] = [];
    const coldStall: number[] = [];
    const warmedMs: number[] = [];
    const coldMs: number[] = [];
    const whole = baseSession(size);
    for (let r = 0; r < reps; r++) {
      const sim = new SessionSim(whole);
      const firstPass = (guard: PassPipeline) => () =>
        guard.pass({
          phase: "run-end",
          context: sim.project(),
          classify: threaded,
          modelRef: MODEL_REF,
          family: "anthropic",
        });
      const warmed = async () => {
        const guard = new PassPipeline({ config, runner });
        const w = await measureStall(() => guard.warm(sim.project()), "quiet");
        warmUp.push(ownStall(w.stall));
        warmUpMs.push(w.ms);
        const m = await measureStall(firstPass(guard), "quiet");
        warmedStall.push(ownStall(m.stall));
        warmedMs.push(m.ms);
        await guard.worker.release();
      };
      const cold = async () => {
        const guard = new PassPipeline({ config, runner });
        const m = await measureStall(firstPass(guard), "quiet");
        coldStall.push(ownStall(m.stall));
        coldMs.push(m.ms);
        await guard.worker.release();
      };
      if (r % 2 === 0) {
        await warmed();
        await cold();
      } else {
        await cold();
        await warmed();
      }
    }
    await runner.destroy();
    rows.push({
      label: `warm-up at the first agent_start, ${size} entries: stall · duration`,
      values: [cell(warmUp), cell(warmUpMs)],
    });
    rows.push({
      label: `first run_end pass, ${size} entries: stall after warm-up · cold`,
      values: [cell(warmedStall), cell(coldStall)],
    });
    rows.push({
      label: `first run_end pass, ${size} entries: settle after warm-up · cold`,
      values: [cell(warmedMs), cell(coldMs)],
    });
  }

  // before_provider_request: the breakpoint pass alone, and with the cache log's branch walk.
  const payload = anthropicPayload(prefix);
  const pure: number[] = [];
  const withLog: number[] = [];
  const byId = new Map(prefix.map((e) => [e.id, e]));
  const ctx = {
    sessionManager: { getLeafEntry: () => prefix.at(-1), getEntry: (id: string) => byId.get(id) },
    model: { provider: "anthropic", id: "claude" },
  };
  const pins = new CachePins();
  for (let r = 0; r < reps * 20; r++) {
    const copy = structuredClone(payload);
    let t = performance.now();
    placeGuardBreakpoints(copy, {});
    pure.push(performance.now() - t);
    const copy2 = structuredClone(payload);
    t = performance.now();
    pins.onRequest(copy2, ctx as never);
    withLog.push(performance.now() - t);
  }
  rows.push({
    label: `before_provider_request, ${size} entries (${payload.messages?.length} messages)`,
    values: [cell(pure), cell(withLog)],
  });

  // Footer redraw: after a pass, the snapshot is cached; a redraw recomputes the savings and the lifetime.
  const edits: ContextEditDraft[] = [];
  for (const e of prefix) {
    const m = e.message as { role?: string } | undefined;
    if (m?.role === "toolResult" && edits.length < 200) {
      edits.push({
        type: "context_edit",
        targetId: e.id,
        replacement: { content: [{ type: "text", text: "[context-guard] x" }] },
      });
    }
  }
  const sim = new SessionSim(prefix);
  sim.applyPass(edits);
  const snapshots = new SnapshotBuilder();
  snapshots.entries(sim.project());
  const redraw: number[] = [];
  const withProjection: number[] = [];
  for (let r = 0; r < reps * 20; r++) {
    const projection = sim.project();
    let t = performance.now();
    currentSavings(snapshots.entries(projection));
    lifetime(sim.entries as never);
    redraw.push(performance.now() - t);
    t = performance.now();
    currentSavings(snapshots.entries(sim.project()));
    lifetime(sim.entries as never);
    withProjection.push(performance.now() - t);
  }
  rows.push({ label: `footer redraw, ${size} entries (200 edited)`, values: [cell(redraw), cell(withProjection)] });
}
await http.close();
await host.close();

const header = ["| hook, workload | measure A (ms, median / max) | measure B (ms, median / max) |", "|---|---:|---:|"];
const table = [...header, ...rows.map((r) => `| ${r.label} | ${r.values.join(" | ")} |`)].join("\n");
const legend = [
  "- **turn_end checkpoint:** the pass as the hook runs it (snapshot, plan in the pool or inline, classifier, finish, validation). A = longest main-thread stall of the first checkpoint pass of the session (cold: every entry sent to the worker), B = the next checkpoint, after the first one's edits and 20 new entries (warm mirror). Own stall: run-queue wait taken out. Break-even off so the pass always does its work; classifier 20 ms away in its own thread, its requests sent from the extension's HTTP thread (inline: from the main thread, as a main-thread implementation would).",
  "- **warm-up at the first agent_start:** A = longest main-thread stall while the warm-up builds the snapshot (paced) and sends the session to the pass worker in slices, B = how long that takes (the main model is working meanwhile). **first run_end pass:** the resumed session's first agent_before_settle, A = after the warm-up (the worker holds the session), B = without it (cold: every entry sent inside the hook); stall rows give the longest own stall, settle rows the hook's duration (classifier 20 ms, concurrency 6, the same requests either way).",
  "- **before_provider_request:** A = the breakpoint placement alone on the payload, B = the whole handler work (branch walk of the cache log, trust check, placement, logging).",
  "- **footer redraw:** A = savings and lifetime from the cached snapshot, B = the same including the projection Pi hands over (the simulated `buildSessionProjection`).",
].join("\n");
console.log(table);
console.log(legend);
if (values.full) {
  const doc = `# Hook costs besides run end

Generated by \`npm run bench:hooks -- --full\` on ${new Date().toISOString()}: ${cpus()[0]?.model ?? "cpu"}, ${cpus().length} cores, ${(totalmem() / 2 ** 30).toFixed(1)} GiB, Node ${process.version}. ${reps} repetitions; medians and maxima.

${table}

${legend}
`;
  writeFileSync(new URL("./HOOKS.md", import.meta.url), doc);
}
