// The read path resolution against Pi's own (its path-utils module, which the package does not export, so
// it is loaded from the installed dist by file path): the same file for every case, existing or not.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resolveReadPath } from "../../../../src/workers/pass/read-path.ts";

const PI_PATH_UTILS = resolve(
  import.meta.dirname,
  "../../../../node_modules/@earendil-works/pi-coding-agent/dist/core/tools/path-utils.js",
);

let pi: { resolveReadPath(path: string, cwd: string): string };
let dir: string;

beforeAll(async () => {
  pi = await import(pathToFileURL(PI_PATH_UTILS).href);
  dir = mkdtempSync(join(tmpdir(), "cg-read-path-"));
  mkdirSync(join(dir, "src"));
  for (const name of ["a.ts", "nb\u00A0space.ts", "Screenshot 10.00.00\u202FAM.png", "Capture d\u2019\u00E9cran.png"])
    writeFileSync(join(dir, "src", name), "x\n");
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const cases = (): string[] => [
  "src/a.ts",
  "./src/a.ts",
  "src/../src/a.ts",
  "@src/a.ts",
  join(dir, "src/a.ts"),
  pathToFileURL(join(dir, "src/a.ts")).href,
  "file://localhost" + join(dir, "src/a.ts"),
  "src/nb\u00A0space.ts",
  "src/nb space.ts",
  "src/nb\u2003space.ts",
  "src/missing\u3000file.ts",
  "src/Screenshot 10.00.00 AM.png",
  "src/Capture d'e\u0301cran.png",
  "src/Capture d'\u00E9cran.png",
  "~",
  "~/notes.md",
  "~user/notes.md",
  "@~/notes.md",
  " src/a.ts",
  "src/a.ts ",
  "",
];

describe("resolveReadPath", () => {
  it("finds the same file as Pi's read tool for every case", () => {
    for (const path of cases())
      expect([path, resolveReadPath(path, dir)]).toEqual([path, pi.resolveReadPath(path, dir)]);
  });

  it("turns a unicode space into the plain one and a file URL into its path", () => {
    expect(resolveReadPath("src/nb\u00A0space.ts", dir)).toBe(join(dir, "src/nb space.ts"));
    expect(resolveReadPath(pathToFileURL(join(dir, "src/a.ts")).href, dir)).toBe(join(dir, "src/a.ts"));
    expect(resolveReadPath("~/x", dir)).toBe(join(homedir(), "x"));
  });

  it("gives no file for a URL Pi cannot read either", () => {
    expect(() => pi.resolveReadPath("file://other-host/etc/hosts", dir)).toThrow();
    expect(resolveReadPath("file://other-host/etc/hosts", dir)).toBeUndefined();
  });
});
