// The settings file: read at session start and on /guard reload; edited by /guard on|off.
//
// Reading opens the path without blocking (a FIFO never hangs Pi) and takes only a regular file of at
// most 1 MiB. The file is JSON; // and /* */ comments are allowed. Saving changes the one value in the
// text and nothing else (comments, key order, big numbers, spacing stay byte for byte), through a temp
// file renamed over the file; a symbolic link is followed and its target is the file replaced. A file
// that is read-only, not a regular file, not a JSON object, changed meanwhile, or cannot be edited
// safely (a key that appears twice) is never written: saving throws, saying why.
import { randomBytes } from "node:crypto";
import { constants } from "node:fs";
import { access, lstat, mkdir, open, readlink, realpath, rename, rm } from "node:fs/promises";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { isDeepStrictEqual } from "node:util";
import { applyEdits, modify, parseTree, stripComments } from "jsonc-parser";
import { type NormalizedConfig, normalizeConfig } from "../../core/shared/config.ts";
import { applyEnvDefaults } from "./env-defaults.ts";
import { errorCode, mebibytes, readBounded } from "./regular-file.ts";

/** A settings file larger than this is not read (it is not a settings file). */
export const MAX_SETTINGS_BYTES = 1024 * 1024;

export function agentDir(): string {
  return process.env.PI_CODING_AGENT_DIR || join(homedir(), ".pi", "agent");
}

export function settingsPath(): string {
  return process.env.PI_CONTEXT_GUARD_CONFIG || join(agentDir(), "context-guard.json");
}

export interface LoadedSettings extends NormalizedConfig {
  path: string;
  /** The file or the environment chose `settleBudgetMs` (else print mode waits for the run end whole). */
  settleBudgetChosen?: boolean;
  /** The file exists but could not be read (not a regular file, too big, no permission): why. */
  unreadable?: string;
}

const tooBig = (path: string, bytes?: number) =>
  `${path} ${bytes === undefined ? "has" : `is ${bytes} bytes,`} more than the ${mebibytes(MAX_SETTINGS_BYTES)} a settings file may have`;

type ReadResult =
  | { kind: "missing" }
  | { kind: "text"; text: string; mode: number; uid: number; gid: number }
  | { kind: "problem"; message: string };

/** The file's text, read without ever blocking and to MAX_SETTINGS_BYTES at most (regular-file.ts). */
async function readSettingsFile(path: string): Promise<ReadResult> {
  const read = await readBounded(path, MAX_SETTINGS_BYTES);
  switch (read.kind) {
    case "missing":
    case "text":
      return read;
    case "not-file":
      return {
        kind: "problem",
        message: `cannot read ${path}${read.directory ? " (EISDIR)" : ""}: it is ${read.what}, not a regular file`,
      };
    case "too-big":
      return { kind: "problem", message: tooBig(path, read.bytes) };
    case "error":
      return { kind: "problem", message: `cannot read ${path} (${read.code})` };
  }
}

const BOM = "\uFEFF";

/** JSON with comments: the comments become spaces (offsets kept, so JSON.parse's positions stay true). */
function parseText(body: string): { empty: true } | { empty: false; value: unknown } {
  const plain = stripComments(body, " ");
  if (plain.trim() === "") return { empty: true };
  return { empty: false, value: JSON.parse(plain) };
}

async function readRaw(path: string): Promise<{ raw: unknown; warning?: string; unreadable?: string }> {
  const read = await readSettingsFile(path);
  if (read.kind === "missing") return { raw: undefined };
  if (read.kind === "problem") {
    return { raw: undefined, warning: `${read.message}; using the defaults`, unreadable: read.message };
  }
  try {
    const parsed = parseText(read.text.startsWith(BOM) ? read.text.slice(1) : read.text);
    return { raw: parsed.empty ? undefined : parsed.value };
  } catch (error) {
    return { raw: undefined, warning: `${path} is not valid JSON (${(error as Error).message}); using the defaults` };
  }
}

export async function loadSettings(path = settingsPath()): Promise<LoadedSettings> {
  const { raw, warning, unreadable } = await readRaw(path);
  const base = normalizeConfig(raw);
  const normalized = applyEnvDefaults(base, raw);
  if (warning) normalized.warnings.unshift(warning);
  const chosen =
    (isObject(raw) &&
      Object.hasOwn(raw, "settleBudgetMs") &&
      !base.warnings.some((w) => w.startsWith("settleBudgetMs:"))) ||
    normalized.config.settleBudgetMs !== base.config.settleBudgetMs;
  return {
    ...normalized,
    path,
    ...(chosen ? { settleBudgetChosen: true } : {}),
    ...(unreadable ? { unreadable } : {}),
  };
}

/** A save that did not happen: the file is as it was. */
class LeftAsItIs extends Error {
  constructor(why: string) {
    super(`${why}; it was left as it is`);
    this.name = "LeftAsItIs";
  }
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

const withoutKey = (value: Record<string, unknown>, key: string) =>
  Object.fromEntries(Object.entries(value).filter(([k]) => k !== key));

/** The file the path names: itself, or the target of a symbolic link (which must exist). */
async function fileToWrite(path: string): Promise<string> {
  let info: Awaited<ReturnType<typeof lstat>>;
  try {
    info = await lstat(path);
  } catch (error) {
    if (errorCode(error) === "ENOENT") return path;
    throw new LeftAsItIs(`cannot read ${path} (${errorCode(error)})`);
  }
  if (!info.isSymbolicLink()) return path;
  try {
    return await realpath(path);
  } catch (error) {
    // swallow-ok: a link that cannot be read shows as "?" in the message.
    const to = await readlink(path).catch(() => "?");
    const code = errorCode(error);
    throw new LeftAsItIs(
      `${path} is a symbolic link to ${to}, which ${code === "ENOENT" ? "does not exist" : `cannot be resolved (${code})`}`,
    );
  }
}

/** The indentation and line ending the file already uses, for a key that has to be added. */
function formatting(body: string) {
  const eol = body.includes("\r\n") ? "\r\n" : "\n";
  const indent = /\n([ \t]+)["}]/.exec(body)?.[1] ?? "  ";
  return indent.startsWith("\t")
    ? { insertSpaces: false, tabSize: 1, eol }
    : { insertSpaces: true, tabSize: indent.length, eol };
}

/** The text with `key` set to `value` and every other byte as it was. */
function editedText(text: string, key: string, value: unknown, path: string): string {
  const bom = text.startsWith(BOM) ? BOM : "";
  const body = text.slice(bom.length);
  const fresh = `${JSON.stringify({ [key]: value }, null, 2)}\n`;
  if (body.trim() === "") return fresh;
  let before: ReturnType<typeof parseText>;
  try {
    before = parseText(body);
  } catch (error) {
    throw new LeftAsItIs(`${path} is not valid JSON (${(error as Error).message})`);
  }
  // Comments only: the object goes after them.
  if (before.empty) return `${text}${text.endsWith("\n") ? "" : "\n"}${fresh}`;
  if (!isObject(before.value)) throw new LeftAsItIs(`${path} is not a JSON object`);
  const times = parseTree(body)?.children?.filter((p) => p.children?.[0]?.value === key).length ?? 0;
  if (times > 1) throw new LeftAsItIs(`${path} has "${key}" ${times} times (keep one, then retry)`);
  const next = applyEdits(body, modify(body, [key], value, { formattingOptions: formatting(body) }));
  // The edit is checked: the key has the new value and everything else parses exactly as before.
  let after: ReturnType<typeof parseText> | undefined;
  try {
    after = parseText(next);
  } catch {
    // swallow-ok: A body that no longer parses is what the check below refuses.
    after = undefined;
  }
  if (
    after?.empty !== false ||
    !isObject(after.value) ||
    !Object.hasOwn(after.value, key) ||
    !isDeepStrictEqual(after.value[key], value) ||
    !isDeepStrictEqual(withoutKey(after.value, key), withoutKey(before.value, key))
  ) {
    throw new LeftAsItIs(`${path} could not be edited safely`);
  }
  return `${bom}${next}`;
}

/** Writable for this process: a file without any write bit counts as read-only even for root. */
async function writable(path: string, mode: number): Promise<boolean> {
  if ((mode & 0o222) === 0) return false;
  try {
    await access(path, constants.W_OK);
    return true;
  } catch {
    // swallow-ok: access() failing is the answer: not writable.
    return false;
  }
}

export interface SavedSetting {
  /** The file written: the path, or the target of the symbolic link at the path. */
  file: string;
  /** False when the file already said so and was not touched. */
  changed: boolean;
}

/**
 * Set one key, keeping every other byte of the file, via a temp file next to it renamed over it. A new
 * file, or a regular file replaced, is 0600; the target of a symbolic link keeps its mode. Throws (and
 * writes nothing) when the file cannot be read, is read-only, is not a JSON object, has the key twice,
 * or changed while it was being saved.
 */
export async function saveSetting(key: string, value: unknown, path = settingsPath()): Promise<SavedSetting> {
  const file = await fileToWrite(path);
  const current = await readSettingsFile(file);
  if (current.kind === "problem") throw new LeftAsItIs(current.message);
  const text = current.kind === "text" ? current.text : "";
  if (current.kind === "text" && !(await writable(file, current.mode))) {
    throw new LeftAsItIs(`${path} is read-only (mode ${(current.mode & 0o777).toString(8).padStart(4, "0")})`);
  }
  const next = editedText(text, key, value, path);
  if (current.kind === "text" && next === text) return { file, changed: false };
  const mode = current.kind === "text" && file !== path ? current.mode & 0o777 : 0o600;
  const tmp = `${file}.${randomBytes(4).toString("hex")}.tmp`;
  try {
    await mkdir(dirname(file), { recursive: true });
    const handle = await open(tmp, "wx", 0o600);
    try {
      await handle.writeFile(next, "utf8");
      await handle.chmod(mode);
      // swallow-ok: The replacement keeps the file's owner where this process may set it (root, or the owner itself).
      if (current.kind === "text") await handle.chown(current.uid, current.gid).catch(() => undefined);
      await handle.sync();
    } finally {
      await handle.close();
    }
    // Someone else's edit since the read wins: theirs is the newer intent.
    const again = await readSettingsFile(file);
    const same = current.kind === "text" ? again.kind === "text" && again.text === text : again.kind === "missing";
    if (!same) throw new LeftAsItIs(`${path} changed while it was being saved`);
    await rename(tmp, file);
  } catch (error) {
    await rm(tmp, { force: true });
    if (error instanceof LeftAsItIs) throw error;
    throw new LeftAsItIs(`cannot write ${file} (${errorCode(error)})`);
  }
  return { file, changed: true };
}
