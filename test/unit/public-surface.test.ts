// The package's main export is what the README documents, name for name: the values the module has at
// run time and the types its source exports, against the table under "Use as a library". The lazy
// parts (the extension, the replay) are called once to show they are the real ones.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "../kit/pi-agent-dir.ts";

const lib = await import("../../src/index.ts");
const source = readFileSync(join(REPO_ROOT, "src", "index.ts"), "utf8");

/** The rows of the README's export table under "Use as a library". */
function tableRows(): string[] {
  const readme = readFileSync(join(REPO_ROOT, "README.md"), "utf8");
  const section = readme.slice(readme.indexOf("## Use as a library"));
  const rows = section
    .slice(0, section.indexOf("\n## ", 3))
    .split("\n")
    .filter((l) => l.startsWith("| `"));
  if (rows.length === 0) throw new Error("README.md has no export table under 'Use as a library'");
  return rows;
}

/** The names the table's first column lists. */
function documented(): string[] {
  return tableRows().flatMap((row) => [...(row.split("|")[1] ?? "").matchAll(/`([^`]+)`/g)].map((m) => m[1] as string));
}

/** Every name src/index.ts exports, and which of them are types only. */
function exported(): { values: string[]; types: string[] } {
  const values: string[] = [];
  const types: string[] = [];
  for (const m of source.matchAll(/export (type )?\{([^}]*)\} from/g)) {
    for (const part of (m[2] as string).split(",").map((p) => p.trim())) {
      if (!part) continue;
      const typeOnly = m[1] !== undefined || part.startsWith("type ");
      const name = part
        .replace(/^type /, "")
        .split(/\s+as\s+/)
        .at(-1) as string;
      (typeOnly ? types : values).push(name);
    }
  }
  for (const m of source.matchAll(/export \* as (\w+) from/g)) values.push(m[1] as string);
  return { values, types };
}

describe("the package's main export", () => {
  it("exports exactly the names the README documents", () => {
    const { values, types } = exported();
    expect(Object.keys(lib).sort()).toEqual([...values].sort());
    expect(source).not.toMatch(/export \* from/);
    expect(documented().sort()).toEqual([...values, ...types].sort());
  });

  it("has no deprecated names", () => {
    expect(source).not.toMatch(/@deprecated/);
  });

  it("offers the worker tasks the README names", () => {
    const row = tableRows().find((r) => r.split("|")[1]?.includes("`tasks`")) ?? "";
    const tasks = [...row.matchAll(/`tasks\.(\w+)`/g)].map((m) => m[1] as string);
    expect(Object.keys(lib.tasks).sort()).toEqual(tasks.sort());
    expect(lib.tasks.ping()).toBe("pong");
  });

  it("its default export is the extension: it registers what the extension registers", async () => {
    const { default: extension } = await import("../../src/main/index.ts");
    const events = async (factory: (pi: never) => unknown) => {
      const on: string[] = [];
      const tools: string[] = [];
      const commands: string[] = [];
      const pi = {
        on: (event: string) => on.push(event),
        registerTool: (tool: { name: string }) => tools.push(tool.name),
        registerCommand: (name: string) => commands.push(name),
      };
      await factory(pi as never);
      return { on, tools, commands };
    };
    const direct = await events(extension);
    expect(direct.on).toContain("session_start");
    expect(await events(lib.default)).toEqual(direct);
  });

  it("its replay functions are the replay's", async () => {
    const folder = join(REPO_ROOT, "test", "fixtures", "sessions");
    const files = await lib.findSessionFiles(folder);
    expect(files.length).toBeGreaterThan(0);
    expect(files.every((f) => f.startsWith(folder) && f.endsWith(".jsonl"))).toBe(true);
    const chosen = await lib.chooseClassifier({
      configured: "local/lexical",
      agentDir: join(REPO_ROOT, "test", ".tmp", "no-agent-dir"),
      cacheDir: join(REPO_ROOT, "test", ".tmp", "no-cache"),
    });
    expect(chosen.ref).toBe("local/lexical");
  });

  it("its settings check a raw object against the schema", () => {
    const normalized = lib.normalizeConfig({ concurrency: 1000, model: "local/lexical" });
    expect(normalized.config.model).toBe("local/lexical");
    expect(normalized.config.concurrency).toBe(lib.DEFAULT_CONFIG.concurrency);
    expect(normalized.warnings.join("\n")).toMatch(/concurrency/);
    expect(Object.keys(lib.CONFIG_SCHEMA).sort()).toEqual(Object.keys(lib.DEFAULT_CONFIG).sort());
  });
});
