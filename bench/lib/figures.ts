// Every figure the README and docs/ quote from the replay, computed from one replay of each session, and
// the marked blocks that quote them. `npm run figures` (bench/figures.ts) writes the blocks and
// docs/figures.json; test/unit/figures.test.ts fails, naming the figure, when the code produces another
// value than the docs quote. A block is `<!-- figures:name -->` … `<!-- /figures -->`: its content is
// rendered here, never edited by hand.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { combineProxy } from "../../src/core/replay/proxy.ts";
import { type ReplayReport, type SessionMetrics, tokensOf } from "../../src/core/replay/replay-metrics.ts";
import { DEFAULT_CONFIG, type GuardConfig } from "../../src/core/shared/config.ts";
import { formatCount } from "../../src/core/shared/text.ts";
import { localClassify } from "../../src/main/pass/classifier.ts";
import { createTaskRunner } from "../../src/main/platform/pool.ts";
import { LOCAL_NOTE, replayFiles } from "../../src/main/replay/command.ts";
import { formatSummary } from "../../src/main/replay/summary.ts";

export const REPO_ROOT = join(import.meta.dirname, "..", "..");
export const FIGURES_JSON = "docs/figures.json";
export const REGENERATE = "npm run figures";

/** The sessions the docs quote, by the key their figures are named with. */
export const SESSIONS = {
  piMono: "test/fixtures/sessions/badlogic__pi-mono__large-session.jsonl",
  volvox: "test/fixtures/sessions/VolvoxLLC__volvox-bot__1a4b7879.jsonl",
  kimchi: "test/fixtures/sessions/castai__kimchi-dev__session.jsonl",
  trl: "test/fixtures/sessions/rycerzes__trl__session.jsonl",
  sample: "bench/sample/session.jsonl",
} as const;
type Key = keyof typeof SESSIONS;

/** How the docs name each session (source repository, or the generator). */
const LABEL: Record<Key, string> = {
  piMono: "`badlogic/pi-mono`",
  volvox: "`VolvoxLLC/volvox-bot`",
  kimchi: "`castai/kimchi-dev`",
  trl: "`rycerzes/trl`",
  sample: "`bench/sample` (generated)",
};

/** The sessions the quality gate replays (test/fixtures/quality-baseline.json). */
const GATE: Key[] = ["piMono", "kimchi", "trl"];

/** The session files `npm start` replays, in its order (package.json). */
export function startSessions(root = REPO_ROOT): string[] {
  const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { scripts: { start: string } };
  return pkg.scripts.start.split(/\s+/).filter((w) => w.endsWith(".jsonl"));
}

export interface Replayed {
  report: ReplayReport;
  byKey: Record<Key, SessionMetrics>;
  /** The replay's summary of the `npm start` sessions, as it prints it. */
  startSummary: string;
}

/** One replay of every session, local/lexical with the default settings and Pi's registry prices. */
export async function replayForFigures(root = REPO_ROOT): Promise<Replayed> {
  const start = startSessions(root);
  const paths = [...new Set([...start, ...Object.values(SESSIONS)])].map((p) => join(root, p));
  const config: GuardConfig = { ...DEFAULT_CONFIG, excludeTools: [...DEFAULT_CONFIG.excludeTools] };
  const runner = await createTaskRunner({ backend: "piscina", minThreads: 1, maxThreads: 1 });
  try {
    const classifier = { ref: "local/lexical", note: LOCAL_NOTE, classify: localClassify() };
    const { report } = await replayFiles(paths, { classifier, config, runner });
    if (report.failures.length > 0)
      throw new Error(`not replayed: ${report.failures.map((f) => `${f.file}: ${f.error}`).join("; ")}`);
    const of = (p: string) => {
      const s = report.sessions.find((x) => x.file === join(root, p));
      if (!s) throw new Error(`${p} was not replayed`);
      return s;
    };
    const byKey = Object.fromEntries(Object.entries(SESSIONS).map(([k, p]) => [k, of(p)])) as Record<
      Key,
      SessionMetrics
    >;
    const startSummary = formatSummary({ ...report, sessions: start.map(of) });
    return { report, byKey, startSummary };
  } finally {
    await runner.destroy();
  }
}

// The docs' number formats (fixed here so that a figure reads the same wherever it is quoted).
const usd = (x: number): string => {
  const a = Math.abs(x);
  const s = a === 0 ? "0" : a >= 1 ? a.toFixed(2) : a >= 0.01 ? a.toFixed(3) : a.toPrecision(2);
  return `${x < 0 ? "−" : ""}$${s}`;
};
const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
const signed = (x: number) => `${x >= 0 ? "+" : "−"}${Math.abs(x * 100).toFixed(1)}%`;
const tok = (chars: number) => formatCount(tokensOf(chars));
const count = (n: number) => n.toLocaleString("en-US");

/**
 * The first sentence of the proxy's paragraph of the replay's summary: the first paragraph after the
 * sessions that is neither a session's block nor a total. Copied, not computed, so it says what the
 * replay says.
 */
export function proxyParagraph(summary: string, sessions: readonly SessionMetrics[]): string {
  const paragraphs = summary.split(/\n\s*\n/).slice(1);
  const found = paragraphs.find(
    (p) =>
      !sessions.some((s) => p.startsWith(s.file)) && !/^(all \d|report:|not replayed:)/.test(p) && !p.startsWith("  "),
  );
  if (!found) throw new Error("the replay's summary has no paragraph on the needed-later proxy: update proxyParagraph");
  const text = found
    .split("\n")
    .map((l) => l.trim())
    .join(" ");
  // Its first sentence: the measured quality (what follows is advice).
  const end = /[.!?](?=\s+[A-Z])/.exec(text);
  return end ? text.slice(0, end.index + 1) : text;
}

export type Figures = Record<string, string>;

const EDIT_KIND: Record<string, [string, string]> = {
  large: ["large output", "large outputs"],
  small: ["small output", "small outputs"],
  image: ["image", "images"],
  exchange: ["old exchange", "old exchanges"],
};

/** Every quoted figure by name, formatted as the docs print it. */
export function figuresOf(r: Replayed): Figures {
  const f: Figures = {};
  for (const [key, s] of Object.entries(r.byKey)) {
    const t = s.totals;
    const m = s.money;
    const put = (name: string, value: string) => {
      f[`${key}.${name}`] = value;
    };
    put("entries", count(s.entries));
    put("requests", count(t.requests));
    put(
      "models",
      m
        ? m.models
            .filter((x) => x.requests > 0)
            .map((x) => `${x.model}, ${x.family}`)
            .join("; ")
        : "–",
    );
    put("billedOff", tok(t.billedOff));
    put("billedOn", tok(t.billedOn));
    put("billedCut", pct(t.savedShare));
    put("lastOff", tok(t.finalOff));
    put("lastOn", tok(t.finalOn));
    put("passes", count(t.passes));
    put("passesWithEdits", count(t.passesWithEdits));
    put("drafts", count(t.drafts));
    put(
      "edits",
      Object.entries(t.edits)
        .filter(([, n]) => n > 0)
        .map(([k, n]) => `${n} ${EDIT_KIND[k]?.[n === 1 ? 0 : 1] ?? k}`)
        .join(", ") || "none",
    );
    put("classifierRequests", count(t.classifierRequests));
    put("removed", count(t.proxy.removed));
    put("likelyNeeded", count(t.proxy.likelyNeeded.items));
    put("likelyNeededRate", pct(t.proxy.likelyNeeded.rate));
    if (!m) continue;
    put("off", usd(m.off.dollars));
    put("on", usd(m.on.dollars));
    put("classifier", usd(m.classifier.dollars));
    put("net", m.net >= 0 ? `saves ${usd(m.net)}` : `costs ${usd(-m.net)}`);
    put("netShare", m.off.dollars > 0 ? `${m.net >= 0 ? "−" : "+"}${pct(Math.abs(m.net) / m.off.dollars)}` : "–");
    put("netPct", m.off.dollars > 0 ? pct(Math.abs(m.net) / m.off.dollars) : "–");
    const rec = m.recorded;
    put("recorded", rec && rec.dollars > 0 ? usd(rec.dollars) : "$0");
    put("readSim", formatCount(m.off.cacheRead));
    put("writeSim", formatCount(m.off.cacheWrite));
    put("uncachedSim", formatCount(m.off.input));
    put("readRec", rec ? formatCount(rec.cacheRead) : "–");
    put("writeRec", rec ? formatCount(rec.cacheWrite) : "–");
    put("uncachedRec", rec ? formatCount(rec.input) : "–");
    put("readErr", m.error && rec?.cacheRead ? signed(m.error.cacheRead) : "–");
    put("writeErr", m.error && rec?.cacheWrite ? signed(m.error.cacheWrite) : "–");
    put("dollarsErr", m.error?.dollars !== undefined ? signed(m.error.dollars) : "–");
  }
  let off = 0;
  let on = 0;
  let classifier = 0;
  for (const k of GATE) {
    const d = r.byKey[k].dollars;
    off += d?.off ?? 0;
    on += d?.on ?? 0;
    classifier += d?.classifier ?? 0;
  }
  const gate = combineProxy(GATE.map((k) => r.byKey[k].totals.proxy));
  f["gate.off"] = usd(off);
  f["gate.on"] = usd(on);
  f["gate.classifier"] = usd(classifier);
  f["gate.saving"] = pct(off > 0 ? (off - on - classifier) / off : 0);
  f["gate.removed"] = count(gate.removed);
  f["gate.likelyNeeded"] = count(gate.likelyNeeded.items);
  f["gate.likelyNeededRate"] = pct(gate.likelyNeeded.rate);
  const start = startSessions().map((p) => r.report.sessions.find((s) => s.file === join(REPO_ROOT, p)));
  f["start.proxy"] = proxyParagraph(
    r.startSummary,
    start.filter((s): s is SessionMetrics => s !== undefined),
  );
  return f;
}

/** A block's text from the figures; `used` collects the names it quotes. */
type Render = (fig: (name: string) => string) => string;

export interface Block {
  file: string;
  render: Render;
}

const row = (cells: string[]) => `| ${cells.join(" | ")} |`;
const REAL: Key[] = ["piMono", "volvox"];

export const BLOCKS: Record<string, Block> = {
  "readme-headline": {
    file: "README.md",
    render: (fig) =>
      [
        row(["Session", "Off (vs recorded)", "On + classifier", "Net", "Context", "Removed (likely needed)"]),
        "|---|---:|---:|---:|---:|---:|",
        ...(["piMono", "volvox", "sample"] as Key[]).map((k) =>
          row([
            k === "sample" ? "`bench/sample` (generated)" : `${LABEL[k]} (MIT)`,
            `${fig(`${k}.off`)} (${fig(`${k}.dollarsErr`)})`,
            `${fig(`${k}.on`)} + ${fig(`${k}.classifier`)}`,
            `**${fig(`${k}.netShare`)}**`,
            `−${fig(`${k}.billedCut`)}`,
            `${fig(`${k}.removed`)} (${fig(`${k}.likelyNeeded`)})`,
          ]),
        ),
        "",
        [
          // A provider that cached but whose cache the replay does not model: its dollars are uncached.
          ...REAL.filter((k) => fig(`${k}.models`).endsWith(", none") && fig(`${k}.readRec`) !== "0").map(
            (k) =>
              `${LABEL[k]}'s ${fig(`${k}.readRec`)} cached tokens are not modelled yet (\`none\`): both arms are priced uncached.`,
          ),
          `The replay: “${fig("start.proxy")}”`,
        ].join(" "),
      ].join("\n"),
  },
  "replay-calibration": {
    file: "docs/replay.md",
    render: (fig) =>
      [
        row([
          "Session",
          "Model, cache",
          "Cache read sim / recorded",
          "Cache write",
          "Uncached",
          "Dollars sim / recorded",
        ]),
        "|---|---|---|---|---|---|",
        ...(["sample", "piMono", "volvox", "kimchi", "trl"] as Key[]).map((k) =>
          row([
            LABEL[k],
            fig(`${k}.models`),
            `${fig(`${k}.readSim`)} / ${fig(`${k}.readRec`)} (${fig(`${k}.readErr`)})`,
            `${fig(`${k}.writeSim`)} / ${fig(`${k}.writeRec`)} (${fig(`${k}.writeErr`)})`,
            `${fig(`${k}.uncachedSim`)} / ${fig(`${k}.uncachedRec`)}`,
            fig(`${k}.recorded`) === "$0"
              ? `${fig(`${k}.off`)} / $0 recorded`
              : `${fig(`${k}.off`)} / ${fig(`${k}.recorded`)} (${fig(`${k}.dollarsErr`)})`,
          ]),
        ),
      ].join("\n"),
  },
  "replay-dollars": {
    file: "docs/replay.md",
    render: (fig) =>
      [
        row(["Session", "Main model off → on", "Classifier", "Net", "Passes that edited"]),
        "|---|---|---|---|---|",
        ...(["piMono", "volvox", "kimchi", "trl", "sample"] as Key[]).map((k) =>
          row([
            LABEL[k],
            `${fig(`${k}.off`)} → ${fig(`${k}.on`)}`,
            fig(`${k}.classifier`),
            `${fig(`${k}.net`)} (${fig(`${k}.netPct`)})`,
            `${fig(`${k}.passesWithEdits`)} of ${fig(`${k}.passes`)} (${fig(`${k}.drafts`)} drafts)`,
          ]),
        ),
      ].join("\n"),
  },
  "replay-gate": {
    file: "docs/replay.md",
    render: (fig) =>
      `Over the three sessions the rate is ${fig("gate.likelyNeeded")} of ${fig("gate.removed")} removed items (${fig("gate.likelyNeededRate")}); the main model costs ${fig("gate.off")} with the guard off and ${fig("gate.on")} with it on, plus ${fig("gate.classifier")} for the classifier at Jev's price, a net saving of ${fig("gate.saving")}.`,
  },
};

export interface Rendered {
  file: string;
  name: string;
  text: string;
  /** The figures the block quotes. */
  uses: string[];
}

/** The figures some block quotes: the ones docs/figures.json records and the test compares. */
export function quotedFigures(figures: Figures): Figures {
  const used = new Set(renderBlocks(figures).flatMap((b) => b.uses));
  return Object.fromEntries(Object.entries(figures).filter(([k]) => used.has(k)));
}

export function renderBlocks(figures: Figures): Rendered[] {
  return Object.entries(BLOCKS).map(([name, block]) => {
    const uses = new Set<string>();
    const text = block.render((n) => {
      const v = figures[n];
      if (v === undefined) throw new Error(`block ${name} quotes ${n}, which no replay produced`);
      uses.add(n);
      return v;
    });
    return { file: block.file, name, text, uses: [...uses] };
  });
}

// A block's content never holds another marker, so a block left empty cannot swallow the next one.
const blockPattern = (name: string) =>
  new RegExp(`<!-- figures:${name} -->\\n((?:(?!<!-- /?figures)[\\s\\S])*?)\\n?<!-- /figures -->`);

/** The current content of a block in a file's text, or undefined when the markers are missing. */
export function readBlock(text: string, name: string): string | undefined {
  return blockPattern(name).exec(text)?.[1];
}

/** The text with the block's content replaced; throws when the file has no such block. */
export function writeBlock(text: string, file: string, name: string, content: string): string {
  if (!blockPattern(name).test(text))
    throw new Error(`${file} has no <!-- figures:${name} --> … <!-- /figures --> block`);
  return text.replace(blockPattern(name), () => `<!-- figures:${name} -->\n${content}\n<!-- /figures -->`);
}

/**
 * What differs between the docs and the code: each moved figure (recorded value → produced value, and
 * the blocks quoting it), then each block whose text differs. Empty when the docs are current.
 */
export function compareDocs(root: string, figures: Figures): string[] {
  const problems: string[] = [];
  let recorded: Figures = {};
  try {
    recorded = JSON.parse(readFileSync(join(root, FIGURES_JSON), "utf8")) as Figures;
  } catch {
    problems.push(`${FIGURES_JSON} is missing or not JSON`);
  }
  const blocks = renderBlocks(figures);
  const quoted = quotedFigures(figures);
  for (const name of [...new Set([...Object.keys(recorded), ...Object.keys(quoted)])].sort()) {
    if (recorded[name] === quoted[name]) continue;
    const where = blocks.filter((b) => b.uses.includes(name)).map((b) => `${b.file} (${b.name})`);
    problems.push(
      `figure ${name} moved: the docs quote ${JSON.stringify(recorded[name] ?? "nothing")}, the code now produces ${JSON.stringify(quoted[name] ?? "nothing")}${where.length ? `; quoted in ${where.join(", ")}` : ""}`,
    );
  }
  for (const b of blocks) {
    const current = readBlock(readFileSync(join(root, b.file), "utf8"), b.name);
    if (current === undefined) problems.push(`${b.file} has no <!-- figures:${b.name} --> block`);
    else if (current !== b.text) problems.push(`${b.file}: block ${b.name} differs from what the figures render`);
  }
  return problems;
}
