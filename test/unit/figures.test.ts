// The figures the README and docs/ quote from the replay are the ones the code produces now: one replay
// of each quoted session (as `npm run figures` runs it), compared with docs/figures.json and the marked
// blocks. A change that moves a figure fails here, naming it, until `npm run figures` is run.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import {
  BLOCKS,
  compareDocs,
  type Figures,
  figuresOf,
  REGENERATE,
  REPO_ROOT,
  type Replayed,
  readBlock,
  replayForFigures,
  writeBlock,
} from "../../bench/lib/figures.ts";

let replayed: Replayed;
let figures: Figures;

beforeAll(async () => {
  replayed = await replayForFigures();
  figures = figuresOf(replayed);
}, 180_000);

describe("the figures the docs quote", () => {
  it("are what the code produces now", () => {
    const problems = compareDocs(REPO_ROOT, figures);
    const message = `${problems.join("\n")}\nRun \`${REGENERATE}\` to regenerate the docs, and commit them.`;
    expect(problems, message).toEqual([]);
  });

  it("name the figure that moved, its blocks and the command that fixes it", () => {
    const moved = { ...figures, "piMono.off": "$1.00" };
    const problems = compareDocs(REPO_ROOT, moved);
    expect(problems[0]).toBe(
      `figure piMono.off moved: the docs quote "${figures["piMono.off"]}", the code now produces "$1.00"; quoted in README.md (readme-headline), docs/replay.md (replay-calibration), docs/replay.md (replay-dollars)`,
    );
    expect(problems).toContain("README.md: block readme-headline differs from what the figures render");
    expect(REGENERATE).toBe("npm run figures");
  });

  it("copy the proxy's sentence from the replay's own summary of the npm start sessions", () => {
    const printed = replayed.startSummary.replace(/\s+/g, " ");
    expect(figures["start.proxy"]?.length).toBeGreaterThan(20);
    expect(printed).toContain(figures["start.proxy"]);
    expect(readBlock(readFileSync(join(REPO_ROOT, "README.md"), "utf8"), "readme-headline")).toContain(
      figures["start.proxy"],
    );
  });

  it("call the generated sample generated wherever a block quotes it", () => {
    for (const [name, block] of Object.entries(BLOCKS)) {
      const text = readBlock(readFileSync(join(REPO_ROOT, block.file), "utf8"), name) ?? "";
      for (const line of text.split("\n").filter((l) => l.includes("bench/sample")))
        expect(line, `${block.file} (${name})`).toContain("generated");
    }
  });
});

describe("figure blocks", () => {
  const doc = "a\n<!-- figures:one -->\n<!-- /figures -->\nb\n<!-- figures:two -->\nold\n<!-- /figures -->\n";

  it("are rewritten one at a time; an empty block does not swallow the next", () => {
    const once = writeBlock(doc, "doc.md", "one", "| x |");
    expect(once).toBe(
      "a\n<!-- figures:one -->\n| x |\n<!-- /figures -->\nb\n<!-- figures:two -->\nold\n<!-- /figures -->\n",
    );
    expect(readBlock(once, "two")).toBe("old");
    expect(readBlock(writeBlock(once, "doc.md", "one", "| y |"), "one")).toBe("| y |");
  });

  it("must exist: a missing block is an error that names it", () => {
    expect(() => writeBlock(doc, "doc.md", "three", "x")).toThrow(
      "doc.md has no <!-- figures:three --> … <!-- /figures --> block",
    );
    expect(readBlock(doc, "three")).toBeUndefined();
  });
});
