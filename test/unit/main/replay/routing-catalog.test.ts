import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, symlink, truncate, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { DEFAULT_CONFIG } from "../../../../src/core/shared/config.ts";
import {
  CatalogError,
  derivedNamespaces,
  loadRoutingCatalog,
  loadToolsFile,
  MAX_TOOLS_BYTES,
  rejectedText,
} from "../../../../src/main/replay/routing-catalog.ts";

const config = { ...DEFAULT_CONFIG };

describe("the routing catalog's tools file", () => {
  it("groups tools by prefix when no namespaces are given; core tools and singletons stay out", () => {
    const tools = ["browser_open", "browser_click", "mcp__github__search", "mcp__github__comment", "web_fetch", "read"];
    expect(
      derivedNamespaces(
        tools.map((name) => ({ name })),
        config.coreTools,
      ),
    ).toEqual({
      browser: { prefix: "browser_" },
      github: { prefix: "mcp__github__" },
    });
  });

  it("takes the namespaces the file gives", async () => {
    const dir = await mkdtemp(join(tmpdir(), "cg-tools-"));
    const path = join(dir, "tools.json");
    await writeFile(
      path,
      JSON.stringify({ tools: [{ name: "jira_search" }], namespaces: { jira: { prefix: "jira_" } } }),
    );
    const { tools, namespaces } = await loadToolsFile(path, config);
    expect(tools.map((t) => t.name)).toEqual(["jira_search"]);
    expect(namespaces).toEqual({ jira: { prefix: "jira_" } });
  });

  it("a file that is not a tool list is a clear error naming the file and the field", async () => {
    const dir = await mkdtemp(join(tmpdir(), "cg-tools-"));
    const path = join(dir, "tools.json");
    await writeFile(path, JSON.stringify([{ description: "no name" }]));
    await expect(loadToolsFile(path, config)).rejects.toThrow(CatalogError);
    await expect(loadToolsFile(path, config)).rejects.toThrow(/tools\.json: not a list of tools.*name/);
    await writeFile(path, "{ not json");
    await expect(loadToolsFile(path, config)).rejects.toThrow(/--tools .*tools\.json/);
  });
});

describe("a --tools path that is not a tools file (issue 44)", () => {
  it("a FIFO, a folder, a device or a huge file: an error naming the path and what it is, never a hang", async () => {
    const dir = await mkdtemp(join(tmpdir(), "cg-tools-kind-"));
    const fifo = join(dir, "tools.fifo");
    execFileSync("mkfifo", [fifo]);
    const folder = join(dir, "a-folder");
    await mkdir(folder);
    // Sparse: its size is past the cap without writing it.
    const huge = join(dir, "huge.json");
    await writeFile(huge, "");
    await truncate(huge, MAX_TOOLS_BYTES + 1);
    const cases: Array<[string, RegExp]> = [
      [fifo, /: it is a FIFO \(named pipe\), not a regular file$/],
      [folder, /: it is a directory, not a regular file$/],
      ["/dev/zero", /: it is a character device, not a regular file$/],
      [huge, new RegExp(`: it is ${MAX_TOOLS_BYTES + 1} bytes, more than the 16 MiB a tools file may have$`)],
      [join(dir, "missing.json"), /: no such file$/],
    ];
    for (const [path, why] of cases) {
      const error = await loadToolsFile(path, config).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(CatalogError);
      expect((error as Error).message.startsWith(`--tools ${path}: `)).toBe(true);
      expect((error as Error).message).toMatch(why);
    }
  });
});

describe("a --skills folder with symlinks (issue 44)", () => {
  const skill = (name: string) => `---\nname: ${name}\ndescription: The ${name} skill.\n---\nBody of ${name}.\n`;
  const catalog = (skillsDir: string) =>
    loadRoutingCatalog({ skillsDir, agentDir: join(skillsDir, "no-agent"), cwd: skillsDir, config });

  async function twoSkills(): Promise<string> {
    const dir = await mkdtemp(join(tmpdir(), "cg-skills-loop-"));
    for (const name of ["alpha", "beta"]) {
      await mkdir(join(dir, "group", name), { recursive: true });
      await writeFile(join(dir, "group", name, "SKILL.md"), skill(name));
    }
    return dir;
  }

  it("a link back to a parent: each skill once, by real path", async () => {
    const dir = await twoSkills();
    await symlink("..", join(dir, "group", "loop"));
    const skills = (await catalog(dir))?.skills ?? [];
    expect(skills.map((s) => s.name).sort()).toEqual(["alpha", "beta"]);
  });

  it("two loops (a walk without memory is exponential) and a second link to one skill: still two", async () => {
    const dir = await twoSkills();
    await symlink("..", join(dir, "group", "up"));
    await symlink(".", join(dir, "group", "here"));
    await symlink(join(dir, "group", "alpha"), join(dir, "alpha-again"));
    await mkdir(join(dir, "gamma"));
    await symlink(join(dir, "group", "beta", "SKILL.md"), join(dir, "gamma", "SKILL.md"));
    const skills = (await catalog(dir))?.skills ?? [];
    expect(skills.map((s) => s.name).sort()).toEqual(["alpha", "beta"]);
  });

  it("a folder without links loads as Pi loads it; a path that is not a folder is named", async () => {
    const dir = await twoSkills();
    await writeFile(join(dir, ".gitignore"), "group/beta/\n");
    // Pi's own loader runs where no folder repeats: its ignore files hold.
    expect((await catalog(dir))?.skills.map((s) => s.name)).toEqual(["alpha"]);
    const fifo = join(dir, "skills.fifo");
    execFileSync("mkfifo", [fifo]);
    await expect(catalog(fifo)).rejects.toThrow(`--skills ${fifo}: it is a FIFO (named pipe), not a folder`);
    await expect(catalog("/dev/zero")).rejects.toThrow("--skills /dev/zero: it is a character device, not a folder");
    await expect(catalog(join(dir, "nowhere"))).rejects.toThrow(/nowhere: no such folder/);
  });

  it("names the skill files Pi refuses, with its reason (issue 42)", async () => {
    const dir = await twoSkills();
    // An unquoted ": " in the description: YAML Pi cannot parse.
    await mkdir(join(dir, "group", "gamma"), { recursive: true });
    await writeFile(join(dir, "group", "gamma", "SKILL.md"), "---\nname: gamma\ndescription: a: b: c\n---\nBody.\n");
    const loaded = await catalog(dir);
    expect(loaded?.skills.map((s) => s.name).sort()).toEqual(["alpha", "beta"]);
    expect(loaded?.rejected.map((r) => r.path)).toEqual([join(dir, "group", "gamma", "SKILL.md")]);
    expect(loaded?.rejected[0]?.message.length).toBeGreaterThan(0);
    expect(rejectedText(loaded?.rejected ?? [])).toContain("gamma/SKILL.md: ");
  });
});
