// The catalog the replay routes over: skills (a folder given with --skills, each skill once however
// symlinks reach it, else the user's installed skills, found the way Pi finds them) and tools with their
// namespaces (a JSON file given with --tools, read only when it is a regular file of bounded size).
import { resolve } from "node:path";
import { z } from "zod";
import type { NamespaceConfig } from "../../core/routing/surfacing.ts";
import type { GuardConfig } from "../../core/shared/config.ts";
import { readBounded, readProblem } from "../platform/regular-file.ts";
import type { SkillLike, ToolLike } from "../routing/routing-shapes.ts";
import { loadSkillFolder, type RejectedSkill, SkillFolderError } from "./skill-folder.ts";

export interface RoutingCatalog {
  skills: SkillLike[];
  tools: ToolLike[];
  namespaces: Record<string, NamespaceConfig>;
  source: string;
  /** Skill files of `--skills` that Pi's loader refused, with its reason. */
  rejected: RejectedSkill[];
}

const tool = z.object({
  name: z.string().min(1),
  description: z.string().optional(),
  parameters: z.unknown().optional(),
  input_schema: z.unknown().optional(),
});
const namespace = z
  .object({
    prefix: z.string().min(1).optional(),
    tools: z.array(z.string().min(1)).optional(),
    description: z.string().optional(),
  })
  .strict();
const toolList = z.array(tool);
const toolsObject = z.object({ tools: toolList, namespaces: z.record(z.string().min(1), namespace).optional() });

export class CatalogError extends Error {
  override name = "CatalogError";
}

/** A tools file larger than this is not one: a thousand tools with their JSON schemas take a few MiB. */
export const MAX_TOOLS_BYTES = 16 * 1024 * 1024;

/**
 * Namespaces by name prefix when none are configured: tools sharing the part before their first `_` (or
 * an MCP `server__` prefix), two or more to a group. Core tools belong to none.
 */
export function derivedNamespaces(
  tools: readonly ToolLike[],
  core: readonly string[],
): Record<string, NamespaceConfig> {
  const groups = new Map<string, number>();
  const prefixOf = (name: string) => /^(mcp__[^_]+(?:_[^_]+)*?__|[^_]+_)/.exec(name)?.[1];
  for (const t of tools) {
    if (core.includes(t.name)) continue;
    const p = prefixOf(t.name);
    if (p) groups.set(p, (groups.get(p) ?? 0) + 1);
  }
  const out: Record<string, NamespaceConfig> = {};
  for (const [prefix, n] of groups) {
    if (n < 2) continue;
    const name = prefix
      .replace(/^mcp__/, "")
      .replace(/_+$/, "")
      .replace(/[^a-zA-Z0-9-]/g, "-");
    out[name] = { prefix };
  }
  return out;
}

export async function loadToolsFile(
  path: string,
  config: GuardConfig,
): Promise<{ tools: ToolLike[]; namespaces: Record<string, NamespaceConfig> }> {
  // A FIFO, a device or a folder would hang or fail obscurely in a plain read: named and refused.
  const read = await readBounded(path, MAX_TOOLS_BYTES);
  if (read.kind !== "text")
    throw new CatalogError(`--tools ${path}: ${readProblem(read, MAX_TOOLS_BYTES, "a tools file")}`);
  let raw: unknown;
  try {
    raw = JSON.parse(read.text);
  } catch (error) {
    throw new CatalogError(`--tools ${path}: ${(error as Error).message}`);
  }
  // A list or an object: each checked alone, so the error names the field that is wrong.
  const parsed = Array.isArray(raw) ? toolList.safeParse(raw) : toolsObject.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new CatalogError(
      `--tools ${path}: not a list of tools nor {tools, namespaces} (${issue?.path.join(".") || "top"}: ${issue?.message})`,
    );
  }
  const list = Array.isArray(parsed.data) ? parsed.data : parsed.data.tools;
  const tools = list.map((t) => ({
    name: t.name,
    ...(t.description ? { description: t.description } : {}),
    parameters: t.parameters ?? t.input_schema ?? { type: "object", properties: {} },
  }));
  const given = Array.isArray(parsed.data) ? undefined : parsed.data.namespaces;
  const namespaces =
    given ??
    (Object.keys(config.toolNamespaces).length > 0
      ? config.toolNamespaces
      : derivedNamespaces(tools, config.coreTools));
  return { tools, namespaces };
}

/** The catalog for `--skills` and `--tools`; the user's installed skills when no folder is given. */
export async function loadRoutingCatalog(input: {
  skillsDir?: string;
  toolsFile?: string;
  agentDir: string;
  cwd: string;
  config: GuardConfig;
}): Promise<RoutingCatalog | undefined> {
  const { loadSkills } = await import("@earendil-works/pi-coding-agent");
  let skills: SkillLike[];
  let rejected: RejectedSkill[] = [];
  const sources: string[] = [];
  if (input.skillsDir !== undefined) {
    try {
      ({ skills, rejected } = await loadSkillFolder(resolve(input.skillsDir), input.cwd, input.agentDir));
    } catch (error) {
      if (error instanceof SkillFolderError) throw new CatalogError(`--skills ${input.skillsDir}: ${error.message}`);
      throw error;
    }
    if (skills.length === 0 && rejected.length > 0)
      throw new CatalogError(`--skills ${input.skillsDir}: Pi loaded none of its skills (${rejectedText(rejected)})`);
    if (skills.length === 0) throw new CatalogError(`--skills ${input.skillsDir}: no SKILL.md found`);
    sources.push(`--skills ${input.skillsDir}`);
  } else {
    skills = loadSkills({ cwd: input.cwd, agentDir: input.agentDir, skillPaths: [], includeDefaults: true }).skills;
    if (skills.length > 0) sources.push("installed skills");
  }
  let tools: ToolLike[] = [];
  let namespaces: Record<string, NamespaceConfig> = input.config.toolNamespaces;
  if (input.toolsFile !== undefined) {
    ({ tools, namespaces } = await loadToolsFile(input.toolsFile, input.config));
    sources.push(`--tools ${input.toolsFile}`);
  }
  if (skills.length === 0 && tools.length === 0) return undefined;
  return { skills, tools, namespaces, source: sources.join(", "), rejected };
}

/** The refused skill files, for a line of text: each path with Pi's reason, the first few only. */
export function rejectedText(rejected: readonly RejectedSkill[], shown = 5): string {
  const list = rejected.slice(0, shown).map((r) => `${r.path}: ${r.message}`);
  if (rejected.length > shown) list.push(`${rejected.length - shown} more`);
  return list.join("; ");
}
