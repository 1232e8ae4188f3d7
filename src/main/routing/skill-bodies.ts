// SKILL.md bodies as the classifier and the loaded-skills section need them: read once, again only when
// the file changed, and missing (never an error) when it cannot be read.
import { readFile, stat } from "node:fs/promises";
import { stripFrontmatter } from "../../core/routing/routing.ts";
import { traceSwallowed } from "../platform/swallowed.ts";
import type { SkillBody, SkillLike } from "./routing-shapes.ts";

export class SkillBodies {
  #cache = new Map<string, { mtimeMs: number; body: string }>();

  async read(skill: SkillLike): Promise<SkillBody | undefined> {
    try {
      const info = await stat(skill.filePath);
      const cached = this.#cache.get(skill.filePath);
      if (cached && cached.mtimeMs === info.mtimeMs) {
        return { body: cached.body, filePath: skill.filePath, baseDir: skill.baseDir };
      }
      const body = stripFrontmatter(await readFile(skill.filePath, "utf8"));
      this.#cache.set(skill.filePath, { mtimeMs: info.mtimeMs, body });
      return { body, filePath: skill.filePath, baseDir: skill.baseDir };
    } catch (error) {
      // A skill file that is gone or unreadable is left out of routing; the skill itself still loads in Pi.
      traceSwallowed("routing.skill-body", error);
      return undefined;
    }
  }
}
