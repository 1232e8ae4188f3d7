// The skills of a `--skills` folder, as Pi would load them, without following a symlink loop. Pi's
// loadSkillsFromDir follows every symlinked folder with no memory of where it has been: a link back to
// a parent is walked until the path is too long for the kernel (each skill counted dozens of times, and
// two such links make the walk exponential). The folder is first walked here by real path, each folder
// once, with Pi's discovery rules: a folder holding SKILL.md is a skill and is not entered further; the
// top folder's other .md files are candidates; names starting with "." and node_modules are skipped.
// Where no folder is reached twice, Pi's own loader runs (its ignore files are honoured); otherwise Pi
// parses the files found here. Either way each skill file counts once, by real path.
import { readdir, realpath, stat } from "node:fs/promises";
import { join } from "node:path";
import type { Skill } from "@earendil-works/pi-coding-agent";
import { errorCode, fileKind } from "../platform/regular-file.ts";

export class SkillFolderError extends Error {
  override name = "SkillFolderError";
}

export interface SkillFolderWalk {
  /** Candidate skill files, each once by real path, in Pi's order. */
  files: string[];
  /** Some folder was reached twice (a loop, or two links to one folder): Pi's walk would repeat it. */
  repeated: boolean;
}

/** What an entry is, following a symlink (undefined: a broken link, or gone meanwhile). */
async function kindOf(full: string, entry: { isDirectory(): boolean; isFile(): boolean; isSymbolicLink(): boolean }) {
  if (!entry.isSymbolicLink()) return { directory: entry.isDirectory(), file: entry.isFile() };
  // swallow-ok: a link that leads nowhere is neither a file nor a folder.
  const info = await stat(full).catch(() => undefined);
  return info ? { directory: info.isDirectory(), file: info.isFile() } : undefined;
}

/** Walks a skills folder, each real folder once. Throws SkillFolderError when `dir` is not a folder. */
export async function walkSkillFolder(dir: string): Promise<SkillFolderWalk> {
  let top: Awaited<ReturnType<typeof stat>>;
  try {
    top = await stat(dir);
  } catch (error) {
    throw new SkillFolderError(
      errorCode(error) === "ENOENT" ? "no such folder" : `cannot read it (${errorCode(error)})`,
    );
  }
  if (!top.isDirectory()) throw new SkillFolderError(`it is ${top.isFile() ? "a file" : fileKind(top)}, not a folder`);
  const seenFolders = new Set<string>();
  const seenFiles = new Set<string>();
  const files: string[] = [];
  let repeated = false;
  const add = async (file: string) => {
    // swallow-ok: a path that cannot be resolved counts as itself.
    const real = await realpath(file).catch(() => file);
    if (seenFiles.has(real)) return;
    seenFiles.add(real);
    files.push(file);
  };
  const walk = async (folder: string, isTop: boolean): Promise<void> => {
    // swallow-ok: a folder that cannot be resolved is not walked.
    const real = await realpath(folder).catch(() => undefined);
    if (real === undefined) return;
    if (seenFolders.has(real)) {
      repeated = true;
      return;
    }
    seenFolders.add(real);
    // swallow-ok: a folder that cannot be read holds no skills.
    const entries = await readdir(folder, { withFileTypes: true }).catch(() => []);
    const skillFile = entries.find((e) => e.name === "SKILL.md");
    if (skillFile && (await kindOf(join(folder, skillFile.name), skillFile))?.file) {
      await add(join(folder, skillFile.name));
      return;
    }
    for (const entry of entries) {
      if (entry.name.startsWith(".") || entry.name === "node_modules") continue;
      const full = join(folder, entry.name);
      const kind = await kindOf(full, entry);
      if (kind?.directory) await walk(full, false);
      else if (kind?.file && isTop && entry.name.endsWith(".md")) await add(full);
    }
  };
  await walk(dir, true);
  return { files, repeated };
}

/**
 * The skills of a `--skills` folder, each skill file once: Pi's loader on a folder it walks once, Pi's
 * parser on the files found here when its walk would repeat a folder.
 */
export async function loadSkillFolder(
  dir: string,
  cwd: string,
  agentDir: string,
): Promise<{ skills: Skill[]; rejected: RejectedSkill[] }> {
  const { loadSkills, loadSkillsFromDir } = await import("@earendil-works/pi-coding-agent");
  const walked = await walkSkillFolder(dir);
  const loaded = walked.repeated
    ? loadSkills({ cwd, agentDir, skillPaths: walked.files, includeDefaults: false })
    : loadSkillsFromDir({ dir, source: "cli" });
  const skills = loaded.skills;
  // What Pi's loader refused, with its reason (a front matter it cannot parse, a missing description).
  const rejected = loaded.diagnostics
    .filter((d) => d.type !== "collision")
    .map((d) => ({ path: d.path ?? dir, message: d.message }));
  // Two SKILL.md links to one file in different folders: one skill.
  const seen = new Set<string>();
  const out: Skill[] = [];
  for (const skill of skills) {
    // swallow-ok: a path that cannot be resolved counts as itself.
    const real = await realpath(skill.filePath).catch(() => skill.filePath);
    if (seen.has(real)) continue;
    seen.add(real);
    out.push(skill);
  }
  return { skills: out, rejected };
}

/** A skill file Pi's loader did not load, and why. */
export interface RejectedSkill {
  path: string;
  message: string;
}
