// The settings file: read at session start and on /guard reload; written atomically by /guard on|off,
// keeping every key the user put there.
import { randomBytes } from "node:crypto";
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { type NormalizedConfig, normalizeConfig } from "../core/config.ts";

export function agentDir(): string {
  return process.env.PI_CODING_AGENT_DIR || join(homedir(), ".pi", "agent");
}

export function settingsPath(): string {
  return process.env.PI_CONTEXT_GUARD_CONFIG || join(agentDir(), "context-guard.json");
}

export interface LoadedSettings extends NormalizedConfig {
  path: string;
}

async function readRaw(path: string): Promise<{ raw: unknown; warning?: string }> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return { raw: undefined };
    return { raw: undefined, warning: `cannot read ${path} (${code ?? String(error)}); using the defaults` };
  }
  if (text.trim() === "") return { raw: undefined };
  try {
    return { raw: JSON.parse(text) };
  } catch (error) {
    return { raw: undefined, warning: `${path} is not valid JSON (${(error as Error).message}); using the defaults` };
  }
}

export async function loadSettings(path = settingsPath()): Promise<LoadedSettings> {
  const { raw, warning } = await readRaw(path);
  const normalized = normalizeConfig(raw);
  if (warning) normalized.warnings.unshift(warning);
  return { ...normalized, path };
}

/**
 * Set one key, keeping the others (unknown ones included), via a temp file and rename. A file that
 * cannot be read or is not a JSON object is never overwritten: it may be the user's work in progress.
 */
export async function saveSetting(key: string, value: unknown, path = settingsPath()): Promise<void> {
  const { raw, warning } = await readRaw(path);
  if (warning) throw new Error(`${warning.replace(/; using the defaults$/, "")}; it was left as it is`);
  if (raw !== undefined && (raw === null || typeof raw !== "object" || Array.isArray(raw))) {
    throw new Error(`${path} is not a JSON object; it was left as it is`);
  }
  const next = { ...(raw as Record<string, unknown> | undefined), [key]: value };
  await mkdir(dirname(path), { recursive: true });
  const tmp = `${path}.${randomBytes(4).toString("hex")}.tmp`;
  try {
    await writeFile(tmp, `${JSON.stringify(next, null, 2)}\n`, { mode: 0o600 });
    await rename(tmp, path);
  } catch (error) {
    await rm(tmp, { force: true });
    throw error;
  }
}
