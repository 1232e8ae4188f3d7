// The README's library example, type-checked by tsc and run as written by Node 22 against the real code:
// its code block is taken from README.md, its package import pointed at src/index.ts, and the file put
// inside the repository, so that its other import (Pi) resolves as it does for a user.
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { promisify } from "node:util";
import ts from "typescript";
import { afterAll, describe, expect, it } from "vitest";
import { NODE_BIN, REPO_ROOT } from "../kit/pi-agent-dir.ts";

mkdirSync(join(REPO_ROOT, "test", ".tmp"), { recursive: true });
const dir = mkdtempSync(join(REPO_ROOT, "test", ".tmp", "readme-example-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The first ```ts block of the README's "Use as a library" section. */
function example(): string {
  const readme = readFileSync(join(REPO_ROOT, "README.md"), "utf8");
  const section = readme.slice(readme.indexOf("## Use as a library"));
  const code = /```ts\n([\s\S]*?)```/.exec(section.slice(0, section.indexOf("\n## ", 3)))?.[1];
  if (!code) throw new Error("README.md has no ts block under 'Use as a library'");
  return code;
}

/** The example as a file next to the repository's code: only the package name is replaced. */
function exampleFile(): string {
  const code = example();
  expect(code).toMatch(/from "pi-context-guard"/);
  // Only names the package exports, and only packages a user of it has (no devDependency backend).
  const pkg = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as Record<
    string,
    Record<string, string>
  >;
  const userHas = new Set([...Object.keys(pkg.dependencies ?? {}), ...Object.keys(pkg.peerDependencies ?? {})]);
  const imports = [...code.matchAll(/from "([^"]+)"/g)].map((m) => m[1] as string);
  for (const name of imports) expect(name === "pi-context-guard" || userHas.has(name), name).toBe(true);
  const index = JSON.stringify(relative(dir, join(REPO_ROOT, "src", "index.ts")));
  const file = join(dir, "example.ts");
  writeFileSync(file, code.replaceAll('"pi-context-guard"', index));
  return file;
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
  it("type-checks with Pi's own types", () => {
    expect(typeErrors(exampleFile())).toEqual([]);
  }, 120_000);

  it("runs as written under Node 22, edits the output and prints what the README says", async () => {
    const { stdout, stderr } = await promisify(execFile)(NODE_BIN, [exampleFile()], { cwd: dir, timeout: 60_000 });
    expect(stderr).toBe("");
    expect(stdout).toBe("bash `rg -n needle`: removed, 22469 → 470 chars\n");
    const readme = readFileSync(join(REPO_ROOT, "README.md"), "utf8");
    expect(readme).toContain(`It prints \`\`${stdout.trim()}\`\``);
  }, 120_000);
});
