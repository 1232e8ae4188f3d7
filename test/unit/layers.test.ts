// The layering the design fixes, checked on the source: src/core is pure (imports only core and node
// built-ins that do no I/O), src/workers never imports src/main, and no module imports itself through a
// cycle (type-only imports included: a cycle is a cycle to a reader). File names are unique across the
// three layers, so a name alone says which file is meant.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "../kit/pi-agent-dir.ts";

const SRC = join(REPO_ROOT, "src");

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) =>
    d.isDirectory() ? sources(join(dir, d.name)) : d.name.endsWith(".ts") ? [join(dir, d.name)] : [],
  );
}

/** Relative imports of each module, resolved to files (`import`, `export … from`, dynamic `import()`). */
function graph(): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const file of sources(SRC)) {
    const text = readFileSync(file, "utf8");
    const specs = [...text.matchAll(/(?:from|import)\s*\(?\s*["'](\.{1,2}\/[^"']+)["']/g)].map((m) => m[1] as string);
    out.set(
      relative(SRC, file),
      specs.filter((s) => s.endsWith(".ts")).map((s) => relative(SRC, resolve(dirname(file), s))),
    );
  }
  return out;
}

describe("source layering", () => {
  const g = graph();

  it("src/core imports nothing outside src/core", () => {
    const bad = [...g].flatMap(([from, tos]) =>
      from.startsWith("core/") ? tos.filter((t) => !t.startsWith("core/")).map((t) => `${from} → ${t}`) : [],
    );
    expect(bad).toEqual([]);
  });

  it("src/workers never imports src/main", () => {
    const bad = [...g].flatMap(([from, tos]) =>
      from.startsWith("workers/") ? tos.filter((t) => t.startsWith("main/")).map((t) => `${from} → ${t}`) : [],
    );
    expect(bad).toEqual([]);
  });

  it("gives no two files in src/core, src/workers and src/main the same name", () => {
    const byName = new Map<string, string[]>();
    for (const file of g.keys()) {
      if (!/^(core|workers|main)\//.test(file)) continue;
      const name = file.slice(file.lastIndexOf("/") + 1);
      byName.set(name, [...(byName.get(name) ?? []), file]);
    }
    expect([...byName.values()].filter((files) => files.length > 1)).toEqual([]);
  });

  it("has no import cycle", () => {
    const cycles: string[] = [];
    const state = new Map<string, "open" | "done">();
    const path: string[] = [];
    const visit = (m: string) => {
      state.set(m, "open");
      path.push(m);
      for (const next of g.get(m) ?? []) {
        if (state.get(next) === "open") cycles.push([...path.slice(path.indexOf(next)), next].join(" → "));
        else if (!state.has(next)) visit(next);
      }
      path.pop();
      state.set(m, "done");
    };
    for (const m of g.keys()) if (!state.has(m)) visit(m);
    expect(cycles).toEqual([]);
  });
});
