// No error disappears in src/: every `catch` block uses what it caught (returns it, wraps it, reports
// it), rethrows, leaves a trace (traceSwallowed, main/platform/swallowed.ts), or says why the failure is
// the answer in a `// swallow-ok: <reason>` comment; so does every `.catch(() => …)` that ignores it.
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "../kit/pi-agent-dir.ts";

interface CatchBlock {
  at: string;
  binding: string | undefined;
  body: string;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) =>
    d.isDirectory() ? sourceFiles(join(dir, d.name)) : d.name.endsWith(".ts") ? [join(dir, d.name)] : [],
  );
}

/** Every `catch` clause of a file with its block (braces counted; catch blocks hold no unbalanced ones). */
function catchBlocks(text: string, file = "x.ts"): CatchBlock[] {
  const out: CatchBlock[] = [];
  for (const m of text.matchAll(/(?<![.\w])catch\s*(?:\(\s*(\w+)[^)]*\))?\s*\{/g)) {
    const open = (m.index ?? 0) + m[0].length;
    let depth = 1;
    let i = open;
    for (; i < text.length && depth > 0; i++) {
      if (text[i] === "{") depth++;
      else if (text[i] === "}") depth--;
    }
    const line = text.slice(0, m.index).split("\n").length;
    out.push({ at: `${file}:${line}`, binding: m[1], body: text.slice(open, i - 1) });
  }
  return out;
}

/** Why a block does not lose its error, or undefined when it does. */
function keeps(block: CatchBlock): string | undefined {
  if (/\/\/\s*swallow-ok:\s*\S/.test(block.body)) return "swallow-ok";
  const code = block.body.replace(/\/\/.*$/gm, "").replace(/\/\*[\s\S]*?\*\//g, "");
  if (/\btraceSwallowed\(/.test(code)) return "traced";
  if (/\bthrow\b/.test(code)) return "rethrown";
  if (block.binding && new RegExp(`\\b${block.binding}\\b`).test(code)) return "used";
  return undefined;
}

/** Promise handlers that take no parameter (`.catch(() => …)`): they cannot use what they catch. */
function unnamedHandlers(text: string, file = "x.ts"): Array<{ at: string; says: boolean }> {
  const lines = text.split("\n");
  const out: Array<{ at: string; says: boolean }> = [];
  lines.forEach((line, i) => {
    if (!/\.catch\(\s*(?:async\s*)?\(\s*\)\s*=>/.test(line)) return;
    // The reason sits on the handler's line or in a comment up to three lines above it.
    const says = lines.slice(Math.max(0, i - 3), i + 1).some((l) => /\/\/\s*swallow-ok:\s*\S/.test(l));
    out.push({ at: `${file}:${i + 1}`, says });
  });
  return out;
}

describe("caught errors in src/", () => {
  it("every catch block uses, rethrows or traces its error, or says why not", () => {
    const lost: string[] = [];
    for (const file of sourceFiles(join(REPO_ROOT, "src"))) {
      for (const block of catchBlocks(readFileSync(file, "utf8"), relative(REPO_ROOT, file))) {
        if (!keeps(block)) lost.push(block.at);
      }
    }
    expect(lost).toEqual([]);
  });

  it("every promise handler that ignores its error says why", () => {
    const silent: string[] = [];
    for (const file of sourceFiles(join(REPO_ROOT, "src"))) {
      for (const h of unnamedHandlers(readFileSync(file, "utf8"), relative(REPO_ROOT, file))) {
        if (!h.says) silent.push(h.at);
      }
    }
    expect(silent).toEqual([]);
  });

  it("the check tells a lost error from a kept one", () => {
    const verdict = (code: string) => catchBlocks(code).map(keeps);
    expect(verdict("try { a(); } catch { // fine\n }")).toEqual([undefined]);
    expect(verdict("try { a(); } catch (error) { return undefined; // error ignored\n }")).toEqual([undefined]);
    expect(verdict("try { a(); } catch { // swallow-ok: a missing file is the answer\n return false; }")).toEqual([
      "swallow-ok",
    ]);
    expect(verdict("try { a(); } catch (e) { if (x) { y(); } traceSwallowed('site', e); }")).toEqual(["traced"]);
    expect(verdict("try { a(); } catch (error) { return { error }; }")).toEqual(["used"]);
    expect(verdict("try { a(); } catch { throw new Error('no'); }")).toEqual(["rethrown"]);
    // A promise's .catch is not a catch clause: it is checked on its own.
    expect(verdict("p.catch(() => {});")).toEqual([]);
    expect(unnamedHandlers("p.catch(() => {});\nq.catch((e) => log(e));").map((h) => h.says)).toEqual([false]);
    expect(unnamedHandlers("// swallow-ok: cleanup after the error above\nawait p.close().catch(() => {});")).toEqual([
      { at: "x.ts:2", says: true },
    ]);
  });
});
