// The README's library example, compiled by tsc and run as written against the real code: its code block
// is taken from README.md, pointed at src/index.ts instead of the package name, and given the two values
// the README says the caller brings, typed as Pi gives them: Pi's own projection
// (SessionManager.buildSessionProjection().entries) and a classify function.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { pathToFileURL } from "node:url";
import ts from "typescript";
import { afterAll, describe, expect, it } from "vitest";
import type { PassResult } from "../../src/index.ts";
import { REPO_ROOT } from "../kit/pi-agent-dir.ts";

const dir = mkdtempSync(join(tmpdir(), "cg-library-example-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The first ```ts block of the README's "Use as a library" section. */
function example(): string {
  const readme = readFileSync(join(REPO_ROOT, "README.md"), "utf8");
  const section = readme.slice(readme.indexOf("## Use as a library"));
  const code = /```ts\n([\s\S]*?)```/.exec(section.slice(0, section.indexOf("\n## ", 3)))?.[1];
  if (!code) throw new Error("README.md has no ts block under 'Use as a library'");
  return code;
}

/** The example as a module: typed inputs first, then the README's code, then what the test reads. */
function exampleModule(): string {
  // Relative specifiers: tsc keeps a .ts extension only on those.
  const from = (...path: string[]) => JSON.stringify(relative(dir, join(REPO_ROOT, ...path)));
  const index = from("src", "index.ts");
  const kit = (name: string) => from("test", "kit", name);
  const code = example();
  expect(code).toMatch(/from "pi-context-guard"/);
  return [
    `import { grepRunSession } from ${kit("grep-run.ts")};`,
    `import { dropAll } from ${kit("answers.ts")};`,
    // Hoisted import declarations: the README's own import may come after these lines.
    "export const seen = { calls: 0 };",
    "const context = grepRunSession().buildSessionProjection().entries;",
    "const classify: typeof dropAll = (...args) => {",
    "  seen.calls++;",
    "  return dropAll(...args);",
    "};",
    code.replaceAll('"pi-context-guard"', index),
    "export { result };",
  ].join("\n");
}

/** tsc's diagnostics for one file under the project's compiler options. */
function typeErrors(file: string): string[] {
  const config = ts.readConfigFile(join(REPO_ROOT, "tsconfig.json"), ts.sys.readFile);
  const { options } = ts.parseJsonConfigFileContent(config.config, ts.sys, REPO_ROOT);
  const program = ts.createProgram([file], {
    ...options,
    noEmit: true,
    typeRoots: [join(REPO_ROOT, "node_modules", "@types")],
  });
  return ts
    .getPreEmitDiagnostics(program)
    .map((d) => `${d.file?.fileName ?? ""}: ${ts.flattenDiagnosticMessageText(d.messageText, "\n")}`);
}

describe("the README's library example", () => {
  // An ES module wherever the temporary folder is.
  const file = join(dir, "example.mts");

  it("type-checks with Pi's own projection type", () => {
    writeFileSync(file, exampleModule());
    expect(typeErrors(file)).toEqual([]);
  }, 120_000);

  it("runs as written and returns the drafts for Pi", async () => {
    writeFileSync(file, exampleModule());
    const { result, seen } = (await import(pathToFileURL(file).href)) as {
      result: PassResult;
      seen: { calls: number };
    };
    expect(result.status).toBe("done");
    if (result.status !== "done") return;
    expect(seen.calls).toBeGreaterThan(0);
    expect(result.edits).toHaveLength(1);
    expect(result.edits[0]).toMatchObject({ type: "context_edit" });
    expect(result.record.results.length).toBeGreaterThan(0);
  });
});

describe("the library's names before the rename", () => {
  it("still export the same class and a pass on a pool", async () => {
    const lib = await import("../../src/index.ts");
    expect(lib.GuardSession).toBe(lib.PassPipeline);
    const runner = await lib.createTaskRunner({ backend: "inline" });
    try {
      const deps: import("../../src/index.ts").RunEndDeps = {
        runner,
        config: lib.DEFAULT_CONFIG,
        modelRef: "x/y",
      };
      const result: import("../../src/index.ts").RunEndResult = await lib.runPass([], deps, { phase: "run-end" });
      expect(result.status).toBe("skipped");
    } finally {
      await runner.destroy();
    }
  });
});
