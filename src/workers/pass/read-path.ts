// The file a `read` call named, found exactly as Pi's read tool finds it (its path-utils `resolveReadPath`
// and utils/paths `resolvePath`, which the package does not export): unicode spaces become plain spaces,
// a leading `@` is dropped, `~` is the home folder, a `file://` URL is its path, and a relative path is
// taken from the working directory; a name that does not exist is tried in the variants macOS screenshots
// use. A stale-read check that resolves a path otherwise compares the read with another file (or none),
// and so stubs a read whose file never changed. test/unit/workers/pass/read-path.test.ts compares this
// with Pi's own on each case.
import { accessSync, constants } from "node:fs";
import { homedir } from "node:os";
import { isAbsolute, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const UNICODE_SPACES = /[\u00A0\u2000-\u200A\u202F\u205F\u3000]/g;
const NARROW_NO_BREAK_SPACE = "\u202F";

function normalize(input: string, forRead: boolean): string {
  let p = input;
  if (forRead) {
    p = p.replace(UNICODE_SPACES, " ");
    if (p.startsWith("@")) p = p.slice(1);
  }
  const home = homedir();
  if (p === "~") return home;
  if (p.startsWith("~/")) return join(home, p.slice(2));
  if (/^file:\/\//.test(p)) return fileURLToPath(p);
  return p;
}

/** The absolute path before the variants are tried; throws on a `file://` URL Pi rejects too. */
function resolveToCwd(path: string, cwd: string): string {
  const p = normalize(path, true);
  return isAbsolute(p) ? resolve(p) : resolve(normalize(cwd, false), p);
}

function exists(path: string): boolean {
  try {
    accessSync(path, constants.F_OK);
    return true;
  } catch {
    // swallow-ok: access() failing is the answer: nothing is there.
    return false;
  }
}

/** The file Pi's read tool opens for `path` in `cwd`; undefined when Pi could not have read it either. */
export function resolveReadPath(
  path: string,
  cwd: string,
  fileExists: (p: string) => boolean = exists,
): string | undefined {
  let resolved: string;
  try {
    resolved = resolveToCwd(path, cwd);
  } catch {
    // swallow-ok: A path Pi's resolution rejects cannot be checked: the read is not judged stale.
    return undefined;
  }
  if (fileExists(resolved)) return resolved;
  const amPm = resolved.replace(/ (AM|PM)\./gi, `${NARROW_NO_BREAK_SPACE}$1.`);
  if (amPm !== resolved && fileExists(amPm)) return amPm;
  const nfd = resolved.normalize("NFD");
  if (nfd !== resolved && fileExists(nfd)) return nfd;
  const curly = resolved.replace(/'/g, "\u2019");
  if (curly !== resolved && fileExists(curly)) return curly;
  const nfdCurly = nfd.replace(/'/g, "\u2019");
  if (nfdCurly !== resolved && fileExists(nfdCurly)) return nfdCurly;
  return resolved;
}
