/**
 * The routing eval (issue 33): a catalog of skills (bench/skills/<name>/SKILL.md) and labelled prompts
 * (bench/skills/prompts.json: half need one skill, half are hard negatives that share its words), scored with
 * the extension's own skill requests and load policy. Prints each skill's score distribution for relevant and
 * irrelevant prompts, the false loads at the threshold, and recall and false-load rates on the tune and the
 * held-out split (Wilson 95% intervals). The scorer's constants were set before the first run, not tuned.
 *
 *   node bench/routing-eval.ts                        # embedded scorer (local/lexical), whole set
 *   node bench/routing-eval.ts --size smallest        # 3 skills, their prompts and 3 negatives (CI smoke)
 *   node bench/routing-eval.ts --model openrouter/~typesafe/jev-latest   # a hosted classifier (needs its key)
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { LOCAL_MODEL_REF } from "../src/core/classifier/lexical.ts";
import {
  boolScore,
  buildRoutingState,
  SKILL_QUESTION_ID,
  type SkillDoc,
  skillRequest,
  stripFrontmatter,
} from "../src/core/routing/routing.ts";
import { initialState } from "../src/core/routing/routing-state.ts";
import { decide } from "../src/core/routing/turn-decision.ts";
import { DEFAULT_CONFIG } from "../src/core/shared/config.ts";
import { localClassify } from "../src/main/pass/classifier.ts";
import type { ClassifyFn } from "../src/main/pass/classify-queue.ts";

const here = import.meta.dirname;
export const SKILLS_DIR = resolve(here, "skills");

export interface Labelled {
  prompt: string;
  /** The skill the prompt needs; null for a hard negative. */
  skill: string | null;
  split: "tune" | "held";
}

export function loadCatalog(dir = SKILLS_DIR): { skills: SkillDoc[]; prompts: Labelled[] } {
  const skills: SkillDoc[] = [];
  for (const name of readdirSync(dir, { withFileTypes: true })) {
    if (!name.isDirectory()) continue;
    const text = readFileSync(join(dir, name.name, "SKILL.md"), "utf8");
    const raw = /^description:\s*(.+)$/m.exec(text)?.[1]?.trim() ?? "";
    const description = raw.startsWith('"') ? (JSON.parse(raw) as string) : raw;
    skills.push({ name: name.name, description, body: stripFrontmatter(text) });
  }
  skills.sort((a, b) => (a.name < b.name ? -1 : 1));
  const prompts = JSON.parse(readFileSync(join(dir, "prompts.json"), "utf8")) as Labelled[];
  return { skills, prompts };
}

/** Three skills, their prompts and three hard negatives. */
export function smallest(c: { skills: SkillDoc[]; prompts: Labelled[] }): typeof c {
  const skills = c.skills.slice(0, 3);
  const names = new Set(skills.map((s) => s.name));
  const prompts = [
    ...c.prompts.filter((p) => p.skill !== null && names.has(p.skill)),
    ...c.prompts.filter((p) => p.skill === null).slice(0, 3),
  ];
  return { skills, prompts };
}

export interface EvalResult {
  /** scores[p][s]: prompt p, skill s. */
  scores: Array<Array<number | undefined>>;
  /** Skills loaded per prompt by the extension's policy (threshold, top-K). */
  loads: string[][];
}

export async function scoreAll(
  catalog: { skills: SkillDoc[]; prompts: Labelled[] },
  classify: ClassifyFn,
  config = DEFAULT_CONFIG,
): Promise<EvalResult> {
  const scores: EvalResult["scores"] = [];
  const loads: string[][] = [];
  for (const p of catalog.prompts) {
    const state = buildRoutingState({ prompt: p.prompt, messages: [] }).state;
    const row = await Promise.all(
      catalog.skills.map(async (s) => {
        const out = await classify(skillRequest(state, s), { signal: new AbortController().signal, timeoutMs: 60_000 });
        return boolScore(out, SKILL_QUESTION_ID);
      }),
    );
    scores.push(row);
    loads.push(loadedBy(catalog.skills, row, config));
  }
  return { scores, loads };
}

/**
 * What the extension loads at a session's first prompt given these scores: the boundary's own decide(), with
 * the skills as Pi would list them and the scores as one batch.
 */
function loadedBy(skills: SkillDoc[], row: Array<number | undefined>, config: typeof DEFAULT_CONFIG): string[] {
  const answered = row.some((v) => v !== undefined);
  const health = answered ? "ok" : "failed";
  const { state } = decide(initialState(), {
    kind: "user",
    config: { ...config, enabled: true, routeSkills: true, toolNamespaces: {} },
    skills: skills.map((s) => ({ name: s.name, description: s.description, filePath: "", baseDir: "" })),
    tools: [],
    active: [],
    userTurn: 1,
    classifier: true,
    batch: {
      gen: 1,
      health,
      skillHealth: health,
      nsHealth: "empty",
      skillScores: new Map(skills.map((s, i) => [s.name, row[i]])),
      decayScores: new Map(),
      nsScores: new Map(),
      nsDecayScores: new Map(),
      bodies: new Map(skills.map((s) => [s.name, { body: s.body, filePath: "", baseDir: "" }])),
      requests: skills.length,
      inputTokens: 0,
      costUsd: 0,
      timedOut: false,
      promptChars: 0,
      digestChars: 0,
    },
    source: "fresh",
  });
  return [...state.loaded.keys()];
}

/** Wilson 95% interval of k successes in n. */
export function wilson(k: number, n: number): [number, number] {
  if (n === 0) return [0, 1];
  const z = 1.96;
  const p = k / n;
  const d = 1 + (z * z) / n;
  const c = (p + (z * z) / (2 * n)) / d;
  const h = (z * Math.sqrt((p * (1 - p)) / n + (z * z) / (4 * n * n))) / d;
  return [Math.max(0, c - h), Math.min(1, c + h)];
}

const q = (xs: number[], f: number) => {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(f * (s.length - 1) + 0.5))] as number;
};
const f2 = (x: number) => (Number.isNaN(x) ? "  -  " : x.toFixed(2));
const pct = (k: number, n: number) => {
  const [lo, hi] = wilson(k, n);
  return `${k}/${n} = ${n ? ((100 * k) / n).toFixed(0) : "-"}% [${(100 * lo).toFixed(0)}–${(100 * hi).toFixed(0)}%]`;
};

export function report(
  catalog: { skills: SkillDoc[]; prompts: Labelled[] },
  r: EvalResult,
  threshold: number,
  model: string,
): string {
  const lines: string[] = [`routing eval · ${model} · threshold ${threshold} · ${catalog.skills.length} skills`];
  lines.push(
    "",
    "skill                 relevant (n min med)   irrelevant (n med p90 max)   false loads",
    "--------------------  ---------------------  ---------------------------  -----------",
  );
  catalog.skills.forEach((s, j) => {
    const rel: number[] = [];
    const irr: number[] = [];
    catalog.prompts.forEach((p, i) => {
      const v = r.scores[i]?.[j];
      if (v === undefined) return;
      (p.skill === s.name ? rel : irr).push(v);
    });
    const fl = irr.filter((v) => v >= threshold).length;
    lines.push(
      `${s.name.padEnd(20)}  ${String(rel.length).padStart(2)} ${f2(q(rel, 0))} ${f2(q(rel, 0.5))}          ` +
        `${String(irr.length).padStart(2)} ${f2(q(irr, 0.5))} ${f2(q(irr, 0.9))} ${f2(q(irr, 1))}           ${fl}/${irr.length}`,
    );
  });
  lines.push("");
  for (const split of ["tune", "held"] as const) {
    let hit = 0;
    let pos = 0;
    let negLoads = 0;
    let neg = 0;
    let pairs = 0;
    let falsePairs = 0;
    catalog.prompts.forEach((p, i) => {
      if (p.split !== split) return;
      const loaded = r.loads[i] ?? [];
      if (p.skill === null) {
        neg++;
        if (loaded.length > 0) negLoads++;
      } else {
        pos++;
        if (loaded.includes(p.skill)) hit++;
      }
      catalog.skills.forEach((s, j) => {
        if (s.name === p.skill) return;
        pairs++;
        if ((r.scores[i]?.[j] ?? 0) >= threshold) falsePairs++;
      });
    });
    lines.push(
      `${split.padEnd(4)}: needed skill loaded ${pct(hit, pos)} · a hard negative loads a skill ${pct(negLoads, neg)} · ` +
        `false-load rate per (prompt, skill) ${pct(falsePairs, pairs)}`,
    );
  }
  return lines.join("\n");
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      size: { type: "string", default: "full" },
      model: { type: "string", default: LOCAL_MODEL_REF },
      skills: { type: "string" },
      "agent-dir": { type: "string" },
    },
  });
  let catalog = loadCatalog(values.skills ? resolve(values.skills) : SKILLS_DIR);
  if (values.size === "smallest") catalog = smallest(catalog);
  let classify: ClassifyFn = localClassify();
  let model = LOCAL_MODEL_REF;
  if (values.model !== LOCAL_MODEL_REF) {
    const { chooseClassifier } = await import("../src/main/replay/command.ts");
    const { agentDir } = await import("../src/main/platform/settings.ts");
    const dir = values["agent-dir"] ?? agentDir();
    const chosen = await chooseClassifier({
      model: values.model,
      configured: values.model,
      agentDir: dir,
      cacheDir: join(dir, "context-guard-cache"),
    });
    classify = chosen.classify;
    model = chosen.ref;
  }
  const result = await scoreAll(catalog, classify);
  process.stdout.write(`${report(catalog, result, DEFAULT_CONFIG.loadThreshold, model)}\n`);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((error: unknown) => {
    process.stderr.write(`routing-eval: ${(error as Error).message}\n`);
    process.exitCode = 1;
  });
}
