import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { DEFAULT_CONFIG } from "../../../../src/core/shared/config.ts";
import { CatalogError, derivedNamespaces, loadToolsFile } from "../../../../src/main/replay/routing-catalog.ts";

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
