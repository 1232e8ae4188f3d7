/**
 * Regenerates every figure the README and docs/ quote from the replay: one replay of each session
 * (local/lexical, default settings), the marked blocks rewritten, the values recorded in docs/figures.json.
 *
 *   npm run figures            rewrite the blocks and docs/figures.json
 *   npm run figures -- --check say what moved, change nothing (exit 1 when the docs are out of date)
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import {
  compareDocs,
  FIGURES_JSON,
  figuresOf,
  quotedFigures,
  REGENERATE,
  REPO_ROOT,
  renderBlocks,
  replayForFigures,
  writeBlock,
} from "./lib/figures.ts";

const { values } = parseArgs({ options: { check: { type: "boolean", default: false } } });
const figures = figuresOf(await replayForFigures());

if (values.check) {
  const problems = compareDocs(REPO_ROOT, figures);
  for (const p of problems) console.log(p);
  if (problems.length > 0) console.log(`run \`${REGENERATE}\` to regenerate them`);
  else console.log("every quoted figure is what the code produces");
  process.exitCode = problems.length > 0 ? 1 : 0;
} else {
  const byFile = new Map<string, string>();
  for (const b of renderBlocks(figures)) {
    const text = byFile.get(b.file) ?? readFileSync(join(REPO_ROOT, b.file), "utf8");
    byFile.set(b.file, writeBlock(text, b.file, b.name, b.text));
  }
  for (const [file, text] of byFile) writeFileSync(join(REPO_ROOT, file), text);
  const quoted = quotedFigures(figures);
  writeFileSync(join(REPO_ROOT, FIGURES_JSON), `${JSON.stringify(quoted, null, 2)}\n`);
  console.log(`${Object.keys(quoted).length} figures in ${byFile.size} files and ${FIGURES_JSON}`);
}
